/**
 * The records of webhook delivery: which deliveries are due and free to claim, what one attempt
 * needs, and each attempt's outcome with the delivery's and the endpoint's new state, written in
 * one transaction. The database is the record; a job in Redis is only a way to get an attempt made.
 */
import { Prisma } from '../../generated/prisma/client.ts';
import { lockFeeds, type EventMode } from '../events/store.ts';
import { endpointChanged } from './endpoint-store.ts';
import { shouldDisable } from './schedule.ts';
import type { ReadClient, ReadTx } from '../shared/db-errors.ts';

/** A delivery given up: failed, nothing more due, no lease, ended now. */
const GIVEN_UP = Prisma.sql`"status" = 'failed', "next_attempt_at" = NULL, "leased_until" = NULL, "leased_by" = NULL, "completed_at" = now()`;

/** A delivery leased for one attempt: its job is `attempt` `number` (attempts made so far + 1) under this lease. */
export interface ClaimedDelivery {
  deliveryId: string;
  number: number;
  /** The lease's end as written: it names the lease, so a later claim of the delivery is told apart. */
  leasedUntil: Date;
}

export interface ClaimOptions {
  /** At most this many deliveries in this claim. */
  limit: number;
  /** At most this many deliveries under a lease at once in all, counting those leased before. */
  inFlight: number;
  /** At most this many of one endpoint under a lease at once. */
  perEndpoint: number;
  /** At most this many of one broker in one mode (its live ones, or its test ones) under a lease at once. */
  perBroker: number;
  /** At most this many test-mode deliveries under a lease at once, every broker's together. */
  testMode: number;
  /** How long a claim holds: an attempt's timeout and a margin; a lapsed lease is claimed again. */
  leaseMs: number;
  /** The claiming worker's id (src/webhooks/heartbeat.ts), or null without heartbeats. */
  leasedBy: string | null;
}

/**
 * Leases due deliveries (pending, due, no live lease) for their next attempt, fairly, within the
 * bounds of ClaimOptions counting the leases held already: every broker's first delivery comes
 * before anyone's second (a rank per broker and mode), so one broker's slow or dead endpoints hold
 * a bounded share of the slots, never the others'. A disabled endpoint's deliveries are not
 * claimed, except pings. Safe in several workers at once: rows are locked as they are taken
 * (SKIP LOCKED), and an advisory lock makes claims one at a time, so two workers' counts of
 * leases do not both see room for the same slots.
 */
