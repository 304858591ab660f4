/** Generated, never stored; a simulated decision still writes a live one's events, in test mode. */
import { recordSimulatedEvents, simulatedCancellation, simulatedRequestObject, type SimulatedEvent } from '../events/simulated.ts';
import { previousAttributes } from '../events/previous-attributes.ts';
import { endOfCurrentBillingPeriod } from '../services/billing.ts';
import type { RequestData } from '../services/change-requests.ts';
import type { ServiceData } from '../services/present.ts';
import {
  kindOfRequest,
  SANDBOX_DOWNGRADE_FROM,
  SANDBOX_UPGRADE_FROM,
  sandboxed,
  sandboxPage,
  sandboxRequestRow,
  sandboxService,
} from '../services/sandbox.ts';
import type { Caller } from '../shared/caller.ts';
import { canonicalRequestId, sandboxRequestKind, sandboxServiceNumberOf, type SandboxRequestKind } from '../shared/ids.ts';
import { serviceAlreadyCancelled } from '../services/store.ts';
import { alreadyDecided, planChangeRefused, requestNotFound } from './store.ts';
import type { RequestUseCases } from './use-cases.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** The one generated row of the sandbox requests list: a pending create request (fixed, so it can be searched and managed). */
export const SANDBOX_REQUEST_ID = 'REQ-318274';
const SANDBOX_REQUEST_NUMBER = 318_274n;

