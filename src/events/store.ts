/**
 * The events: what changed (a service, a service request) or ended (a report run), written in the
 * transaction of the change itself by whoever makes the change (an operation, the admin CLI, the
 * worker), so that a change never commits without its event nor an event without its change.
 * Delivery (webhooks) reads them from here; they are kept EVENT_RETENTION_DAYS days.
 */
import type { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../shared/db-errors.ts';
import { randomId } from '../shared/ids.ts';

export const EVENT_TYPES = [
  'service.created',
  'service.updated',
  'service.cancelled',
  'request.created',
  'request.approved',
  'request.denied',
  'report.completed',
  'report.failed',
  'ping',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** `live` for what live keys and the business's own tools change, `test` for the sandbox's simulations. */
export type EventMode = 'live' | 'test';

/** Events older than this are deleted by the worker. */
export const EVENT_RETENTION_DAYS = 30;

export interface NewEvent {
  brokerId: string;
  type: EventType;
  /** The object as the API's own answers show it (never credentials). */
  object: object;
  mode?: EventMode;
}

/** `evt_` and 24 base62 characters (≈ 143 bits): never guessed, never reused. */
export const newEventId = (): string => randomId('evt_', 24);

/** Writes `events` through `tx`, the transaction of the change they tell of; they all share its moment. */
export async function recordEvents(tx: Db, events: NewEvent[], at = new Date()): Promise<void> {
  if (events.length === 0) return;
  await tx.event.createMany({
    data: events.map((e) => ({
      id: newEventId(),
      brokerId: e.brokerId,
      mode: e.mode ?? 'live',
      type: e.type,
      data: { object: e.object } as Prisma.InputJsonObject,
      createdAt: at,
    })),
  });
}

/** Deletes the events written before `before`, a batch at a time; how many went. */
export async function deleteEventsBefore(db: Db, before: Date, batch = 5000): Promise<number> {
  return db.$executeRaw`
    DELETE FROM "events" WHERE "id" IN (
      SELECT "id" FROM "events" WHERE "created_at" < ${before} ORDER BY "created_at" LIMIT ${batch})`;
}
