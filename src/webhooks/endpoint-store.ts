/**
 * The broker's webhook endpoints as stored: every read and write is scoped to one broker and one
 * mode (a live key's endpoints or a sandbox key's), so an endpoint of another broker or mode is
 * not found, exactly like an unknown one. The secrets arrive here already encrypted. Each change
 * records its effect through `work` in its own transaction (the request's Idempotency-Key), so a
 * retried request is never carried out twice, and its `webhook_endpoint.*` event (endpointChanged).
 */
import type { WebhookEndpoint } from '../../generated/prisma/client.ts';
import { previousAttributes } from '../events/previous-attributes.ts';
import { lockFeeds, recordEvents, type EventMode, type NewEvent } from '../events/store.ts';
import { writeWithEvents, type Changed, type WriteTx } from '../events/writes.ts';
import { ConflictError, InvalidValueError, NotFoundError } from '../shared/errors.ts';
import { randomId } from '../shared/ids.ts';
import type { UnitOfWork } from '../shared/unit-of-work.ts';
import { endpointData } from './endpoint-data.ts';
import type { ReadClient, ReadTx } from '../shared/db-errors.ts';

export type EndpointRow = WebhookEndpoint;

/** Whose endpoints: one broker's, of one mode. */
export interface EndpointScope {
  brokerId: string;
  mode: EventMode;
}

/** `we_` and 24 base62 characters (≈ 143 bits). */
export const newEndpointId = (): string => randomId('we_', 24);

/** How long an old secret keeps signing beside the new one after a rotation. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;

export interface NewEndpoint {
  url: string;
  events: string[];
  description: string | null;
  /** Encrypted `whsec_…`. */
  secret: string;
}

export interface EndpointChange {
  url?: string | undefined;
  events?: string[] | undefined;
  description?: string | null | undefined;
  status?: 'enabled' | 'disabled' | undefined;
}

export const BROKER_DISABLED_REASON = 'disabled by the broker';

/** The refusals of a missing or disabled endpoint, worded once: the sandbox's scenarios answer them too (sandbox.ts). */
export const notFound = (id: string) => new NotFoundError(`Webhook endpoint ${id} not found`);
export const recoverRefused = (id: string, status: string) =>
  new ConflictError(`Webhook endpoint ${id} is ${status}; enable it before recovering its deliveries`, status);

/**
 * Every transaction that changes an endpoint starts here: the feed's lock first, then the endpoint's
 * row. Taken the other way round, a delete holding the row would wait for the feed's lock while an
 * event's writer holding that lock waits for the row (its deliveries' key share lock): a deadlock.
 */
function endpointChange<T>(prisma: ReadClient, scope: EndpointScope, change: (tx: WriteTx) => Promise<Changed<T>>): Promise<T> {
  return writeWithEvents(prisma, async (tx) => {
    await lockFeeds(tx, [scope]);
    return change(tx);
  });
}

/**
 * The change's event, last in its transaction: `webhook_endpoint.created` (no `before`), `.deleted`
 * (no `after`; the endpoint as it was) or `.updated` with what changed. Its object is the endpoint as
 * getWebhookEndpoint shows it, never a secret; the endpoint itself is never owed it (a new one
 * would get its own creation before its secret could be deployed).
 */
export async function endpointChanged(
  tx: ReadTx,
  scope: EndpointScope,
  change: { before?: EndpointRow; after?: EndpointRow },
  now: Date,
): Promise<void> {
  await recordEvents(tx, [endpointEvent(scope, change, now)], now);
}

/** endpointChanged's event, for a writer that records its events together (`cli demo`). */
export function endpointEvent(scope: EndpointScope, change: { before?: EndpointRow | null; after?: EndpointRow }, now: Date): NewEvent {
  const before = change.before ?? undefined;
  const { after } = change;
  const base = { brokerId: scope.brokerId, mode: scope.mode, notTo: (after ?? before)!.id };
  if (before === undefined) return { ...base, type: 'webhook_endpoint.created', object: endpointData(after!, now) };
  if (after === undefined) return { ...base, type: 'webhook_endpoint.deleted', object: endpointData(before, now) };
  const object = endpointData(after, now);
  return { ...base, type: 'webhook_endpoint.updated', object, previousAttributes: previousAttributes(endpointData(before, now), object) };
}

/**
 * Creates an endpoint unless the broker has `maxEndpoints` of this mode already (`400
 * invalid_parameter` with `details.max_endpoints`). A lock per broker and mode makes concurrent
 * creates count one after another, so together they cannot pass the bound either.
 */
