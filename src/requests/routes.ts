/**
 * The request operations: the list and the decision (approve or deny). Live keys act on the
 * broker's own requests; sandbox keys get generated answers and nothing is read or stored.
 */
import { isBlank } from '../shared/text.ts';
import { isSandbox } from '../http/auth-context.ts';
import { ApiError } from '../http/errors.ts';
import { operation, type DataOf } from '../http/operation.ts';
import type { RegisterRoutes } from '../routes.ts';
import { credentialsFor } from '../services/credentials.ts';
import { randomServiceNumber } from '../shared/ids.ts';
import { pageParams, textParam } from '../services/query.ts';
import { sandboxed, sandboxPage } from '../services/sandbox.ts';
import { applyDueCancellations } from '../services/store.ts';
import { canonicalRequestId, parseRequestId } from '../shared/ids.ts';
import { requestData } from './present.ts';
import { requestMatches, sandboxRequest } from './sandbox.ts';
import {
  approveRequest,
  denyRequest,
  listRequests,
  type RequestSource,
  type RequestStatus,
  type RequestType,
} from './store.ts';

type ManageInput = { id: bigint; action: 'approve' } | { id: bigint; action: 'deny'; denialReason: string };

export const registerRequestRoutes: RegisterRoutes = (router, deps) => {
  const { prisma, contract } = deps;

  // GET /api/v1/requests
  operation(router, contract, 'listRequests', {
    validate: ({ query }) => ({
      ...pageParams(query),
      status: textParam(query.status, 'status', 'query') as RequestStatus | undefined,
      type: textParam(query.type, 'type', 'query') as RequestType | undefined,
      source: textParam(query.source, 'source', 'query') as RequestSource | undefined,
      date: textParam(query.date, 'date', 'query'),
      search: textParam(query.search, 'search', 'query'),
    }),
    async handle({ auth }, input) {
      const { limit, offset, ...filters } = input;
      if (isSandbox(auth)) {
        const row = sandboxRequest(new Date());
        const page = sandboxPage(sandboxed(row), requestMatches(row, filters), limit, offset);
        return { status: 200, data: page.data, pagination: page.pagination };
      }
      await applyDueCancellations(prisma, auth.brokerId);
      const { rows, total } = await listRequests(prisma, auth.brokerId, { ...filters, limit, offset });
      const data = rows.map(requestData);
      return { status: 200, data, pagination: { total, limit, offset, has_more: offset + data.length < total } };
    },
  });

  // POST /api/v1/requests/{request_id}/manage
  operation<'manageRequest', ManageInput>(router, contract, 'manageRequest', {
    validate({ params, body }) {
      const id = parseRequestId(String(params.request_id));
      if (id === undefined) {
        // The schema pattern already refuses this; kept so the handler never sees a bad id.
        throw new ApiError('invalid_parameter', 'Invalid parameter request_id: expected REQ- followed by digits', {
          field: 'request_id',
          location: 'path',
          rule: 'pattern',
          reason: 'must be REQ- followed by digits',
        });
      }
      // Checked for an approval too, though it is ignored there: bad input is never passed over silently.
      const denialReason = (textParam(body.denial_reason, 'denial_reason', 'body') ?? '').trim();
      if (body.action === 'approve') return { id, action: 'approve' };
      if (isBlank(denialReason)) {
        throw new ApiError('missing_parameter', 'Missing required parameter: denial_reason (required to deny a request)', {
          required: ['action', 'denial_reason'],
          missing: ['denial_reason'],
        });
      }
      return { id, action: 'deny', denialReason };
    },
    async handle({ auth, scenario }, input) {
      const now = new Date();
      if (isSandbox(auth)) {
        // A simulated decision about a request that is not looked up. A denial is answered as a
        // denial even under provider_review (spec: the denial comes first).
        const base = {
          request_id: canonicalRequestId(input.id),
          request_type: 'create' as const,
          source: 'api' as const,
          current_plan: null,
          requested_plan: 'Standard VPS',
          hostname: 'test-server.example.com',
          customer_email: 'test.customer@example.com',
          reason: null,
          cancel_when: null,
          created_at: now.toISOString(),
          updated_at: now.toISOString(),
        };
        if (input.action === 'deny') {
          const data: DataOf<'manageRequest', 200> = sandboxed({
            ...base,
            request_status: 'denied' as const,
            service_number: null,
            denial_reason: input.denialReason,
            decided_at: now.toISOString(),
          });
          return { status: 200, data };
        }
        if (scenario === 'provider_review') {
          const data: DataOf<'manageRequest', 202> = sandboxed({
            ...base,
            request_status: 'provider_review' as const,
            service_number: null,
            denial_reason: null,
            decided_at: null,
          });
          return { status: 202, data };
        }
        const data: DataOf<'manageRequest', 200> = sandboxed({
          ...base,
          request_status: 'approved' as const,
          service_number: randomServiceNumber(),
          denial_reason: null,
          decided_at: now.toISOString(),
        });
        return { status: 200, data };
      }
      if (input.action === 'deny') {
        return { status: 200, data: requestData(await denyRequest(prisma, auth.brokerId, input.id, input.denialReason, now)) };
      }
      const request = await approveRequest(prisma, await credentialsFor(deps), auth.brokerId, input.id, now);
      // An approval creates, changes or cancels the service.
      await deps.serviceReads.changed(auth.brokerId);
      return { status: 200, data: requestData(request) };
    },
  });
};
