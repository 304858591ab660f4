/** Written in the change's own transaction, so a change never commits without its event nor an event without its change. */
import type { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../shared/db-errors.ts';
import { randomId } from '../shared/ids.ts';
import type { PreviousAttributes } from './previous-attributes.ts';
import type { ReadClient, ReadTx } from '../shared/db-errors.ts';

export const EVENT_TYPES = [
  'service.created',
  'service.updated',
  'service.cancelled',
  'request.created',
  'request.approved',
  'request.denied',
  'report.completed',
  'report.failed',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
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
  'webhook_endpoint.created': 'webhook_endpoint',
  'webhook_endpoint.updated': 'webhook_endpoint',
  'webhook_endpoint.deleted': 'webhook_endpoint',
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
  /** No default: a writer says which feed, so a sandbox writer cannot write into the live one by forgetting it. */
  mode: EventMode;
  /** A change of a record that existed (`*.updated`, `*.cancelled`, a decision, a run's end): what it changed, previous-attributes.ts; none for a creation. */
  previousAttributes?: PreviousAttributes;
  /** Deliver to this endpoint only, whatever its status and event types (a ping); by default every enabled endpoint of the broker and mode subscribed to the type. */
  endpointId?: string;
  /** Owed to every endpoint it would be owed to but this one: the endpoint a `webhook_endpoint.*` event tells of. */
  notTo?: string;
  /** The object is the contract's example, not a record (`sendExampleEvent`): `data.example: true`. */
  example?: true;
}

/** `evt_` and 24 base62 characters (≈ 143 bits): never guessed, never reused. */
export const newEventId = (): string => randomId('evt_', 24);

/** First key of the two-key advisory lock that orders one (broker, mode)'s feed. */
const FEED_LOCK_SPACE = 0x45_56_54; // "EVT"

/**
 * Held to the end of the transaction: the feed's writers of one (broker, mode) take their `seq` one
 * after another, each after the previous one committed, so `seq` order is commit order and a reader
 * of `seq > cursor` never passes an event still to commit (docs/architecture.md "The event feed").
 * Locked in key order, so two transactions writing for several feeds never deadlock; feeds whose
 * keys collide only share a lock.
 */
export async function lockFeeds(tx: Db, feeds: Array<{ brokerId: string; mode: EventMode }>): Promise<void> {
  const keys = [...new Set(feeds.map((f) => `${f.brokerId}:${f.mode}`))];
  await tx.$executeRaw`
    SELECT pg_advisory_xact_lock(${FEED_LOCK_SPACE}::int4, k)
      FROM (SELECT DISTINCT hashtext(f) AS k FROM unnest(${keys}::text[]) AS f) AS keys
     ORDER BY k`;
}

/** Events per statement: an import's 100,000 go in bounded statements (bench/README.md, `bench:import`). */
const EVENTS_PER_STATEMENT = 10_000;

/**
 * The deliveries they owe go in the same statement, so none is lost between a change and its
 * webhooks. `created_at` is stamped here, under the feed's lock, never before the feed's last event,
 * so it never goes back along the ascending feed; `at` dates the deliveries owed. Call it last in
 * its transaction: the lock is held until the transaction ends.
 */
export async function recordEvents(db: Db, events: NewEvent[], at = new Date()): Promise<string[]> {
  if (events.length === 0) return [];
  // Outside a transaction the lock would end with its own statement, so one is opened (a transaction's client has no `$connect`).
  if ('$connect' in db) return (db as ReadClient).$transaction((tx) => recordEvents(tx, events, at));
  const ids: string[] = [];
  for (let i = 0; i < events.length; i += EVENTS_PER_STATEMENT) {
    for (const id of await insertEvents(db as ReadTx, events.slice(i, i + EVENTS_PER_STATEMENT), at)) ids.push(id);
  }
  return ids;
}

async function insertEvents(tx: ReadTx, events: NewEvent[], at: Date): Promise<string[]> {
  const rows = events.map((e, ord) => ({
    ord,
    id: newEventId(),
    broker_id: e.brokerId,
    mode: e.mode,
    type: e.type,
    data: { object: e.object, ...(e.previousAttributes && { previous_attributes: e.previousAttributes }), ...(e.example && { example: true }) },
    endpoint_id: e.endpointId ?? null,
    not_to: e.notTo ?? null,
  }));
  await lockFeeds(tx, rows.map((r) => ({ brokerId: r.broker_id, mode: r.mode })));
  // One round trip for events and deliveries: the common case (a broker with no endpoints) costs an index probe.
  await tx.$executeRaw`
    WITH src AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        AS r("ord" int, "id" text, "broker_id" text, "mode" text, "type" text, "data" jsonb, "endpoint_id" text, "not_to" text)),
    stamp AS (
      SELECT GREATEST(clock_timestamp(), max(last."created_at")) AS "at"
        FROM (SELECT DISTINCT "broker_id", "mode"::"key_mode" AS "mode" FROM src) AS feed
        LEFT JOIN LATERAL (
          SELECT e."created_at" FROM "events" e
           WHERE e."broker_id" = feed."broker_id" AND e."mode" = feed."mode"
           ORDER BY e."seq" DESC LIMIT 1) AS last ON true),
    ev AS (
      INSERT INTO "events" ("id", "broker_id", "mode", "type", "data", "created_at")
      SELECT "id", "broker_id", "mode"::"key_mode", "type", "data", stamp."at" FROM src, stamp ORDER BY "ord"
      RETURNING "id", "broker_id", "mode", "type")
    INSERT INTO "webhook_deliveries" ("event_id", "endpoint_id", "next_attempt_at", "created_at")
    SELECT ev."id", w."id", ${at}, ${at}
      FROM ev
      JOIN src ON src."id" = ev."id"
      JOIN "webhook_endpoints" w ON w."broker_id" = ev."broker_id" AND w."mode" = ev."mode"
     WHERE CASE WHEN src."endpoint_id" IS NOT NULL THEN w."id" = src."endpoint_id"
                ELSE w."status" = 'enabled' AND (cardinality(w."events") = 0 OR ev."type" = ANY (w."events"))
                     AND w."id" IS DISTINCT FROM src."not_to" END`;
  return rows.map((r) => r.id);
}

/** An event with a fixed id and a wished date (the demo's contract examples), written without deliveries. */
export interface FixedEvent extends NewEvent {
  id: string;
  mode: EventMode;
  /** Kept only if it is not before the feed's last event; else the event is dated as that one. */
  wishedAt: Date;
}

/**
 * Written in order, each dated `max(wishedAt, the feed's last created_at)` under the feed's lock, so
 * even a back-dated example never goes back along the ascending feed; returns each event's date.
 * Owes no delivery: for a broker with no enabled endpoint (the demo's, as it is made).
 */
export async function recordFixedEvents(tx: ReadTx, events: FixedEvent[]): Promise<Date[]> {
  if (events.length === 0) return [];
  await lockFeeds(tx, events.map((e) => ({ brokerId: e.brokerId, mode: e.mode })));
  const dates: Date[] = [];
  for (const e of events) {
    const last = await tx.event.findFirst({ where: { brokerId: e.brokerId, mode: e.mode }, orderBy: { seq: 'desc' }, select: { createdAt: true } });
    const createdAt = last && last.createdAt > e.wishedAt ? last.createdAt : e.wishedAt;
    const data = e.previousAttributes ? { object: e.object, previous_attributes: e.previousAttributes } : { object: e.object };
    await tx.event.create({ data: { id: e.id, brokerId: e.brokerId, mode: e.mode, type: e.type, data: data as Prisma.InputJsonObject, createdAt } });
    dates.push(createdAt);
  }
  return dates;
}

/**
 * Deletes the events written before `before`, a batch at a time; how many went. The one path that
 * deletes events: the database refuses any other (the `events_append_only` trigger,
 * migration 20261202110000_events_sequence), and lets this by the setting it makes for its transaction.
 */
export async function deleteEventsBefore(db: Db, before: Date, batch = 5000): Promise<number> {
  if ('$connect' in db) return (db as ReadClient).$transaction((tx) => deleteEventsBefore(tx, before, batch));
  await db.$executeRaw`SELECT set_config('client_api.events_retention', 'purge', true)`;
  const deleted = await db.$executeRaw`
    DELETE FROM "events" WHERE "id" IN (
      SELECT "id" FROM "events" WHERE "created_at" < ${before} ORDER BY "created_at" LIMIT ${batch})`;
  await db.$executeRaw`SELECT set_config('client_api.events_retention', '', true)`;
  return deleted;
}
