/** Written in the change's own transaction, so a change never commits without its event nor an event without its change. */
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

/** The `object` of what each event type carries (openapi.yaml EventObject's discriminator). */
const OBJECT_OF_TYPE: Record<EventType, string> = {
  'service.created': 'service',
  'service.updated': 'service',
  'service.cancelled': 'service',
  'request.created': 'service_request',
  'request.approved': 'service_request',
  'request.denied': 'service_request',
  'report.completed': 'report',
  'report.failed': 'report',
  ping: 'ping',
};

/**
 * A stored event's object as answers and deliveries show it, `object` first: jsonb keeps no key
 * order, and the events recorded before objects had `object` lack it (their type names it).
 */
export function shownObject(type: string, stored: unknown): Record<string, unknown> {
  const object = (stored ?? {}) as Record<string, unknown>;
  return { object: object.object ?? OBJECT_OF_TYPE[type as EventType], ...object };
}

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
  /** Deliver to this endpoint only, whatever its status and event types (a ping); by default every enabled endpoint of the broker and mode subscribed to the type. */
  endpointId?: string;
}

/** `evt_` and 24 base62 characters (≈ 143 bits): never guessed, never reused. */
export const newEventId = (): string => randomId('evt_', 24);

/** The deliveries they owe go in the same statement, so none is lost between a change and its webhooks. */
export async function recordEvents(tx: Db, events: NewEvent[], at = new Date()): Promise<string[]> {
  if (events.length === 0) return [];
  const rows = events.map((e, ord) => ({
    ord,
    id: newEventId(),
    broker_id: e.brokerId,
    mode: e.mode ?? 'live',
    type: e.type,
    data: { object: e.object },
    endpoint_id: e.endpointId ?? null,
  }));
  // One round trip for events and deliveries: the common case (a broker with no endpoints) costs an index probe.
  await tx.$executeRaw`
    WITH src AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        AS r("ord" int, "id" text, "broker_id" text, "mode" text, "type" text, "data" jsonb, "endpoint_id" text)),
    ev AS (
      INSERT INTO "events" ("id", "broker_id", "mode", "type", "data", "created_at")
      SELECT "id", "broker_id", "mode"::"key_mode", "type", "data", ${at} FROM src ORDER BY "ord"
      RETURNING "id", "broker_id", "mode", "type")
    INSERT INTO "webhook_deliveries" ("event_id", "endpoint_id", "next_attempt_at", "created_at")
    SELECT ev."id", w."id", ${at}, ${at}
      FROM ev
      JOIN src ON src."id" = ev."id"
      JOIN "webhook_endpoints" w ON w."broker_id" = ev."broker_id" AND w."mode" = ev."mode"
     WHERE CASE WHEN src."endpoint_id" IS NOT NULL THEN w."id" = src."endpoint_id"
                ELSE w."status" = 'enabled' AND (cardinality(w."events") = 0 OR ev."type" = ANY (w."events")) END`;
  return rows.map((r) => r.id);
}

/** Deletes the events written before `before`, a batch at a time; how many went. */
export async function deleteEventsBefore(db: Db, before: Date, batch = 5000): Promise<number> {
  return db.$executeRaw`
    DELETE FROM "events" WHERE "id" IN (
      SELECT "id" FROM "events" WHERE "created_at" < ${before} ORDER BY "created_at" LIMIT ${batch})`;
}