export async function claimDue(prisma: ReadClient, o: ClaimOptions): Promise<ClaimedDelivery[]> {
  return prisma.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('webhook_deliveries.claim'))`;
    const rows = await tx.$queryRaw<Array<{ id: string; attempts: number; leased_until: Date }>>`
      WITH leased AS (
        SELECT l."endpoint_id", w."broker_id", w."mode"
          FROM "webhook_deliveries" l JOIN "webhook_endpoints" w ON w."id" = l."endpoint_id"
         WHERE l."status" = 'pending' AND l."leased_until" >= now()),
      candidates AS (
        SELECT d."id", d."next_attempt_at", w."broker_id", w."mode"
          FROM "webhook_endpoints" w
          CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM leased WHERE leased."endpoint_id" = w."id") held
          CROSS JOIN LATERAL (
            SELECT d."id", d."next_attempt_at" FROM "webhook_deliveries" d
              JOIN "events" e ON e."id" = d."event_id"
             WHERE d."endpoint_id" = w."id" AND d."status" = 'pending' AND d."next_attempt_at" <= now()
               AND (d."leased_until" IS NULL OR d."leased_until" < now())
               AND (w."status" = 'enabled' OR e."type" = 'ping')
             ORDER BY d."next_attempt_at", d."id"
             LIMIT GREATEST(${o.perEndpoint}::int - held.n, 0)) d
         WHERE EXISTS (
           SELECT 1 FROM "webhook_deliveries" x
            WHERE x."endpoint_id" = w."id" AND x."status" = 'pending' AND x."next_attempt_at" <= now())),
      by_broker AS (
        SELECT c.*, row_number() OVER (PARTITION BY c."broker_id", c."mode" ORDER BY c."next_attempt_at", c."id") AS "rank"
          FROM candidates c),
      within_broker AS (
        SELECT b.*, row_number() OVER (PARTITION BY b."mode" ORDER BY b."rank", b."next_attempt_at", b."id") AS "mode_rank"
          FROM by_broker b
         WHERE b."rank" <= ${o.perBroker}::int - (SELECT count(*) FROM leased WHERE leased."broker_id" = b."broker_id" AND leased."mode" = b."mode")),
      chosen AS (
        SELECT m."id" FROM within_broker m
         WHERE m."mode" <> 'test' OR m."mode_rank" <= ${o.testMode}::int - (SELECT count(*) FROM leased WHERE leased."mode" = 'test')
         ORDER BY m."rank", m."next_attempt_at", m."id"
         LIMIT GREATEST(LEAST(${o.limit}::int, ${o.inFlight}::int - (SELECT count(*)::int FROM leased)), 0))
      UPDATE "webhook_deliveries" SET "leased_until" = now() + ${o.leaseMs}::int * interval '1 millisecond', "leased_by" = ${o.leasedBy}::text
       WHERE "id" IN (
         SELECT "id" FROM "webhook_deliveries"
          WHERE "id" IN (SELECT "id" FROM chosen) AND "status" = 'pending'
            AND ("leased_until" IS NULL OR "leased_until" < now())
            FOR UPDATE SKIP LOCKED)
      RETURNING "id"::text AS "id", "attempts", "leased_until"`;
    return rows.map((r) => ({ deliveryId: r.id, number: r.attempts + 1, leasedUntil: r.leased_until }));
  });
}

/**
 * Whether any delivery is pending and due (leased or not): one probe of the (status,
 * next_attempt_at) index, so that a dispatcher with nothing to do costs one cheap query a tick,
 * not a claim's transaction (on the embedded database every query takes the API's one session).
 */
export async function anyDue(prisma: ReadClient): Promise<boolean> {
  const [row] = await prisma.$queryRaw<Array<{ due: boolean }>>`
    SELECT EXISTS (SELECT 1 FROM "webhook_deliveries" WHERE "status" = 'pending' AND "next_attempt_at" <= now()) AS "due"`;
  return row?.due === true;
}

/**
 * Ends the pending deliveries of disabled endpoints as failed (pings excepted: they are sent
 * whatever the status): an endpoint disabled by its broker, by a 410 or for failing too long gets
 * nothing it was owed before, and nothing piles up for the day it is enabled again. How many ended.
 */
export async function failDeliveriesOfDisabledEndpoints(prisma: ReadClient): Promise<number> {
  return prisma.$executeRaw`
    UPDATE "webhook_deliveries" d
       SET ${GIVEN_UP}
      FROM "webhook_endpoints" w, "events" e
     WHERE w."status" = 'disabled' AND d."endpoint_id" = w."id" AND d."status" = 'pending'
       AND e."id" = d."event_id" AND e."type" <> 'ping'`;
}

/** What one attempt needs: the delivery, its event and its endpoint (secrets still encrypted). */
export async function findDelivery(prisma: ReadClient, deliveryId: string) {
  return prisma.webhookDelivery.findUnique({
    where: { id: BigInt(deliveryId) },
    include: { event: true, endpoint: true },
  });
}

export type DeliveryRecord = NonNullable<Awaited<ReturnType<typeof findDelivery>>>;

export interface HeldLease {
  deliveryId: string;
  /** The attempt the lease was taken for. */
  number: number;
  leasedUntil: Date;
  /** The attempt's longest run: a lease with less left than this would lapse under it. */
  forMs: number;
  /** The worker about to send (null without heartbeats): the lease is its from now on. */
  by: string | null;
}

/**
 * Takes the lease over for the worker about to send, if the delivery is still pending under this
 * very lease, for this attempt, with `forMs` left on it; whether it did. A job queued for an older
 * claim, or one that waited until its lease nearly ran out, must not send while the delivery is
 * (or is about to be) claimed again; and the lease names whoever sends, whoever claimed it.
 */
export async function takeLease(prisma: ReadClient, o: HeldLease): Promise<boolean> {
  const taken = await prisma.$executeRaw`
    UPDATE "webhook_deliveries" SET "leased_by" = ${o.by}::text
     WHERE "id" = ${BigInt(o.deliveryId)} AND "status" = 'pending' AND "attempts" = ${o.number - 1}::int
       AND "leased_until" = ${o.leasedUntil} AND "leased_until" >= now() + ${o.forMs}::int * interval '1 millisecond'`;
  return taken === 1;
}

/** The workers holding live leases. */
export async function leaseHolders(prisma: ReadClient): Promise<string[]> {
  const rows = await prisma.$queryRaw<Array<{ by: string }>>`
    SELECT DISTINCT "leased_by" AS "by" FROM "webhook_deliveries"
     WHERE "status" = 'pending' AND "leased_until" >= now() AND "leased_by" IS NOT NULL`;
  return rows.map((r) => r.by);
}

/**
 * Releases the live leases of these workers (their heartbeat stopped): the deliveries are claimed
 * again at once, and their old jobs, fenced on the lease, neither send nor record. How many.
 */
export async function releaseLeasesOf(prisma: ReadClient, workerIds: readonly string[]): Promise<number> {
  if (workerIds.length === 0) return 0;
  return prisma.$executeRaw`
    UPDATE "webhook_deliveries" SET "leased_until" = NULL, "leased_by" = NULL
     WHERE "status" = 'pending' AND "leased_until" >= now() AND "leased_by" IN (${Prisma.join([...workerIds])})`;
}

export interface AttemptOutcome {
  deliveryId: string;
  endpointId: string;
  /** The attempt's number: the delivery's attempts so far + 1. */
  number: number;
  /** The lease the attempt was made under: recorded only while the delivery still holds it. */
  leasedUntil: Date;
  attemptedAt: Date;
  ok: boolean;
  gone: boolean;
  statusCode?: number | undefined;
  error?: string | undefined;
  durationMs: number;
  /** The first bytes of the answer's body (deliver's `excerpt`). */
  responseExcerpt?: string | undefined;
  /** The wait before the next attempt from the retry schedule, or null when it has run out. */
  nextDelayMs: number | null;
  disableAfterHours: number;
}

/** What recording an attempt did: nothing (a repeated job), or the delivery's new status and whether the endpoint was disabled. */
export type Recorded = { recorded: false } | { recorded: true; status: 'pending' | 'delivered' | 'failed'; disabledReason?: string };

/** The reason written on an endpoint that answered 410 Gone. */
export const GONE_REASON = 'the endpoint answered 410 Gone';

/** The reason written on an endpoint that failed for WEBHOOK_DISABLE_AFTER_HOURS. */
export const failingReason = (hours: number) => `every delivery failed for ${hours} hours`;

/**
 * Records an attempt and its consequences in one transaction: the attempt under its number, only
 * while the delivery is pending under the attempt's lease (a repeated job, or one whose lease
 * lapsed and was claimed again, inserts nothing and changes nothing), the delivery's new
 * state (delivered; pending again at its next time; failed when the schedule ran out or the
 * endpoint is gone), its lease cleared, and the endpoint's figures (no event tells of them, so
 * they leave `updated_at` alone); a 410, or failing for `disableAfterHours`, disables the endpoint
 * with the reason, records `webhook_endpoint.updated` and fails its pending deliveries.
 */
export async function recordAttempt(prisma: ReadClient, o: AttemptOutcome): Promise<Recorded> {
  return prisma.$transaction(async (tx) => {
    const id = BigInt(o.deliveryId);
    const mayDisable = await feedLockedIfDisabling(tx, o);
    // The endpoint's row first, locked, before the attempt's row: concurrent attempts change its
    // figures one at a time, and deleting the endpoint (which locks it, then its deliveries) waits
    // for this transaction or makes it record nothing, where locking in the other order deadlocked.
    const [endpoint] = await tx.$queryRaw<Array<{ failing_since: Date | null; status: string }>>`
      SELECT "failing_since", "status"::text AS "status" FROM "webhook_endpoints" WHERE "id" = ${o.endpointId} FOR UPDATE`;
    // The delivery's row next, locked while it still holds the attempt's lease: a claim skips it
    // until this commits, and a claim that came first leaves it with another lease, recorded by no one here.
    const held = await tx.$queryRaw<unknown[]>`
      SELECT 1 FROM "webhook_deliveries"
       WHERE "id" = ${id} AND "status" = 'pending' AND "attempts" = ${o.number - 1}::int AND "leased_until" = ${o.leasedUntil}
         FOR UPDATE`;
    if (held.length === 0) return { recorded: false };
    const inserted = await tx.$queryRaw<unknown[]>`
      INSERT INTO "webhook_attempts" ("delivery_id", "number", "attempted_at", "status_code", "error", "duration_ms", "response_excerpt")
      SELECT ${id}, ${o.number}::int, ${o.attemptedAt}, ${o.statusCode ?? null}::int, ${o.error ?? null}, ${o.durationMs}::int, ${o.responseExcerpt ?? null}::text
       WHERE EXISTS (SELECT 1 FROM "webhook_deliveries" WHERE "id" = ${id} AND "attempts" = ${o.number - 1}::int)
      ON CONFLICT ("delivery_id", "number") DO NOTHING
      RETURNING 1`;
    if (inserted.length === 0) return { recorded: false };
    const status = o.ok ? 'delivered' : o.gone || o.nextDelayMs === null ? 'failed' : 'pending';
    await tx.$executeRaw`
      UPDATE "webhook_deliveries"
         SET "attempts" = ${o.number}::int,
             "status" = ${status}::"webhook_delivery_status",
             "next_attempt_at" = CASE WHEN ${status} = 'pending' THEN now() + ${o.nextDelayMs ?? 0}::int * interval '1 millisecond' END,
             "leased_until" = NULL, "leased_by" = NULL,
             "completed_at" = CASE WHEN ${status} = 'pending' THEN NULL ELSE now() END
       WHERE "id" = ${id}`;
    if (!endpoint) return { recorded: true, status };
    if (o.ok) {
      await tx.$executeRaw`
        UPDATE "webhook_endpoints" SET "last_success_at" = ${o.attemptedAt}, "failing_since" = NULL, "consecutive_failures" = 0
         WHERE "id" = ${o.endpointId}`;
      return { recorded: true, status };
    }
    const failingSince = endpoint.failing_since ?? o.attemptedAt;
    const disabledReason =
      endpoint.status !== 'enabled' || !mayDisable
        ? undefined
        : o.gone
          ? GONE_REASON
          : shouldDisable({ failingSince, now: new Date(), disableAfterHours: o.disableAfterHours })
            ? failingReason(o.disableAfterHours)
            : undefined;
    const before = disabledReason === undefined ? undefined : await tx.webhookEndpoint.findUniqueOrThrow({ where: { id: o.endpointId } });
    await tx.$executeRaw`
      UPDATE "webhook_endpoints"
         SET "last_failure_at" = ${o.attemptedAt}, "failing_since" = ${failingSince},
             "consecutive_failures" = "consecutive_failures" + 1,
             "updated_at" = CASE WHEN ${disabledReason ?? null}::text IS NULL THEN "updated_at" ELSE now() END,
             "status" = CASE WHEN ${disabledReason ?? null}::text IS NULL THEN "status" ELSE 'disabled' END,
             "disabled_reason" = COALESCE(${disabledReason ?? null}::text, "disabled_reason")
       WHERE "id" = ${o.endpointId}`;
    if (before !== undefined) {
      const after = await tx.webhookEndpoint.findUniqueOrThrow({ where: { id: o.endpointId } });
      await tx.$executeRaw`
        UPDATE "webhook_deliveries" SET ${GIVEN_UP}
         WHERE "endpoint_id" = ${o.endpointId} AND "status" = 'pending'`;
      await endpointChanged(tx, { brokerId: after.brokerId, mode: after.mode }, { before, after }, new Date());
    }
    return { recorded: true, status: disabledReason !== undefined ? 'failed' : status, ...(disabledReason !== undefined ? { disabledReason } : {}) };
  });
}

/**
 * Whether this attempt may disable its endpoint, and if so the endpoint's feed locked before its row
 * (the order every endpoint change keeps, endpoint-store.ts). Judged before the row is locked: an
 * endpoint enabled again meanwhile is disabled by a later failure, not by this one.
 */
async function feedLockedIfDisabling(tx: ReadTx, o: AttemptOutcome): Promise<boolean> {
  if (o.ok) return false;
  const [seen] = await tx.$queryRaw<Array<{ broker_id: string; mode: EventMode; status: string; failing_since: Date | null }>>`
    SELECT "broker_id", "mode"::text AS "mode", "status"::text AS "status", "failing_since" FROM "webhook_endpoints" WHERE "id" = ${o.endpointId}`;
  if (!seen || seen.status !== 'enabled') return false;
  if (!o.gone && !shouldDisable({ failingSince: seen.failing_since ?? o.attemptedAt, now: new Date(), disableAfterHours: o.disableAfterHours })) return false;
  await lockFeeds(tx, [{ brokerId: seen.broker_id, mode: seen.mode }]);
  return true;
}

/** Ends one delivery as failed without an attempt (its endpoint was disabled after it was claimed). */
export async function failDelivery(prisma: ReadClient, deliveryId: string, attempts: number): Promise<void> {
  await prisma.$executeRaw`
    UPDATE "webhook_deliveries" SET ${GIVEN_UP}
     WHERE "id" = ${BigInt(deliveryId)} AND "status" = 'pending' AND "attempts" = ${attempts}::int`;
}
