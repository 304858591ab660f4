import type { Contract } from '../http/contract.ts';
import { ApiError, missingParameter } from '../http/errors.ts';
import { operation } from '../http/operation.ts';
import { pageParams, textParam } from '../http/params.ts';
import type { RegisterRoutes } from '../http/resource.ts';
import type { ByMode } from '../shared/caller.ts';
import { parseRequestId } from '../shared/ids.ts';
import { isBlank } from '../shared/text.ts';
import { sandboxRequests } from './sandbox.ts';
import type { RequestSource, RequestStatus, RequestType } from './store.ts';
import { liveRequests, type Decision, type RequestDeps, type RequestUseCases } from './use-cases.ts';

export function requestUseCases(deps: RequestDeps): ByMode<RequestUseCases> {
  return { live: liveRequests(deps), sandbox: sandboxRequests(deps) };
}

export const registerRequestRoutes: RegisterRoutes<RequestDeps & { contract: Contract }> = (router, deps) => {
  const { contract } = deps;
  const requests = requestUseCases(deps);

  // GET /api/v1/requests
  operation(router, contract, 'listRequests', {
    useCases: requests,
    validate({ query }) {
      const { limit, offset, startingAfter, endingBefore } = pageParams(query, (cursor) => parseRequestId(String(cursor)));
      return {
        limit,
        offset,
        startingAfter,
        endingBefore,
        status: textParam(query.status, 'status', 'query') as RequestStatus | undefined,
        type: textParam(query.type, 'type', 'query') as RequestType | undefined,
        source: textParam(query.source, 'source', 'query') as RequestSource | undefined,
        date: textParam(query.date, 'date', 'query'),
        search: textParam(query.search, 'search', 'query'),
      };
    },
    async handle(query, { caller, useCases }) {
      const page = await useCases.listRequests(caller, query);
      return { status: 200, data: page.data, pagination: page.pagination };
    },
  });

  // POST /api/v1/requests/{request_id}/manage
  operation(router, contract, 'manageRequest', {
    useCases: requests,
    validate({ params, body }): { requestId: bigint; decision: Decision } {
      const requestId = parseRequestId(String(params.request_id));
      if (requestId === undefined) {
        // The schema pattern already refuses this; kept so the use case never sees a bad id.
        throw new ApiError('invalid_parameter', 'Invalid parameter request_id: expected REQ- followed by digits', {
          field: 'request_id',
          location: 'path',
          rule: 'pattern',
          reason: 'must be REQ- followed by digits',
        });
      }
      // Checked for an approval too, though it is ignored there: bad input is never passed over silently.
      const denialReason = (textParam(body.denial_reason, 'denial_reason', 'body') ?? '').trim();
      if (body.action === 'approve') return { requestId, decision: { action: 'approve' } };
      if (isBlank(denialReason)) {
        throw missingParameter(['denial_reason'], ['action', 'denial_reason'], 'required to deny a request');
      }
      return { requestId, decision: { action: 'deny', denialReason } };
    },
    async handle({ requestId, decision }, { caller, useCases }) {
      const outcome = await useCases.decide(caller, requestId, decision);
      return 'decided' in outcome ? { status: 200, data: outcome.decided } : { status: 202, data: outcome.inReview };
    },
  });
};
