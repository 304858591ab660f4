/** Sandbox events are real (test-mode) records, so live and sandbox share this, each bound to its mode. */
import type { components } from '../../generated/api.ts';
import type { Caller } from '../shared/caller.ts';
import { findEvent, findEventRow, listEvents, redeliver, type AttemptRow, type DeliveryRow, type EventQuery, type EventRow, type EventScope } from './reads.ts';
import { shownObject, type EventMode } from './store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export type EventData = components['schemas']['Event'];
export type EventDetail = components['schemas']['EventDetail'];
export type EventPagination = components['schemas']['EventPagination'];
export type AttemptData = components['schemas']['EventDeliveryAttempt'];

export interface EventUseCases {
  list(caller: Caller, query: EventQuery): Promise<{ data: EventData[]; pagination: EventPagination }>;
  get(caller: Caller, id: string): Promise<EventDetail>;
  redeliver(caller: Caller, id: string, endpointId: string | undefined): Promise<EventDetail>;
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** An event as answers show it and deliveries carry it; what else its payload holds follows its object. */
export function eventData(row: EventRow): EventData {
  const { object: stored, ...rest } = (row.data ?? {}) as { object?: unknown };
  const object = shownObject(row.type, stored) as EventData['data']['object'];
  return { object: 'event', id: row.id, sequence: Number(row.sequence), type: row.type as EventData['type'], created_at: row.createdAt.toISOString(), mode: row.mode, data: { object, ...rest } };
}

/** An event just written (a ping's answer), as it is stored: its `sequence` and `created_at` are the database's. */
export async function storedEventData(prisma: ReadClient, scope: EventScope, id: string): Promise<EventData> {
  return eventData(await findEventRow(prisma, scope, id));
}

function deliveryData(row: DeliveryRow): EventDetail['deliveries'][number] {
  return {
    endpoint_id: row.endpointId,
    status: row.status,
    attempt_count: row.attempts,
    next_attempt_at: row.status === 'pending' ? iso(row.nextAttemptAt) : null,
    completed_at: iso(row.completedAt),
    attempts: row.attemptsMade.map(attemptData),
  };
}

/** One attempt as `getEvent` and `listWebhookEndpointDeliveries` show it. */
export function attemptData(a: AttemptRow): AttemptData {
  return {
    number: a.number,
    attempted_at: a.attemptedAt.toISOString(),
    status_code: a.statusCode,
    error: a.error,
    duration_ms: a.durationMs,
    response_excerpt: a.responseExcerpt,
  };
}

export function events(prisma: ReadClient, mode: EventMode): EventUseCases {
  const scope = (caller: Caller): EventScope => ({ brokerId: caller.brokerId, mode });
  const detail = async (caller: Caller, id: string): Promise<EventDetail> => {
    const { event, deliveries } = await findEvent(prisma, scope(caller), id);
    return { ...eventData(event), deliveries: deliveries.map(deliveryData) };
  };
  return {
    async list(caller, query) {
      const { rows, hasMore } = await listEvents(prisma, scope(caller), query);
      const last = rows.at(-1);
      return {
        data: rows.map(eventData),
        pagination: { limit: query.limit, has_more: hasMore, next_starting_after: hasMore && last ? last.id : null },
      };
    },
    get: detail,
    async redeliver(caller, id, endpointId) {
      await redeliver(prisma, scope(caller), id, endpointId, caller.unitOfWork, new Date());
      return detail(caller, id);
    },
  };
}
