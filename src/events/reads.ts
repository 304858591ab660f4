/** One broker and one mode at a time: a sandbox key sees its test-mode events only. */
import { instantRange } from '../shared/dates.ts';
import { ConflictError, InvalidValueError, NotFoundError } from '../shared/errors.ts';
import type { UnitOfWork } from '../shared/unit-of-work.ts';
import type { EventMode, EventType } from './store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export interface EventScope {
  brokerId: string;
  mode: EventMode;
}

export interface EventRow {
  id: string;
  /** 1, 2, 3… in the (broker, mode) feed's order, stamped by the database on insert. */
  sequence: bigint;
  type: string;
  mode: EventMode;
  data: unknown;
  createdAt: Date;
}

export interface AttemptRow {
  number: number;
  attemptedAt: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  responseExcerpt: string | null;
}

/** What an attempt's row shows (`EventDeliveryAttempt`). */
export const ATTEMPT_FIELDS = { number: true, attemptedAt: true, statusCode: true, error: true, durationMs: true, responseExcerpt: true } as const;

export interface DeliveryRow {
  endpointId: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: Date | null;
  completedAt: Date | null;
  attemptsMade: AttemptRow[];
}

export interface EventQuery {
  /** Only events of these types (the `type` or `types` parameter). */
  types?: EventType[] | undefined;
  limit: number;
  startingAfter?: string | undefined;
  /** `desc`: newest first (the default); `asc`: the feed, oldest first. */
  order?: 'asc' | 'desc' | undefined;
  createdGte?: Date | undefined;
  createdLt?: Date | undefined;
}

const EVENT_FIELDS = { id: true, sequence: true, type: true, mode: true, data: true, createdAt: true } as const;

/**
 * A page of events in `seq` order and whether more follow. Ascending, `seq > cursor` is the whole
 * of the feed's gap-free rule: `recordEvents` hands out one (broker, mode)'s `seq` in commit order,
 * so no event that sorts before a visible one can still commit.
 */
export async function listEvents(prisma: ReadClient, scope: EventScope, query: EventQuery): Promise<{ rows: EventRow[]; hasMore: boolean }> {
  const ascending = query.order === 'asc';
  let cursor: bigint | undefined;
  if (query.startingAfter !== undefined) {
    const row = await prisma.event.findFirst({ where: { id: query.startingAfter, ...scope }, select: { seq: true } });
    if (!row) {
      throw new InvalidValueError('starting_after', 'query', 'exists', `no event ${query.startingAfter} to start after`);
    }
    cursor = row.seq;
  }
  const created = instantRange(query.createdGte, query.createdLt);
  const rows = await prisma.event.findMany({
    where: {
      ...scope,
      ...(query.types !== undefined && { type: { in: query.types } }),
      ...(cursor !== undefined && { seq: ascending ? { gt: cursor } : { lt: cursor } }),
      ...(created && { createdAt: created }),
    },
    orderBy: { seq: ascending ? 'asc' : 'desc' },
    take: query.limit + 1,
    select: EVENT_FIELDS,
  });
  return { rows: rows.slice(0, query.limit), hasMore: rows.length > query.limit };
}

/** One stored event, as written. */
export async function findEventRow(prisma: ReadClient, scope: EventScope, id: string): Promise<EventRow> {
  const row = await prisma.event.findFirst({ where: { id, ...scope }, select: EVENT_FIELDS });
  if (!row) throw new NotFoundError(`Event ${id} not found`);
  return row;
}

/** One event with its deliveries (in the order they were owed) and their attempts. */
export async function findEvent(prisma: ReadClient, scope: EventScope, id: string): Promise<{ event: EventRow; deliveries: DeliveryRow[] }> {
  const row = await prisma.event.findFirst({
    where: { id, ...scope },
    select: {
      ...EVENT_FIELDS,
      deliveries: {
        orderBy: { id: 'asc' },
        select: {
          endpointId: true,
          status: true,
          attempts: true,
          nextAttemptAt: true,
          completedAt: true,
          attemptsMade: { orderBy: { number: 'asc' }, select: ATTEMPT_FIELDS },
        },
      },
    },
  });
  if (!row) throw new NotFoundError(`Event ${id} not found`);
  const { deliveries, ...event } = row;
  return { event, deliveries };
}

/**
 * `endpointId` must be enabled but may take any type; without it, every enabled endpoint taking the
 * type but the one a `webhook_endpoint.*` event tells of (as recordEvents owed it). The effect is
 * recorded in the same transaction.
 */
export async function redeliver(
  prisma: ReadClient,
  scope: EventScope,
  eventId: string,
  endpointId: string | undefined,
  work: UnitOfWork,
  now: Date,
): Promise<number> {
  return prisma.$transaction(async (tx) => {
    const event = await tx.event.findFirst({ where: { id: eventId, ...scope }, select: { id: true, type: true, data: true } });
    if (!event) throw new NotFoundError(`Event ${eventId} not found`);
    const about = event.type.startsWith('webhook_endpoint.') ? (event.data as { object?: { id?: string } } | null)?.object?.id : undefined;
    const endpoints = await tx.webhookEndpoint.findMany({
      where: endpointId !== undefined
        ? { id: endpointId, ...scope }
        : { ...scope, status: 'enabled', OR: [{ events: { isEmpty: true } }, { events: { has: event.type } }], ...(about !== undefined && { NOT: { id: about } }) },
      select: { id: true, status: true },
    });
    if (endpointId !== undefined) {
      const [endpoint] = endpoints;
      if (!endpoint) throw new NotFoundError(`Webhook endpoint ${endpointId} not found`);
      if (endpoint.status !== 'enabled') {
        throw new ConflictError(`Webhook endpoint ${endpointId} is disabled; enable it before redelivering to it`, endpoint.status);
      }
    }
    const { count } = await tx.webhookDelivery.createMany({
      data: endpoints.map((e) => ({ eventId: event.id, endpointId: e.id, nextAttemptAt: now, createdAt: now })),
    });
    await work.within(tx).recordEffect({ type: 'event', id: event.id });
    return count;
  });
}
