/**
 * Releasing a dead worker's webhook leases (src/webhooks/dispatcher.ts, heartbeat.ts): the leases
 * name the worker that holds them; one whose heartbeat key was missing on two checks at least
 * RELEASE_AFTER_MS apart has them released, and the deliveries are claimed again at once. A key
 * missed once (Redis restarted empty), or a Redis that cannot tell, releases nothing.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Job } from 'bullmq';
import { createCredentials } from '../../src/db/credentials.ts';
import { recordEvents } from '../../src/events/store.ts';
import { createLogger } from '../../src/logger.ts';
import { startPrivateRedis, type RedisEndpoint } from '../../src/redis.ts';
import { createWebhookWork, RELEASE_AFTER_MS, type WebhookJobData, type WebhookWork } from '../../src/webhooks/dispatcher.ts';
import { createRedisLiveness, HEARTBEAT_TTL_MS, type WorkerLiveness } from '../../src/webhooks/heartbeat.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { broker } from '../helpers/factories.ts';
import { eventually } from '../helpers/eventually.ts';
import { startReceiver, webhookEndpoint, type Receiver } from '../helpers/webhooks.ts';

const TIMEOUT_MS = 2000;
const credentials = createCredentials(randomBytes(32));
const log = createLogger('silent');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Heartbeats as the test says: `alive` is who has a key, `down` makes Redis unable to tell. */
function fakeLiveness(workerId: string) {
  const state = { alive: new Set<string>([workerId]), down: false };
  const liveness: WorkerLiveness = {
    workerId,
    alive: async (ids) => {
      if (state.down) throw new Error('redis away');
      return new Set(ids.filter((id) => state.alive.has(id)));
    },
    start: () => undefined,
    close: async () => undefined,
  };
  return { liveness, state };
}

let db: TestDatabase;
let receiver: Receiver;
const queued: WebhookJobData[] = [];

function work(liveness: WorkerLiveness, timeoutMs = TIMEOUT_MS): WebhookWork {
  return createWebhookWork({
    prisma: db.prisma,
    config: { webhookTimeoutMs: timeoutMs, webhookRetrySchedule: [0, 1, 2], webhookDisableAfterHours: 120, webhookAllowPrivateUrls: true },
    log,
    liveness,
    queues: {
      add: async (_queue, _name, data) => {
        queued.push(data as WebhookJobData);
      },
    },
    decrypt: async (stored) => credentials.decrypt(stored),
  });
}

before(async () => {
  db = await createTestDatabase();
  receiver = await startReceiver();
});
after(async () => {
  await receiver?.stop();
  await db?.drop();
});

/** A new endpoint at `path` owed one due delivery, claimed by `by`; its job. */
async function claimedBy(by: WebhookWork, path: string) {
  const { id: brokerId } = await broker(db.prisma);
  const endpoint = await webhookEndpoint(db.prisma, credentials, { brokerId, url: receiver.url(path) });
  await recordEvents(db.prisma, [{ brokerId, mode: 'live' as const, type: 'service.updated', object: { object: 'service', service_number: 100_000_001 } }]);
  const delivery = await db.prisma.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
  queued.length = 0;
  await by.dispatch();
  const job = queued.find((j) => j.deliveryId === delivery.id.toString());
  assert.ok(job, 'claimed');
  return { delivery, job };
}

const leaseOf = async (id: bigint) => db.prisma.webhookDelivery.findUniqueOrThrow({ where: { id } });

