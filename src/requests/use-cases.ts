import type { Credentials } from '../db/credentials.ts';
import { requestData, type RequestData } from '../services/change-requests.ts';
import type { ServiceReadCache } from '../services/read-cache.ts';
import { applyDueCancellations } from '../services/store.ts';
import type { Caller } from '../shared/caller.ts';
import { cursorOffset, pageOf, type Page } from '../shared/page.ts';
import { approveRequest, denyRequest, listRequests, type RequestListQuery } from './store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export type RequestPageQuery = RequestListQuery;

export type Decision = { action: 'approve' } | { action: 'deny'; denialReason: string };

/** A decision is taken, or (sandbox `provider_review`) an approval waits for the provider. */
export type DecisionOutcome = { decided: RequestData } | { inReview: RequestData };

export interface RequestUseCases {
  listRequests(caller: Caller, query: RequestPageQuery): Promise<Page<RequestData>>;
  decide(caller: Caller, requestId: bigint, decision: Decision): Promise<DecisionOutcome>;
}

export interface RequestDeps {
  prisma: ReadClient;
  credentials: () => Promise<Credentials>;
  serviceReads: ServiceReadCache;
}

export function liveRequests(deps: RequestDeps): RequestUseCases {
  const { prisma } = deps;
  return {
    async listRequests(caller, query) {
      await applyDueCancellations(prisma, caller.brokerId);
      const { rows, total, ahead } = await listRequests(prisma, caller.brokerId, query);
      return pageOf(rows.map(requestData), total, query.limit, cursorOffset(query, ahead, rows.length));
    },

    async decide(caller, requestId, decision) {
      const now = new Date();
      if (decision.action === 'deny') {
        return { decided: requestData(await denyRequest(prisma, caller.brokerId, requestId, decision.denialReason, caller.unitOfWork, now)) };
      }
      const request = await approveRequest(prisma, await deps.credentials(), caller.brokerId, requestId, caller.unitOfWork, now);
      await deps.serviceReads.changed(caller.brokerId);
      return { decided: requestData(request) };
    },
  };
}
