import type { Contract } from '../http/contract.ts';
import { instantParam, intParam, DEFAULT_LIMIT } from '../http/params.ts';
import { operation } from '../http/operation.ts';
import type { RegisterRoutes } from '../http/resource.ts';
import type { ByMode } from '../shared/caller.ts';
import { sandboxEvents } from './sandbox.ts';
import type { EventType } from './store.ts';
import { events, type EventUseCases } from './use-cases.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export function eventUseCases(deps: { prisma: ReadClient }): ByMode<EventUseCases> {
  return { live: events(deps.prisma, 'live'), sandbox: sandboxEvents(events(deps.prisma, 'test')) };
}

/** `type` (one) and `types` (a comma list): the events of any of them. */
function eventTypes(type: EventType | undefined, types: EventType[] | undefined): EventType[] | undefined {
  if (type === undefined) return types;
  return types === undefined ? [type] : [...new Set([type, ...types])];
}

export const registerEventRoutes: RegisterRoutes<{ prisma: ReadClient; contract: Contract }> = (router, deps) => {
  const useCases = eventUseCases(deps);
  const { contract } = deps;

  // GET /api/v1/events
  operation(router, contract, 'listEvents', {
    useCases,
    validate: ({ query }) => ({
      types: eventTypes(query.type, query.types),
      limit: intParam(query.limit, DEFAULT_LIMIT),
      startingAfter: query.starting_after,
      order: query.order,
      createdGte: instantParam(query.created_gte, 'created_gte'),
      createdLt: instantParam(query.created_lt, 'created_lt'),
    }),
    async handle(query, { caller, useCases }) {
      const { data, pagination } = await useCases.list(caller, query);
      return { status: 200, data, pagination };
    },
  });

  // GET /api/v1/events/{event_id}
  operation(router, contract, 'getEvent', {
    useCases,
    validate: ({ params }) => params.event_id,
    async handle(id, { caller, useCases }) {
      return { status: 200, data: await useCases.get(caller, id) };
    },
  });

  // POST /api/v1/events/{event_id}/redeliver
  operation(router, contract, 'redeliverEvent', {
    useCases,
    validate: ({ params, body }) => ({ id: params.event_id, endpointId: body?.endpoint_id }),
    async handle({ id, endpointId }, { caller, useCases }) {
      return { status: 200, data: await useCases.redeliver(caller, id, endpointId) };
    },
  });
};
