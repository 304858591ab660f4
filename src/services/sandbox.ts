/**
 * Sandbox (test-mode) answers of the service operations. Nothing here reads or writes a business
 * record: every value is generated, and nothing generated is stored, so it never shows up later.
 */
import type { ServiceCredentials, ServiceData } from './present.ts';

export const SANDBOX_MARKERS = { mode: 'test', simulated: true } as const;
export type Sandboxed<T> = T & typeof SANDBOX_MARKERS;

export const sandboxed = <T extends object>(data: T): Sandboxed<T> => ({ ...data, ...SANDBOX_MARKERS });

/** The number of the one generated row of the sandbox services list (fixed, so it can be searched). */
export const SANDBOX_SERVICE_NUMBER = 731845206;
export const SANDBOX_CREDENTIALS: ServiceCredentials = { username: 'root', password: 'Test-Passw0rd-Sandbox' };
/** Known simulated plans (spec): the current plan of an upgrade and of a downgrade. */
export const SANDBOX_UPGRADE_FROM = 'Basic VPS';
export const SANDBOX_DOWNGRADE_FROM = 'Professional VPS';

/** The generated sample service: created and last modified "now" (the time of the request). */
export function sandboxService(serviceNumber: number, now: Date, credentials?: ServiceCredentials): ServiceData {
  const data: ServiceData = {
    service_number: serviceNumber,
    status: 'active',
    plan: 'Standard VPS',
    hostname: 'test-server.example.com',
    customer_email: 'test.customer@example.com',
    customer_name: 'Test Customer',
    billing_cycle: 'monthly',
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    cancel_at: null,
    cancelled_at: null,
  };
  if (credentials) data.credentials = credentials;
  return data;
}

export interface ServiceListFilters {
  status?: string | undefined;
  search?: string | undefined;
  modifiedSince?: Date | undefined;
}

/** Does a service (live row already presented, or the sandbox row) match the list filters? */
export function serviceMatches(row: ServiceData, filters: ServiceListFilters): boolean {
  if (filters.status !== undefined && row.status !== filters.status) return false;
  if (filters.modifiedSince !== undefined && Date.parse(row.updated_at) < filters.modifiedSince.getTime()) return false;
  if (filters.search !== undefined) {
    const needle = filters.search.toLowerCase();
    const haystack = [row.hostname, row.customer_email, row.customer_name ?? '', String(row.service_number)];
    if (!haystack.some((h) => h.toLowerCase().includes(needle))) return false;
  }
  return true;
}

/** A page of the sandbox list: the one generated row when it matches and `offset` is 0. */
export function sandboxPage<T>(row: T, matches: boolean, limit: number, offset: number) {
  const total = matches ? 1 : 0;
  const data = matches && offset === 0 && limit >= 1 ? [row] : [];
  return { data, pagination: { total, limit, offset, has_more: offset + data.length < total } };
}