export async function createEndpoint(
  prisma: ReadClient,
  scope: EndpointScope,
  endpoint: NewEndpoint,
  work: UnitOfWork,
  now: Date,
  maxEndpoints: number,
): Promise<EndpointRow> {
  return endpointChange(prisma, scope, async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('webhook_endpoints.' || ${scope.brokerId} || '.' || ${scope.mode}))`;
    const count = await tx.webhookEndpoint.count({ where: { brokerId: scope.brokerId, mode: scope.mode } });
    if (count >= maxEndpoints) {
      const reason = `a broker may have at most ${maxEndpoints} ${scope.mode} webhook endpoints (WEBHOOK_ENDPOINTS_PER_BROKER); delete one to add another`;
      throw new InvalidValueError('url', 'body', 'endpoints_per_broker', reason, { max_endpoints: maxEndpoints }, `Too many webhook endpoints: ${reason}`);
    }
    const row = await tx.webhookEndpoint.create({
      data: { id: newEndpointId(), brokerId: scope.brokerId, mode: scope.mode, ...endpoint, createdAt: now, updatedAt: now },
    });
    await work.within(tx).recordEffect({ type: 'webhook_endpoint', id: row.id });
    return { value: row, events: [endpointEvent(scope, { after: row }, now)], at: now };
  });
}

export async function listEndpoints(
  prisma: ReadClient,
  scope: EndpointScope,
  page: { limit: number; offset: number },
): Promise<{ rows: EndpointRow[]; total: number }> {
  const where = { brokerId: scope.brokerId, mode: scope.mode };
  const [rows, total] = await Promise.all([
    prisma.webhookEndpoint.findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], take: page.limit, skip: page.offset }),
    prisma.webhookEndpoint.count({ where }),
  ]);
  return { rows, total };
}

export async function findEndpoint(prisma: ReadClient, scope: EndpointScope, id: string): Promise<EndpointRow> {
  const row = await prisma.webhookEndpoint.findFirst({ where: { id, brokerId: scope.brokerId, mode: scope.mode } });
  if (!row) throw notFound(id);
  return row;
}

/**
 * Applies `change`. Enabling clears the reason and the failure figures, so an endpoint that was
 * disabled for failing starts afresh; disabling records that the broker did it, unless it is
 * disabled already (the reason it has, a 410 say, is the one worth keeping).
 */
export async function updateEndpoint(
  prisma: ReadClient,
  scope: EndpointScope,
  id: string,
  change: EndpointChange,
  work: UnitOfWork,
  now: Date,
): Promise<EndpointRow> {
  return endpointChange(prisma, scope, async (tx) => {
    const current = await lockedEndpoint(tx, scope, id);
    const data = {
      ...(change.url !== undefined && { url: change.url }),
      ...(change.events !== undefined && { events: change.events }),
      ...(change.description !== undefined && { description: change.description }),
      ...statusChange(change.status, current.status),
      updatedAt: now,
    };
    const row = await tx.webhookEndpoint.update({ where: { id }, data });
    await work.within(tx).recordEffect({ type: 'webhook_endpoint', id });
    return { value: row, events: [endpointEvent(scope, { before: current, after: row }, now)], at: now };
  });
}

/** The endpoint's row, locked against concurrent changes and delivery attempts until the transaction ends. */
async function lockedEndpoint(tx: ReadTx, scope: EndpointScope, id: string): Promise<EndpointRow> {
  const [locked] = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT "id" FROM "webhook_endpoints"
     WHERE "id" = ${id} AND "broker_id" = ${scope.brokerId} AND "mode" = ${scope.mode}::"key_mode" FOR UPDATE`;
  if (!locked) throw notFound(id);
  return tx.webhookEndpoint.findUniqueOrThrow({ where: { id } });
}

function statusChange(wanted: EndpointChange['status'], current: 'enabled' | 'disabled') {
  if (wanted === 'enabled') return { status: 'enabled' as const, disabledReason: null, failingSince: null, consecutiveFailures: 0 };
  if (wanted === 'disabled' && current === 'enabled') return { status: 'disabled' as const, disabledReason: BROKER_DISABLED_REASON };
  return {};
}

/** Deletes the endpoint (its deliveries and attempts go with it); returns it as it was. */
export async function deleteEndpoint(prisma: ReadClient, scope: EndpointScope, id: string, work: UnitOfWork, now: Date): Promise<EndpointRow> {
  return endpointChange(prisma, scope, async (tx) => {
    const row = await lockedEndpoint(tx, scope, id);
    await tx.webhookEndpoint.delete({ where: { id } });
    await work.within(tx).recordEffect({ type: 'webhook_endpoint', id });
    return { value: row, events: [endpointEvent(scope, { before: row }, now)], at: now };
  });
}

