/** Sandbox (test-mode) rows of the request operations: generated, never stored. */
import type { RequestData } from './present.ts';

/** The one generated row of the sandbox requests list: a pending create request (fixed, so it can be searched and managed). */
export const SANDBOX_REQUEST_ID = 'REQ-318274';

export function sandboxRequest(now: Date): RequestData {
  return {
    request_id: SANDBOX_REQUEST_ID,
    request_type: 'create',
    request_status: 'pending',
    source: 'api',
    service_number: null,
    current_plan: null,
    requested_plan: 'Basic VPS',
    hostname: 'test-server.example.com',
    customer_email: 'test.customer@example.com',
    reason: null,
    cancel_when: null,
    denial_reason: null,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    decided_at: null,
  };
}

export interface RequestListFilters {
  status?: string | undefined;
  type?: string | undefined;
  source?: string | undefined;
  /** `YYYY-MM-DD`: created on that UTC day. */
  date?: string | undefined;
  search?: string | undefined;
}

export function requestMatches(row: RequestData, filters: RequestListFilters): boolean {
  if (filters.status !== undefined && row.request_status !== filters.status) return false;
  if (filters.type !== undefined && row.request_type !== filters.type) return false;
  if (filters.source !== undefined && row.source !== filters.source) return false;
  if (filters.date !== undefined && row.created_at.slice(0, 10) !== filters.date) return false;
  if (filters.search !== undefined) {
    const needle = filters.search.toLowerCase();
    const haystack = [
      row.request_id,
      row.hostname ?? '',
      row.customer_email ?? '',
      row.current_plan ?? '',
      row.requested_plan ?? '',
      row.reason ?? '',
      row.service_number === null ? '' : String(row.service_number),
    ];
    if (!haystack.some((h) => h.toLowerCase().includes(needle))) return false;
  }
  return true;
}
