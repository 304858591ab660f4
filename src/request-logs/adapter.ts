import type { Contract } from '../http/contract.ts';
import { invalidParameter } from '../http/errors.ts';
import { instantParam, intParam, DEFAULT_LIMIT } from '../http/params.ts';
import { operation } from '../http/operation.ts';
import type { RegisterRoutes } from '../http/resource.ts';
import type { ByMode } from '../shared/caller.ts';
import { statsRange } from '../shared/stats-range.ts';
import { sandboxRequestLogs } from './sandbox.ts';
import type { RequestLogQuery } from './store.ts';
import { requestLogs, type RequestLogDeps, type RequestLogUseCases } from './use-cases.ts';

export function requestLogUseCases(deps: RequestLogDeps): ByMode<RequestLogUseCases> {
  return { live: requestLogs(deps, 'live'), sandbox: sandboxRequestLogs(requestLogs(deps, 'test')) };
}

/** `429` is that status; `4xx` its class (the schema's pattern has checked the form). */
function statusRange(status: string | undefined): RequestLogQuery['status'] {
  if (status === undefined) return undefined;
  const first = Number(status[0]);
  if (status.endsWith('xx')) return { min: first * 100, below: (first + 1) * 100 };
  return { min: Number(status), below: Number(status) + 1 };
}

export const registerRequestLogRoutes: RegisterRoutes<RequestLogDeps & { contract: Contract }> = (router, deps) => {
  const useCases = requestLogUseCases(deps);
  const { contract } = deps;

  // GET /api/v1/request-logs
  operation(router, contract, 'listRequestLogs', {
    useCases,
    validate: ({ query }): RequestLogQuery => {
      if (query.operation !== undefined && !contract.byId.has(query.operation)) {
        throw invalidParameter('operation', 'query', 'exists', `no operation ${query.operation} in this API`);
      }
      return {
        requestId: query.request_id,
        status: statusRange(query.status),
        method: query.method?.toUpperCase(),
        operation: query.operation,
        apiKeyId: query.api_key_id,
        apiKeyName: query.api_key_name,
        createdGte: instantParam(query.created_gte, 'created_gte'),
        createdLt: instantParam(query.created_lt, 'created_lt'),
        limit: intParam(query.limit, DEFAULT_LIMIT),
        startingAfter: query.starting_after,
      };
    },
    async handle(query, { caller, useCases }) {
      const { data, pagination } = await useCases.list(caller, query);
      return { status: 200, data, pagination };
    },
  });

  // GET /api/v1/request-stats
  operation(router, contract, 'getRequestStats', {
    useCases,
    validate: ({ query }) =>
      statsRange(query.interval ?? 'hour', instantParam(query.created_gte, 'created_gte'), instantParam(query.created_lt, 'created_lt'), new Date()),
    async handle(range, { caller, useCases }) {
      return { status: 200, data: await useCases.stats(caller, range) };
    },
  });

  // GET /api/v1/request-logs/{request_id}
  operation(router, contract, 'getRequestLog', {
    useCases,
    validate: ({ params }) => params.request_id,
    async handle(requestId, { caller, useCases }) {
      return { status: 200, data: await useCases.get(caller, requestId) };
    },
  });
};