/**
 * A new (encrypted) secret; the current one becomes the previous one, which keeps signing until
 * PREVIOUS_SECRET_TTL_MS from now. The row is locked so two rotations cannot both keep the same old secret.
 */
export async function rotateSecret(
  prisma: ReadClient,
  scope: EndpointScope,
  id: string,
  secret: string,
  work: UnitOfWork,
  now: Date,
): Promise<EndpointRow> {
  return endpointChange(prisma, scope, async (tx) => {
    const current = await lockedEndpoint(tx, scope, id);
    await work.within(tx).recordEffect({ type: 'webhook_endpoint', id });
    const row = await tx.webhookEndpoint.update({
      where: { id },
      data: { secret, previousSecret: current.secret, previousSecretExpiresAt: new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS), updatedAt: now },
    });
    return { value: row, events: [endpointEvent(scope, { before: current, after: row }, now)], at: now };
  });
}

/** Records a `ping` event owed to this endpoint only (whatever its status and types); its id. */
export async function recordPing(prisma: ReadClient, scope: EndpointScope, id: string, work: UnitOfWork, now: Date): Promise<string> {
  return prisma.$transaction(async (tx) => {
    const row = await tx.webhookEndpoint.findFirst({ where: { id, brokerId: scope.brokerId, mode: scope.mode }, select: { id: true } });
    if (!row) throw notFound(id);
    const [eventId] = await recordEvents(tx, [{ brokerId: scope.brokerId, type: 'ping', mode: scope.mode, endpointId: id, object: pingObject(id) }], now);
    await work.within(tx).recordEffect({ type: 'event', id: eventId! });
    return eventId!;
  });
}

/** The object of a ping event. */
export const pingObject = (endpointId: string) => ({ object: 'ping' as const, endpoint_id: endpointId });

/** The most failed deliveries one recover queues again: one bounded statement a call; `hasMore` says to call again. */
export const RECOVER_LIMIT = 10_000;

export interface Recovery {
  queued: number;
  /** More deliveries that failed since `since` remain beyond `limit`. */
  hasMore: boolean;
}

/**
 * Queues again the deliveries to an enabled endpoint that ended failed at or after `since`, at most
 * `limit`, oldest failure first: each gets a new pending delivery of its event, due now, with a
 * retry schedule of its own, as a redelivery does, and the failed one keeps its attempts. Only an
 * event's last delivery to the endpoint counts, so what was queued again already (by a recover or
 * a redelivery) is not queued twice. The endpoint's row is locked: two recovers of one endpoint
 * run one after the other, and the second sees what the first queued.
 */
export async function recoverFailedDeliveries(
  prisma: ReadClient,
  scope: EndpointScope,
  id: string,
  since: Date,
  work: UnitOfWork,
  limit = RECOVER_LIMIT,
): Promise<Recovery> {
  return prisma.$transaction(async (tx) => {
    const [endpoint] = await tx.$queryRaw<Array<{ status: string }>>`
      SELECT "status"::text AS "status" FROM "webhook_endpoints"
       WHERE "id" = ${id} AND "broker_id" = ${scope.brokerId} AND "mode" = ${scope.mode}::"key_mode" FOR UPDATE`;
    if (!endpoint) throw notFound(id);
    if (endpoint.status !== 'enabled') throw recoverRefused(id, endpoint.status);
    // One statement: the candidates (one more than the bound, to tell whether more remain) and the inserts.
    const [counts] = await tx.$queryRaw<Array<{ queued: number; found: number }>>`
      WITH failed AS (
        SELECT d."id", d."event_id", d."completed_at" FROM "webhook_deliveries" d
         WHERE d."endpoint_id" = ${id} AND d."status" = 'failed' AND d."completed_at" >= ${since}
           AND NOT EXISTS (
             SELECT 1 FROM "webhook_deliveries" n
              WHERE n."event_id" = d."event_id" AND n."endpoint_id" = d."endpoint_id" AND n."id" > d."id")
         ORDER BY d."completed_at", d."id"
         LIMIT ${limit + 1}::int),
      queued AS (
        INSERT INTO "webhook_deliveries" ("event_id", "endpoint_id", "next_attempt_at", "created_at")
        SELECT f."event_id", ${id}, now(), now()
          FROM (SELECT * FROM failed ORDER BY "completed_at", "id" LIMIT ${limit}::int) f
         ORDER BY f."completed_at", f."id"
        RETURNING 1)
      SELECT (SELECT count(*)::int FROM queued) AS "queued", (SELECT count(*)::int FROM failed) AS "found"`;
    await work.within(tx).recordEffect({ type: 'webhook_endpoint', id });
    return { queued: counts?.queued ?? 0, hasMore: (counts?.found ?? 0) > limit };
  });
}
