/**
 * The fair claim of due deliveries (src/webhooks/delivery-store.ts, claimDue), on the embedded
 * database and on PostgreSQL: one broker's endpoints that never answer hold a bounded share of the
 * slots, live and test each, and never another broker's; test mode never takes more than its
 * share; every broker's first delivery is claimed before anyone's second.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createCredentials } from '../../src/db/credentials.ts';
import { recordEvents, type EventMode } from '../../src/events/store.ts';
import { claimDue, type ClaimOptions } from '../../src/webhooks/delivery-store.ts';
import { PER_BROKER_IN_FLIGHT, PER_ENDPOINT_IN_FLIGHT, TEST_MODE_IN_FLIGHT, WEBHOOK_CONCURRENCY } from '../../src/webhooks/dispatcher.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { broker } from '../helpers/factories.ts';
import { webhookEndpoint } from '../helpers/webhooks.ts';
import { PG_ADMIN_URL } from '../ops/helpers.ts';

const credentials = createCredentials(randomBytes(32));
const OPTIONS: ClaimOptions = {
  limit: WEBHOOK_CONCURRENCY,
  inFlight: WEBHOOK_CONCURRENCY,
  perEndpoint: PER_ENDPOINT_IN_FLIGHT,
  perBroker: PER_BROKER_IN_FLIGHT,
  testMode: TEST_MODE_IN_FLIGHT,
  leaseMs: 60_000,
  leasedBy: null,
};

for (const [name, databaseUrl] of [
  ['embedded PGlite', undefined],
  ['PostgreSQL', PG_ADMIN_URL],
] as const) {
  describe(`claimDue on ${name}`, () => {
    let db: TestDatabase;
    before(async () => {
      db = await createTestDatabase({ databaseUrl });
    });
    after(async () => {
      await db?.drop();
    });

    /** Every delivery's lease lifted and every delivery ended: the next test starts with nothing owed. */
    async function clear(): Promise<void> {
      await db.prisma.webhookDelivery.updateMany({ data: { status: 'delivered', leasedUntil: null, nextAttemptAt: null } });
    }

    /** A broker (a new one, or `brokerId`) with `endpoints` endpoints of `mode`, each owed `events` due deliveries. */
    async function owing(endpoints: number, events: number, mode: EventMode = 'live', brokerId?: string) {
      const id = brokerId ?? (await broker(db.prisma)).id;
      for (let i = 0; i < endpoints; i++) await webhookEndpoint(db.prisma, credentials, { brokerId: id, mode, url: `https://93.184.216.34/${mode}/${i}` });
      await recordEvents(
        db.prisma,
        Array.from({ length: events }, (_, n) => ({ brokerId: id, mode, type: 'service.updated' as const, object: { object: 'service', service_number: 100_000_000 + n } })),
      );
      return { brokerId: id };
    }

    /** Leased deliveries by broker and mode, `broker/mode` → count. */
    async function leasedBy(): Promise<Map<string, number>> {
      const rows = await db.prisma.$queryRaw<Array<{ key: string; n: number }>>`
        SELECT w."broker_id" || '/' || w."mode"::text AS "key", count(*)::int AS "n"
          FROM "webhook_deliveries" d JOIN "webhook_endpoints" w ON w."id" = d."endpoint_id"
         WHERE d."status" = 'pending' AND d."leased_until" >= now() GROUP BY 1`;
      return new Map(rows.map((r) => [r.key, r.n]));
    }

    test('a broker whose every endpoint hangs, live and test, holds its share and the other brokers get theirs at once', async () => {
      await clear();
      const hog = await owing(16, 10, 'live');
      await owing(16, 10, 'test', hog.brokerId);
      // The hog's attempts never end: claim after claim, its leases only pile up to its share.
      for (let i = 0; i < 5; i++) await claimDue(db.prisma, OPTIONS);
      const held = await leasedBy();
      assert.equal(held.get(`${hog.brokerId}/live`), PER_BROKER_IN_FLIGHT);
      assert.equal(held.get(`${hog.brokerId}/test`), PER_BROKER_IN_FLIGHT);

      // Another broker's live delivery and a third's test one are claimed on the next claim.
      const other = await owing(1, 1, 'live');
      const sandbox = await owing(1, 1, 'test');
      const claimed = await claimDue(db.prisma, OPTIONS);
      assert.equal(claimed.length, 2, JSON.stringify(claimed));
      const after = await leasedBy();
      assert.equal(after.get(`${other.brokerId}/live`), 1);
      assert.equal(after.get(`${sandbox.brokerId}/test`), 1);
      assert.equal(after.get(`${hog.brokerId}/live`), PER_BROKER_IN_FLIGHT);
    });

    test('test mode together never holds more than its share; live deliveries still get the rest', async () => {
      await clear();
      const testers = [await owing(2, 10, 'test'), await owing(2, 10, 'test'), await owing(2, 10, 'test')];
      for (let i = 0; i < 3; i++) await claimDue(db.prisma, OPTIONS);
      const held = await leasedBy();
      const inTest = testers.reduce((sum, b) => sum + (held.get(`${b.brokerId}/test`) ?? 0), 0);
      assert.equal(inTest, TEST_MODE_IN_FLIGHT);
      const live = await owing(4, 10, 'live');
      await claimDue(db.prisma, OPTIONS);
      assert.equal((await leasedBy()).get(`${live.brokerId}/live`), PER_BROKER_IN_FLIGHT);
    });

    test('one endpoint holds at most its own share, whatever its broker may take', async () => {
      await clear();
      const one = await owing(1, 20, 'live');
      for (let i = 0; i < 3; i++) await claimDue(db.prisma, OPTIONS);
      assert.equal((await leasedBy()).get(`${one.brokerId}/live`), PER_ENDPOINT_IN_FLIGHT);
    });

    test("every broker's first delivery is claimed before anyone's second", async () => {
      await clear();
      const brokers = [await owing(2, 5), await owing(2, 5), await owing(2, 5)];
      await claimDue(db.prisma, { ...OPTIONS, limit: 3 });
      const held = await leasedBy();
      assert.deepEqual(brokers.map((b) => held.get(`${b.brokerId}/live`)), [1, 1, 1]);
    });

    test('no more than WEBHOOK_CONCURRENCY leases at once in all; a lease ended makes room for one more', async () => {
      await clear();
      for (let i = 0; i < 6; i++) await owing(2, 10, 'live');
      for (let i = 0; i < 3; i++) await claimDue(db.prisma, OPTIONS);
      const total = (): Promise<number> => db.prisma.webhookDelivery.count({ where: { status: 'pending', leasedUntil: { gte: new Date() } } });
      assert.equal(await total(), WEBHOOK_CONCURRENCY);
      assert.deepEqual(await claimDue(db.prisma, OPTIONS), []);
      const one = await db.prisma.webhookDelivery.findFirstOrThrow({ where: { status: 'pending', leasedUntil: { not: null } } });
      await db.prisma.webhookDelivery.update({ where: { id: one.id }, data: { status: 'delivered', leasedUntil: null } });
      assert.equal((await claimDue(db.prisma, OPTIONS)).length, 1);
    });
  });
}
