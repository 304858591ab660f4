/**
 * In the database, so every API process sees the same keys. The effect and the move to `applied`
 * commit in ONE transaction, which only the `owner` can make: so a lease that ran out on a `running`
 * row proves nothing took effect and the key may run again, while an `applied` row never runs again.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Effect } from '../shared/unit-of-work.ts';
import type { Claim, IdempotencyKeys } from '../shared/idempotency-keys.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** How long a key is kept: a retry later than this is a new request. */
export const IDEMPOTENCY_KEY_HOURS = 24;

interface Row {
  id: bigint;
  fingerprint: string;
  status: 'running' | 'applied' | 'done';
  owner: string;
  effect_type: string | null;
  effect_id: string | null;
  response_status: number | null;
  response_body: string | null;
  expired: boolean;
  lease_over: boolean;
}

/** A client may put anything in the header (a customer's name), so only its SHA-256 is stored. */
export function storedKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function idempotencyStore(prisma: ReadClient): IdempotencyKeys {
  return {
    claim: (apiKeyId, key, fingerprint, leaseMs) => claim(prisma, apiKeyId, storedKey(key), fingerprint, leaseMs),

    async recordEffect(tx, id, owner, effect) {
      const changed = await tx.$executeRaw`
        UPDATE "idempotency_keys" SET "status" = 'applied', "effect_type" = ${effect.type}, "effect_id" = ${effect.id}
         WHERE "id" = ${id} AND "owner" = ${owner} AND "status" = 'running'`;
      return changed === 1;
    },

    async finish(id, owner, status, body) {
      const changed = await prisma.$executeRaw`
        UPDATE "idempotency_keys"
           SET "status" = 'done', "response_status" = ${status}, "response_body" = ${body}, "locked_until" = NULL
         WHERE "id" = ${id} AND "owner" = ${owner} AND "status" IN ('running', 'applied')`;
      return changed === 1;
    },

    async release(id, owner) {
      await prisma.$executeRaw`DELETE FROM "idempotency_keys" WHERE "id" = ${id} AND "owner" = ${owner} AND "status" = 'running'`;
      await prisma.$executeRaw`
        UPDATE "idempotency_keys" SET "locked_until" = now() WHERE "id" = ${id} AND "owner" = ${owner} AND "status" = 'applied'`;
    },

    purgeExpired: () =>
      prisma.$executeRaw`
        DELETE FROM "idempotency_keys" WHERE "created_at" < now() - make_interval(hours => ${IDEMPOTENCY_KEY_HOURS})`,
  };
}

/**
 * Takes the key, or says how the request that took it first was answered. A few rounds at most:
 * each round ends unless another request changed the row in between.
 */
async function claim(prisma: ReadClient, apiKeyId: string, keyHash: string, fingerprint: string, leaseMs: number): Promise<Claim> {
  for (let round = 0; ; round++) {
    const owner = randomUUID();
    const inserted = await prisma.$queryRaw<Array<{ id: bigint }>>`
      INSERT INTO "idempotency_keys" ("api_key_id", "key", "fingerprint", "status", "owner", "locked_until")
      VALUES (${apiKeyId}, ${keyHash}, ${fingerprint}, 'running', ${owner}, now() + make_interval(secs => ${leaseMs / 1000}))
      ON CONFLICT ("api_key_id", "key") DO NOTHING
      RETURNING "id"`;
    if (inserted[0]) return { kind: 'run', id: inserted[0].id, owner };
    const row = await readRow(prisma, apiKeyId, keyHash);
    const decided = row ? await decide(prisma, row, fingerprint, owner, leaseMs) : undefined;
    if (decided) return decided;
    // The row changed under us (deleted, taken over): look again; never loops for long.
    if (round >= 4) return { kind: 'in_use' };
  }
}

function readRow(prisma: ReadClient, apiKeyId: string, keyHash: string): Promise<Row | undefined> {
  return prisma.$queryRaw<Row[]>`
    SELECT "id", "fingerprint", "status"::text AS "status", "owner", "effect_type", "effect_id",
           "response_status", "response_body",
           "created_at" <= now() - make_interval(hours => ${IDEMPOTENCY_KEY_HOURS}) AS "expired",
           COALESCE("locked_until" <= now(), true) AS "lease_over"
      FROM "idempotency_keys" WHERE "api_key_id" = ${apiKeyId} AND "key" = ${keyHash}`.then((rows) => rows[0]);
}

async function decide(prisma: ReadClient, row: Row, fingerprint: string, owner: string, leaseMs: number): Promise<Claim | undefined> {
  // A key older than its 24 hours is forgotten: this request starts it afresh.
  if (row.expired) return takeOver(prisma, row, fingerprint, owner, leaseMs, 'restart');
  if (row.fingerprint !== fingerprint) return { kind: 'reused' };
  if (row.status === 'done') return { kind: 'replay', status: row.response_status ?? 500, body: row.response_body ?? '' };
  if (!row.lease_over) return { kind: 'in_use' };
  if (row.status === 'applied') {
    const effect = row.effect_type && row.effect_id ? { type: row.effect_type as Effect['type'], id: row.effect_id } : null;
    return { kind: 'answer_lost', effect };
  }
  // Still `running` after its lease: the request that held it ended without any effect.
  return takeOver(prisma, row, fingerprint, owner, leaseMs, 'resume');
}

/** Takes the row from the owner it had, if no one else did first (then `undefined`: look again). */
async function takeOver(
  prisma: ReadClient,
  row: Row,
  fingerprint: string,
  owner: string,
  leaseMs: number,
  how: 'restart' | 'resume',
): Promise<Claim | undefined> {
  const changed = how === 'restart'
    ? await prisma.$executeRaw`
        UPDATE "idempotency_keys"
           SET "fingerprint" = ${fingerprint}, "status" = 'running', "owner" = ${owner},
               "locked_until" = now() + make_interval(secs => ${leaseMs / 1000}), "effect_type" = NULL, "effect_id" = NULL,
               "response_status" = NULL, "response_body" = NULL, "created_at" = now()
         WHERE "id" = ${row.id} AND "owner" = ${row.owner}`
    : await prisma.$executeRaw`
        UPDATE "idempotency_keys" SET "owner" = ${owner}, "locked_until" = now() + make_interval(secs => ${leaseMs / 1000})
         WHERE "id" = ${row.id} AND "owner" = ${row.owner} AND "status" = 'running'`;
  return changed === 1 ? { kind: 'run', id: row.id, owner } : undefined;
}
