/**
 * Recording an attempt while its endpoint is deleted (src/webhooks/delivery-store.ts), on
 * PostgreSQL whichever database the suite runs on, since only a server has two sessions that
 * can wait on each other. Deleting an endpoint locks its row, then its deliveries' rows (the
 * cascade); recording an attempt must take the endpoint's row before anything that locks the
 * delivery's, or each waits for the other and the server aborts one of them.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { createCredentials } from '../../src/db/credentials.ts';
import { recordEvents } from '../../src/events/store.ts';
import { recordAttempt } from '../../src/webhooks/delivery-store.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { broker } from '../helpers/factories.ts';
import { eventually } from '../helpers/eventually.ts';
import { failedAttempt, webhookEndpoint } from '../helpers/webhooks.ts';
import { PG_ADMIN_URL } from '../ops/helpers.ts';

let db: TestDatabase;
let brokerId: string;
const credentials = createCredentials(randomBytes(32));

before(async () => {
  db = await createTestDatabase({ databaseUrl: PG_ADMIN_URL });
  brokerId = (await broker(db.prisma)).id;
});
after(async () => {
  await db?.drop();
});

/** How many of this database's sessions wait on a lock (asked outside any transaction, whose view of sessions would stay as it first saw them). */
async function waitingOnLocks(): Promise<number> {
  const [row] = await db.prisma.$queryRaw<Array<{ n: number }>>`
    SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
  return row!.n;
}

describe('recording an attempt beside the endpoint being deleted', () => {
  test('the deletion goes through and the attempt records nothing, whichever waited first', async () => {
    const endpoint = await webhookEndpoint(db.prisma, credentials, { brokerId, url: 'https://93.184.216.34/hook' });
    const [eventId] = await recordEvents(db.prisma, [{ brokerId, mode: 'live' as const, type: 'service.updated', object: { object: 'service', service_number: 100_000_001 } }]);
    const found = await db.prisma.webhookDelivery.findFirstOrThrow({ where: { eventId: eventId!, endpointId: endpoint.id } });
    // Under a lease, as a claim leaves it: the attempt's record is fenced on it.
    const delivery = await db.prisma.webhookDelivery.update({ where: { id: found.id }, data: { leasedUntil: new Date(Date.now() + 60_000) } });

    // A third session holds the endpoint's row, so the deletion queues first and the attempt second.
    const holder = new pg.Client({ connectionString: db.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM "webhook_endpoints" WHERE "id" = $1 FOR UPDATE', [endpoint.id]);
      // then() sends it now: a Prisma query waits for its first then().
      const deleting = db.prisma.webhookEndpoint.delete({ where: { id: endpoint.id } }).then((row) => row);
      await eventually(async () => ((await waitingOnLocks()) >= 1 ? true : undefined), 10_000, 'the deletion to wait');
      const recording = recordAttempt(db.prisma, failedAttempt(delivery.id, endpoint.id, 1, delivery.leasedUntil!));
      await eventually(async () => ((await waitingOnLocks()) >= 2 ? true : undefined), 10_000, 'the attempt to wait');
      await holder.query('COMMIT');
      const [deleted, recorded] = await Promise.allSettled([deleting, recording]);
      assert.equal(deleted.status, 'fulfilled', deleted.status === 'rejected' ? String(deleted.reason) : '');
      assert.deepEqual(recorded, { status: 'fulfilled', value: { recorded: false } });
    } finally {
      await holder.end();
    }
    assert.equal(await db.prisma.webhookDelivery.count({ where: { id: delivery.id } }), 0);
    assert.equal(await db.prisma.webhookAttempt.count({ where: { deliveryId: delivery.id } }), 0);
  });
});