export function sandboxRequest(now: Date): RequestData {
  return sandboxRequestRow(
    {
      request_id: SANDBOX_REQUEST_ID,
      request_type: 'create',
      request_status: 'pending',
      requested_plan: 'Basic VPS',
      hostname: 'test-server.example.com',
      customer_email: 'test.customer@example.com',
    },
    now,
  );
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

const GENERATED_PLANS: Record<SandboxRequestKind, { current_plan: string | null; requested_plan: string | null }> = {
  create: { current_plan: null, requested_plan: 'Standard VPS' },
  upgrade: { current_plan: SANDBOX_UPGRADE_FROM, requested_plan: 'Standard VPS' },
  downgrade: { current_plan: SANDBOX_DOWNGRADE_FROM, requested_plan: 'Standard VPS' },
  cancel_immediate: { current_plan: 'Standard VPS', requested_plan: null },
  cancel_end_of_billing_period: { current_plan: 'Standard VPS', requested_plan: null },
};

/**
 * The pending request a sandbox decision starts from: the one the sandbox answered with this id, as
 * its `request.created` event tells (so the decision names that service number), else one generated
 * from the id alone, of the kind its last digit tells, made a second before `now`.
 */
async function pendingRequest(prisma: ReadClient, caller: Caller, requestId: bigint, now: Date): Promise<RequestData> {
  const id = canonicalRequestId(requestId);
  const kind = sandboxRequestKind(requestId);
  const made = await simulatedRequestObject(prisma, caller.brokerId, id);
  if (made && kindOfRequest(made.request_type as RequestData['request_type'], made.cancel_when as RequestData['cancel_when']) === kind) {
    const { mode: _mode, simulated: _simulated, ...request } = made;
    // A decision is simulated on the request as it waited: pending, and a create with no service yet.
    const pending = { ...(request as unknown as RequestData), request_status: 'pending' as const };
    return pending.request_type === 'create' ? { ...pending, service_number: null, decided_at: null } : { ...pending, decided_at: null };
  }
  const type = kind === 'cancel_immediate' || kind === 'cancel_end_of_billing_period' ? 'cancel' : kind;
  return sandboxRequestRow(
    {
      request_id: id,
      request_type: type,
      request_status: 'pending',
      service_number: type === 'create' ? null : sandboxServiceNumberOf(requestId),
      ...GENERATED_PLANS[kind],
      hostname: 'test-server.example.com',
      customer_email: 'test.customer@example.com',
      reason: type === 'cancel' ? 'Simulated cancellation' : null,
      cancel_when: kind === 'cancel_immediate' ? 'immediate' : kind === 'cancel_end_of_billing_period' ? 'end_of_billing_period' : null,
    },
    new Date(now.getTime() - 1000),
  );
}

/**
 * What carrying out the approved request does to its service, as the event a live approval of that
 * type writes (src/requests/store.ts): the service as it stood when the request was made, and after.
 */
function serviceEvent(approved: RequestData, serviceNumber: number, now: Date): SimulatedEvent {
  const made = new Date(approved.created_at);
  const before = {
    ...sandboxService(serviceNumber, made),
    plan: approved.current_plan ?? 'Standard VPS',
    hostname: approved.hostname ?? 'test-server.example.com',
    customer_email: approved.customer_email ?? 'test.customer@example.com',
  };
  const at = now.toISOString();
  if (approved.request_type === 'create') {
    return { type: 'service.created', object: sandboxed({ ...before, plan: approved.requested_plan ?? before.plan, created_at: at, updated_at: at }) };
  }
  let after: ServiceData;
  if (approved.request_type === 'upgrade' || approved.request_type === 'downgrade') {
    after = { ...before, plan: approved.requested_plan ?? before.plan, updated_at: at };
  } else if (approved.cancel_when === 'immediate') {
    after = { ...before, status: 'cancelled', cancelled_at: at, cancel_at: null, updated_at: at };
  } else {
    // Scheduled, not yet taken effect: `service.cancelled` follows at `cancel_at`, as in live.
    const cancelAt = endOfCurrentBillingPeriod(made, before.billing_cycle, now).toISOString();
    after = { ...before, cancel_at: cancelAt, updated_at: at };
  }
  const type = after.status === 'cancelled' ? 'service.cancelled' : 'service.updated';
  return { type, object: sandboxed(after), previousAttributes: previousAttributes(before, after) };
}

/** The sandbox's request use cases: one generated row, simulated decisions, nothing read or stored but their events. */
export function sandboxRequests(deps: { prisma: ReadClient }): RequestUseCases {
  return {
    async listRequests(_caller, query) {
      const row = sandboxRequest(new Date());
      return sandboxPage(sandboxed(row), requestMatches(row, query), query, SANDBOX_REQUEST_NUMBER);
    },

    async decide(caller, requestId, decision) {
      // The live refusals: no such request, or (`conflict`) one already decided as this decision would decide it.
      if (caller.simulatedFailure === 'not_found') throw requestNotFound(requestId);
      if (caller.simulatedFailure === 'conflict') throw alreadyDecided(requestId, decision.action === 'approve' ? 'approved' : 'denied');
      // A denial is answered as a denial even under provider_review (the denial comes first).
      const now = new Date();
      const at = now.toISOString();
      const base = await pendingRequest(deps.prisma, caller, requestId, now);
      const effect = { type: 'request' as const, id: base.request_id };
      // The request as it stood before the decision: pending.
      const pending = sandboxed(base);
      if (decision.action === 'deny') {
        const denied = sandboxed({ ...base, request_status: 'denied' as const, denial_reason: decision.denialReason, updated_at: at, decided_at: at });
        await recordSimulatedEvents(deps.prisma, caller, effect, [{ type: 'request.denied', object: denied, previousAttributes: previousAttributes(pending, denied) }]);
        return { decided: denied };
      }
      if (caller.providerReview) {
        // Neither approved nor denied yet: no event tells of a request waiting for the provider.
        return { inReview: sandboxed({ ...base, request_status: 'provider_review' as const }) };
      }
      const serviceNumber = base.service_number ?? sandboxServiceNumberOf(requestId);
      if (base.request_type !== 'create' && (await simulatedCancellation(deps.prisma, caller.brokerId, serviceNumber))) {
        // Cancelled is final: the live approval's refusal, and no event that says otherwise.
        throw base.request_type === 'cancel' ? serviceAlreadyCancelled(serviceNumber) : planChangeRefused(serviceNumber, 'cancelled');
      }
      const approved = sandboxed({ ...base, request_status: 'approved' as const, service_number: serviceNumber, updated_at: at, decided_at: at });
      await recordSimulatedEvents(deps.prisma, caller, effect, [
        { type: 'request.approved', object: approved, previousAttributes: previousAttributes(pending, approved) },
        serviceEvent(approved, serviceNumber, now),
      ]);
      return { decided: approved };
    },
  };
}
