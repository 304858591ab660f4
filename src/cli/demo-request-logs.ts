/**
 * The request log entries openapi.yaml's examples name (getRequestLog's path id, listRequestLogs'
 * `request_id` and `starting_after`), in both modes: the log is per mode and a request id is not
 * unique across modes, so each key finds them. Written once per broker, mode and id, dated now
 * (never before the log's last entry, so a cursor walk skips none); the worker deletes them after
 * 30 days, and the next `demo` writes them again.
 */
import type { Prisma } from '../../generated/prisma/client.ts';
import type { ReadTx } from '../shared/db-errors.ts';

type Tx = ReadTx;

/** The examples' key id: the log keeps a key's id, which outlives the key, so it need name no key. */
const EXAMPLE_KEY_ID = 'key_01hzx3k8w6';

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