describe('a worker whose heartbeat stopped', () => {
  test('has its leases released after two checks RELEASE_AFTER_MS apart; the delivery goes out from another worker and the old job does nothing', async () => {
    const dead = fakeLiveness('worker-dead');
    const live = fakeLiveness('worker-live');
    const [a, b] = [work(dead.liveness), work(live.liveness)];
    const { delivery, job } = await claimedBy(a, 'dead');
    assert.equal((await leaseOf(delivery.id)).leasedBy, 'worker-dead');
    live.state.alive.delete('worker-dead');
    const stoppedAt = Date.now();
    queued.length = 0;
    await b.dispatch();
    assert.equal(queued.length, 0, 'missing once: nothing released');
    while (Date.now() - stoppedAt < RELEASE_AFTER_MS + 3000) {
      await sleep(250);
      await b.dispatch();
      if (queued.length > 0) break;
    }
    const releasedAfter = Date.now() - stoppedAt;
    assert.ok(releasedAfter >= RELEASE_AFTER_MS, `released ${releasedAfter} ms after the heartbeat stopped`);
    const again = queued.find((j) => j.deliveryId === delivery.id.toString());
    assert.ok(again, `claimed again ${releasedAfter} ms after the heartbeat stopped`);
    assert.notEqual(again.leasedUntil, job.leasedUntil);
    assert.equal((await leaseOf(delivery.id)).leasedBy, 'worker-live');
    // The dead worker's job, handed over later, sends nothing; the new one sends once.
    assert.deepEqual(await b.process({ data: job } as Job<WebhookJobData>), { skipped: 'not this lease' });
    const done = (await b.process({ data: again } as Job<WebhookJobData>)) as { recorded: boolean };
    assert.equal(done.recorded, true);
    assert.equal(receiver.to('dead').length, 1);
  });

  test('a key missed on one check only (Redis restarted empty), or Redis unable to tell, releases nothing', async () => {
    // An attempt that outlasts the checks below, well within its timeout.
    const timeoutMs = 20_000;
    const holder = fakeLiveness('worker-holder');
    const other = fakeLiveness('worker-other');
    const [a, b] = [work(holder.liveness, timeoutMs), work(other.liveness, timeoutMs)];
    const { delivery, job } = await claimedBy(a, 'kept');
    // The one sending takes the lease over: its heartbeat, not the claimer's, keeps it.
    const sending = fakeLiveness('worker-sending');
    other.state.alive.add('worker-sending');
    receiver.answer('kept', () => ({ status: 200, afterMs: RELEASE_AFTER_MS + 4000 }));
    const attempt = work(sending.liveness, timeoutMs).process({ data: job } as Job<WebhookJobData>);
    await sleep(300);
    assert.equal((await leaseOf(delivery.id)).leasedBy, 'worker-sending');
    const started = Date.now();
    let lost = true;
    while (Date.now() - started < RELEASE_AFTER_MS + 2000) {
      // Missing, back a second later, Redis away, missing again: never two misses in a row RELEASE_AFTER_MS apart.
      other.state.down = Date.now() - started > 2500 && Date.now() - started < 3500;
      if (lost) other.state.alive.delete('worker-sending');
      else other.state.alive.add('worker-sending');
      lost = !lost;
      queued.length = 0;
      await b.dispatch();
      assert.equal(queued.length, 0, 'nothing claimed again');
      await sleep(1050);
    }
    assert.equal((await leaseOf(delivery.id)).leasedUntil?.getTime(), job.leasedUntil);
    const done = (await attempt) as { recorded: boolean; status: string };
    assert.deepEqual([done.recorded, done.status], [true, 'delivered']);
    assert.equal(receiver.to('kept').length, 1);
  });
});

describe('the Redis heartbeat', () => {
  let redis: RedisEndpoint;
  before(async () => {
    redis = await startPrivateRedis();
  });
  after(async () => {
    await redis?.stop();
  });

  test('is seen while the worker runs and gone within its expiry once closed', async () => {
    const one = createRedisLiveness({ redis: redis.options, prefix: 'test', log });
    const two = createRedisLiveness({ redis: redis.options, prefix: 'test', log });
    try {
      assert.notEqual(one.workerId, two.workerId);
      one.start();
      // Its first beat connects first: seen as soon as that lands, and only it (two never beat).
      const seen = await eventually(async () => {
        const alive = await two.alive([one.workerId, two.workerId]);
        return alive.size > 0 ? alive : undefined;
      }, 5000, 'the first heartbeat');
      assert.deepEqual([...seen], [one.workerId]);
      // Renewed: still there past one expiry.
      await sleep(HEARTBEAT_TTL_MS + 500);
      assert.ok((await two.alive([one.workerId])).has(one.workerId));
      await one.close();
      await sleep(HEARTBEAT_TTL_MS + 200);
      assert.equal((await two.alive([one.workerId])).size, 0);
    } finally {
      await one.close();
      await two.close();
    }
  });
});
