/**
 * Nothing generated here is stored, so it never shows up later; a simulated change still writes the
 * events its live twin writes, in test mode (src/events/simulated.ts).
 */
import { recordSimulatedEvents, simulatedCancellation } from '../events/simulated.ts';
import { previousAttributes } from '../events/previous-attributes.ts';
import type { Caller } from '../shared/caller.ts';
import type { ConflictError } from '../shared/errors.ts';
import { pageOf, type Page, type PageWindow } from '../shared/page.ts';
import { formatRequestId, randomSandboxRequestNumber, randomServiceNumber, type SandboxRequestKind } from '../shared/ids.ts';
import type { RequestData } from './change-requests.ts';
import { generatePassword } from './generate.ts';
import { requirePlan, requireTierChange } from './plans.ts';
import type { ServiceCredentials, ServiceData } from './present.ts';
import { serviceAlreadyCancelled, serviceInStatus, serviceNotFound } from './store.ts';
import type { CreateOutcome, NewService, PasswordChange, ServiceDeps, ServiceUseCases } from './use-cases.ts';

export const SANDBOX_MARKERS = { mode: 'test', simulated: true } as const;
export type Sandboxed<T> = T & typeof SANDBOX_MARKERS;

export const sandboxed = <T extends object>(data: T): Sandboxed<T> => ({ ...data, ...SANDBOX_MARKERS });

/** The number of the one generated row of the sandbox services list (fixed, so it can be searched). */
export const SANDBOX_SERVICE_NUMBER = 731845206;
export const SANDBOX_CREDENTIALS: ServiceCredentials = { username: 'root', password: 'Test-Passw0rd-Sandbox' };
/** Known simulated plans (openapi.yaml): the current plan of an upgrade and of a downgrade. */
export const SANDBOX_UPGRADE_FROM = 'Basic VPS';
export const SANDBOX_DOWNGRADE_FROM = 'Professional VPS';

