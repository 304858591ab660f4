/**
 * The request log entries openapi.yaml's examples name (getRequestLog's path id, listRequestLogs'
 * `request_id` and `starting_after`), in both modes: the log is per mode and a request id is not
 * unique across modes, so each key finds them. Written once per broker, mode and id, dated now
 * (never before the log's last entry, so a cursor walk skips none); the worker deletes them after
 * 30 days, and the next `demo` writes them again.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { ReadTx } from '../shared/db-errors.ts';

type Tx = ReadTx;

/** The examples' key id and name (`api_key_name`). */
const EXAMPLE_KEY_ID = 'key_01hzx3k8w6';
const EXAMPLE_KEY_NAME = 'order-sync';

/**
 * The key the examples name, so entries show its name: revoked from the start, its hash that of
 * random bytes no one has, so it can never be used. A key of that id another broker holds is left
 * alone (its entries then show no name).
 */
async function putExampleKey(tx: Tx, brokerId: string, now: Date): Promise<void> {
  const kept = await tx.apiKey.findUnique({ where: { id: EXAMPLE_KEY_ID }, select: { id: true } });
  if (kept) return;
  await tx.apiKey.create({
    data: {
      id: EXAMPLE_KEY_ID, brokerId, name: EXAMPLE_KEY_NAME, mode: 'live', keyHash: createHash('sha256').update(randomBytes(32)).digest('hex'),
      prefix: 'sk_live_0000', last4: '0000', scopes: [], active: false, revokedAt: now,
    },
  });
}

type Entry = Omit<Prisma.ApiLogCreateManyInput, 'brokerId' | 'mode' | 'at' | 'apiKeyId' | 'ip'>;

/** Oldest first, the order the examples show them in (listRequestLogs' `live` answer lists the two errors newest first). */
const ENTRIES: Entry[] = [
  {
    requestId: 'req_0cc175b9c0f1b6a831c399e269772661', method: 'GET', path: '/api/v1/services/999999999', operation: 'getService', status: 404,
    errorCode: 'not_found', errorMessage: 'Service 999999999 not found', durationMs: 4, idempotencyReplayed: false,
  },
  {
    requestId: 'order-sync-2025-03-02-0001', method: 'POST', path: '/api/v1/services/482913570/upgrade', operation: 'upgradeService', status: 409,
    errorCode: 'conflict',
    errorMessage: 'Service 482913570 already has a pending upgrade request (REQ-000044); it must be approved or denied before another change',
    errorDetails: { current_status: 'pending', pending_request_id: 'REQ-000044', service_status: 'active' }, durationMs: 18, idempotencyReplayed: false,
  },
  {
    requestId: 'req_8f14e45fceea467a9575b5ba30c1a2d3', method: 'POST', path: '/api/v1/service-create', operation: 'createService', status: 200,
    errorCode: null, errorMessage: null, durationMs: 7, idempotencyReplayed: true,
  },
];

/** Writes the entries a mode of the broker lacks; entries kept from an earlier run stay as they are. */
export async function putRequestLogs(tx: Tx, brokerId: string, now: Date): Promise<void> {
  await putExampleKey(tx, brokerId, now);
  for (const mode of ['live', 'test'] as const) {
    const scope = { brokerId, mode };
    const kept = await tx.apiLog.findMany({ where: { ...scope, requestId: { in: ENTRIES.map((e) => e.requestId) } }, select: { requestId: true } });
    const missing = ENTRIES.filter((e) => !kept.some((k) => k.requestId === e.requestId));
    if (missing.length === 0) continue;
    const last = await tx.apiLog.findFirst({ where: scope, orderBy: [{ at: 'desc' }, { id: 'desc' }], select: { at: true } });
    const from = Math.max(now.getTime(), last ? last.at.getTime() + 1 : 0);
    await tx.apiLog.createMany({
      data: missing.map((e, i) => ({ ...e, ...scope, at: new Date(from + i), apiKeyId: EXAMPLE_KEY_ID, ip: '203.0.113.10' })),
    });
  }
}
