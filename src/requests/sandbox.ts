/** Generated, never stored; a simulated decision still writes a live one's events, in test mode. */
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { recordSimulatedEvents } from '../events/simulated.ts';
import { previousAttributes } from '../events/previous-attributes.ts';
import type { RequestData } from '../services/change-requests.ts';
import { sandboxed, sandboxPage, sandboxRequestRow, sandboxService } from '../services/sandbox.ts';
import { canonicalRequestId, randomServiceNumber } from '../shared/ids.ts';
import type { RequestUseCases } from './use-cases.ts';

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

/** The sandbox's request use cases: one generated row, simulated decisions, nothing read or stored but their events. */
export function sandboxRequests(deps: { prisma: PrismaClient }): RequestUseCases {
  return {
    async listRequests(_caller, query) {
      const row = sandboxRequest(new Date());
      return sandboxPage(sandboxed(row), requestMatches(row, query), query, SANDBOX_REQUEST_NUMBER);
    },

    async decide(caller, requestId, decision) {
      // A denial is answered as a denial even under provider_review (the denial comes first).
      const now = new Date().toISOString();
      const base = {
        object: 'service_request' as const,
        request_id: canonicalRequestId(requestId),
        request_type: 'create' as const,
        source: 'api' as const,
        current_plan: null,
        requested_plan: 'Standard VPS',
        hostname: 'test-server.example.com',
        customer_email: 'test.customer@example.com',
        reason: null,
        cancel_when: null,
        created_at: now,
        updated_at: now,
      };
      const effect = { type: 'request' as const, id: base.request_id };
      // The generated request as it stood before the decision: pending, made now.
      const pending = sandboxed({ ...base, request_status: 'pending' as const, service_number: null, denial_reason: null, decided_at: null });
      if (decision.action === 'deny') {
        const denied = sandboxed({ ...base, request_status: 'denied' as const, service_number: null, denial_reason: decision.denialReason, decided_at: now });
        await recordSimulatedEvents(deps.prisma, caller, effect, [{ type: 'request.denied', object: denied, previousAttributes: previousAttributes(pending, denied) }]);
        return { decided: denied };
      }
      if (caller.providerReview) {
        // Neither approved nor denied yet: no event tells of a request waiting for the provider.
        const waiting = { ...base, request_status: 'provider_review' as const, service_number: null, denial_reason: null, decided_at: null };
        return { inReview: sandboxed(waiting) };
      }
      const approved = sandboxed({ ...base, request_status: 'approved' as const, service_number: randomServiceNumber(), denial_reason: null, decided_at: now });
      // The approved create request made its service, as a live approval's events tell.
      const service = sandboxed({
        ...sandboxService(approved.service_number, new Date(now)),
        plan: approved.requested_plan,
        hostname: approved.hostname,
        customer_email: approved.customer_email,
      });
      await recordSimulatedEvents(deps.prisma, caller, effect, [
        { type: 'request.approved', object: approved, previousAttributes: previousAttributes(pending, approved) },
        { type: 'service.created', object: service },
      ]);
      return { decided: approved };
    },
  };
}