/** The generated sample service: created and last modified "now" (the time of the request). */
export function sandboxService(serviceNumber: number, now: Date, credentials?: ServiceCredentials): ServiceData {
  const data: ServiceData = {
    object: 'service',
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

/**
 * A page of the sandbox list: the one generated row when it matches and `offset` is 0. A cursor
 * may name any row, as a sandbox detail echoes any number; the generated row, made now, is the
 * newest, so nothing follows a cursor and it alone precedes any cursor but itself (`key`).
 */
export function sandboxPage<T, K>(row: T, matches: boolean, window: PageWindow<K>, key: K): Page<T> {
  const total = matches ? 1 : 0;
  if (window.startingAfter !== undefined) return pageOf([], total, window.limit, total);
  if (window.endingBefore !== undefined) return pageOf(matches && window.endingBefore !== key ? [row] : [], total, window.limit, 0);
  return pageOf(matches && window.offset === 0 && window.limit >= 1 ? [row] : [], total, window.limit, window.offset);
}

type RequestFields = Partial<Omit<RequestData, 'object'>> & Pick<RequestData, 'request_id' | 'request_type' | 'request_status'>;

/** A generated request row, shaped like a live one: what `fields` does not say is empty, made "now". */
export function sandboxRequestRow(fields: RequestFields, now = new Date()): RequestData {
  // Keys in the order of a live answer; the rest of `fields` then fills in its values.
  const { request_id, request_type, request_status, ...rest } = fields;
  return {
    object: 'service_request',
    request_id,
    request_type,
    request_status,
    source: 'api',
    service_number: null,
    current_plan: null,
    requested_plan: null,
    hostname: null,
    customer_email: null,
    reason: null,
    cancel_when: null,
    denial_reason: null,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    decided_at: null,
    ...rest,
  };
}

/** The kind of request a sandbox request id tells (src/shared/ids.ts), so that its approval answers as the live one would. */
export function kindOfRequest(type: RequestData['request_type'], when: RequestData['cancel_when']): SandboxRequestKind {
  if (type !== 'cancel') return type;
  return when === 'end_of_billing_period' ? 'cancel_end_of_billing_period' : 'cancel_immediate';
}

/** A generated request answered to a change, `REQ-` plus six random digits, the last telling its kind; never stored. */
function sandboxRequest(caller: Caller, fields: Omit<RequestFields, 'request_id' | 'request_status'>): RequestData {
  return sandboxed(
    sandboxRequestRow({
      request_id: formatRequestId(randomSandboxRequestNumber(kindOfRequest(fields.request_type, fields.cancel_when ?? null))),
      request_status: caller.providerReview ? 'provider_review' : 'pending',
      ...fields,
    }),
  );
}

/** What the sandbox's service use cases need: the plan catalogue, and the database for their events only. */
export type SandboxServiceDeps = Pick<ServiceDeps, 'catalogue' | 'prisma'>;

/** A simulated request's `request.created` event, written before it is answered. */
async function requested(deps: SandboxServiceDeps, caller: Caller, request: RequestData): Promise<RequestData> {
  await recordSimulatedEvents(deps.prisma, caller, { type: 'request', id: request.request_id }, [{ type: 'request.created', object: request }]);
  return request;
}

async function sandboxCreate(deps: SandboxServiceDeps, caller: Caller, input: NewService): Promise<CreateOutcome> {
  const plan = requirePlan(await deps.catalogue(), input.plan).name;
  if (caller.providerReview || caller.approval === 'manual') {
    const request = sandboxRequest(caller, {
      request_type: 'create',
      requested_plan: plan,
      hostname: input.hostname,
      customer_email: input.customerEmail,
    });
    return { requested: { ...(await requested(deps, caller, request)), request_type: 'create', service_number: null } };
  }
  const now = new Date();
  const service = sandboxed({
    ...sandboxService(randomServiceNumber(), now),
    plan,
    hostname: input.hostname,
    customer_email: input.customerEmail,
    customer_name: input.customerName,
    billing_cycle: input.billingCycle,
  });
  // As a live automatic approval: the service and its create request, approved at once.
  const request = sandboxed(
    sandboxRequestRow(
      {
        request_id: formatRequestId(randomSandboxRequestNumber()),
        request_type: 'create',
        request_status: 'approved',
        service_number: service.service_number,
        requested_plan: plan,
        hostname: input.hostname,
        customer_email: input.customerEmail,
        decided_at: now.toISOString(),
      },
      now,
    ),
  );
  await recordSimulatedEvents(deps.prisma, caller, { type: 'service', id: String(service.service_number) }, [
    { type: 'service.created', object: service },
    { type: 'request.created', object: request },
  ]);
  return { created: service };
}

/**
 * A change of a service the live call would refuse: `X-Test-Scenario: not_found` (no such service),
 * `conflict` (the service cancelled), or a number the sandbox cancelled itself (its test-mode
 * `service.cancelled`): cancelled is final, so no simulated event may tell of it otherwise.
 * `refusal` is the live call's own error for a cancelled service (store.ts).
 */
async function requireChangeable(deps: SandboxServiceDeps, caller: Caller, serviceNumber: number, refusal: () => ConflictError): Promise<void> {
  if (caller.simulatedFailure === 'not_found') throw serviceNotFound(serviceNumber);
  if (caller.simulatedFailure === 'conflict' || (await simulatedCancellation(deps.prisma, caller.brokerId, serviceNumber))) throw refusal();
}

export function sandboxServices(deps: SandboxServiceDeps): ServiceUseCases {
  return {
    async checkNewService(plan) {
      requirePlan(await deps.catalogue(), plan);
    },
    async checkPlanChange(change, plan) {
      // The simulated current plan is fixed, so the tier rule is input validation here.
      const catalogue = await deps.catalogue();
      const current = requirePlan(catalogue, change === 'upgrade' ? SANDBOX_UPGRADE_FROM : SANDBOX_DOWNGRADE_FROM);
      requireTierChange(catalogue, current, plan, change);
    },

    createService: (caller, input) => sandboxCreate(deps, caller, input),

    async listServices(caller, query) {
      const credentials = query.includeCredentials && caller.mayReadCredentials ? SANDBOX_CREDENTIALS : undefined;
      const row = sandboxService(SANDBOX_SERVICE_NUMBER, new Date(), credentials);
      return sandboxPage(sandboxed(row), serviceMatches(row, query), query, SANDBOX_SERVICE_NUMBER);
    },

    // Dated at each read: never the same page twice.
    pageFreshness: () => undefined,

    async getService(caller, serviceNumber) {
      if (caller.simulatedFailure === 'not_found') throw serviceNotFound(serviceNumber);
      // Echoes the number without looking anything up.
      const service = sandboxed(sandboxService(serviceNumber, new Date(), SANDBOX_CREDENTIALS));
      return { ...service, credentials: SANDBOX_CREDENTIALS };
    },

    async changePassword(caller, serviceNumber, chosen) {
      await requireChangeable(deps, caller, serviceNumber, () => serviceInStatus(serviceNumber, 'cancelled', 'given a new password'));
      const now = new Date();
      const change: PasswordChange = sandboxed({
        object: 'password_update',
        service_number: serviceNumber,
        password_generated: chosen === undefined,
        customer_notified: false,
        updated_at: now.toISOString(),
      });
      // The service as the sandbox shows it, never the password (as a live change's event); made now, only the password changed.
      const service = sandboxed(sandboxService(serviceNumber, now));
      await recordSimulatedEvents(deps.prisma, caller, { type: 'service', id: String(serviceNumber) }, [
        { type: 'service.updated', object: service, previousAttributes: previousAttributes(service, service, { passwordChanged: true }) },
      ]);
      if (chosen === undefined) change.password = generatePassword();
      return change;
    },

    async requestPlanChange(caller, serviceNumber, change, plan) {
      await requireChangeable(deps, caller, serviceNumber, () => serviceInStatus(serviceNumber, 'cancelled', change === 'upgrade' ? 'upgraded' : 'downgraded'));
      const catalogue = await deps.catalogue();
      const request = sandboxRequest(caller, {
        request_type: change,
        service_number: serviceNumber,
        current_plan: change === 'upgrade' ? SANDBOX_UPGRADE_FROM : SANDBOX_DOWNGRADE_FROM,
        requested_plan: requirePlan(catalogue, plan).name,
        hostname: 'test-server.example.com',
        customer_email: 'test.customer@example.com',
      });
      return requested(deps, caller, request);
    },

    async requestCancellation(caller, serviceNumber, reason, when) {
      await requireChangeable(deps, caller, serviceNumber, () => serviceAlreadyCancelled(serviceNumber));
      const request = sandboxRequest(caller, {
        request_type: 'cancel',
        service_number: serviceNumber,
        current_plan: 'Standard VPS',
        hostname: 'test-server.example.com',
        customer_email: 'test.customer@example.com',
        reason,
        cancel_when: when,
      });
      return requested(deps, caller, request);
    },
  };
}
