/**
 * One job per claim (src/webhooks/dispatcher.ts): a delivery claimed again after its lease lapsed
 * gets a new job at once, and the job of the older claim, however late it runs, neither sends nor
 * records; its record, fenced on its lease, is refused even once the request went out.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Job } from 'bullmq';
import { createCredentials } from '../../src/db/credentials.ts';
import { recordEvents } from '../../src/events/store.ts';
import { createLogger } from '../../src/logger.ts';
import { recordAttempt } from '../../src/webhooks/delivery-store.ts';
import { createWebhookWork, webhookJobId, type WebhookJobData, type WebhookWork } from '../../src/webhooks/dispatcher.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { broker } from '../helpers/factories.ts';
import { failedAttempt, startReceiver, webhookEndpoint, type Receiver } from '../helpers/webhooks.ts';

const TIMEOUT_MS = 2000;
const credentials = createCredentials(randomBytes(32));

let db: TestDatabase;
let receiver: Receiver;
let work: WebhookWork;
/** The jobs the dispatcher queued, by id, in order. */
const queued: Array<{ id: string; data: WebhookJobData }> = [];

before(async () => {
  db = await createTestDatabase();
  receiver = await startReceiver();
  work = createWebhookWork({
    prisma: db.prisma,
    config: { webhookTimeoutMs: TIMEOUT_MS, webhookRetrySchedule: [0, 1, 2], webhookDisableAfterHours: 120, webhookAllowPrivateUrls: true },
    log: createLogger('silent'),
    queues: {
      add: async (_queue, _name, data, options) => {
        queued.push({ id: String(options.jobId), data: data as WebhookJobData });
      },
    },
    decrypt: async (stored) => credentials.decrypt(stored),
  });
});
after(async () => {
  await receiver?.stop();
  await db?.drop();
});

const jobOf = (data: WebhookJobData) => ({ data }) as Job<WebhookJobData>;

/** A new endpoint at `path` owed one due delivery. */
async function owed(path: string) {
  const { id: brokerId } = await broker(db.prisma);
  const endpoint = await webhookEndpoint(db.prisma, credentials, { brokerId, url: receiver.url(path) });
  await recordEvents(db.prisma, [{ brokerId, mode: 'live' as const, type: 'service.updated', object: { object: 'service', service_number: 100_000_001 } }]);
  const delivery = await db.prisma.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } });
  return { endpoint, delivery };
}

/** Claims and returns the job queued for this delivery. */
async function claim(deliveryId: bigint): Promise<{ id: string; data: WebhookJobData }> {
  queued.length = 0;
  await work.dispatch();
  const job = queued.find((j) => j.data.deliveryId === deliveryId.toString());
  assert.ok(job, 'the delivery was claimed and queued');
  return job;
}

/** What a dead worker leaves: its lease ran out and no attempt was recorded. */
async function lapse(deliveryId: bigint): Promise<void> {
  await db.prisma.$executeRaw`UPDATE "webhook_deliveries" SET "leased_until" = now() - interval '1 second' WHERE "id" = ${deliveryId}`;
}

describe('a delivery claimed again after its lease lapsed', () => {
  test('gets a new job, and the older claim’s job sends nothing and records nothing', async () => {
    const { delivery } = await owed('reclaimed');
    const first = await claim(delivery.id);
    assert.equal(first.id, webhookJobId(delivery.id.toString(), 1, first.data.leasedUntil));
    const leased = await db.prisma.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } });
    assert.equal(leased.leasedUntil?.getTime(), first.data.leasedUntil);

    await lapse(delivery.id);
    const second = await claim(delivery.id);
    assert.notEqual(second.id, first.id, 'a new job id, queued at once rather than waiting for the old job');
    assert.equal(second.data.number, 1);

    assert.deepEqual(await work.process(jobOf(first.data)), { skipped: 'not this lease' });
    assert.equal(receiver.to('reclaimed').length, 0, 'the old job sent nothing');
    assert.equal(await db.prisma.webhookAttempt.count({ where: { deliveryId: delivery.id } }), 0);

    const done = (await work.process(jobOf(second.data))) as { recorded: boolean; status: string };
    assert.deepEqual([done.recorded, done.status], [true, 'delivered']);
    assert.equal(receiver.to('reclaimed').length, 1);
    // Run again (BullMQ may repeat a job): still one request, one attempt.
    assert.deepEqual(await work.process(jobOf(second.data)), { skipped: 'not this lease' });
    assert.deepEqual(await work.process(jobOf(first.data)), { skipped: 'not this lease' });
    assert.equal(receiver.to('reclaimed').length, 1);
    const after = await db.prisma.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id }, include: { attemptsMade: true } });
    assert.deepEqual([after.status, after.attempts, after.attemptsMade.length], ['delivered', 1, 1]);
  });

  test('an attempt of the older claim that finishes after the new claim records nothing', async () => {
    const { endpoint, delivery } = await owed('late-record');
    const first = await claim(delivery.id);
    // The old worker sent, then stalled past its lease; meanwhile the delivery was claimed again.
    await lapse(delivery.id);
    const second = await claim(delivery.id);
    assert.deepEqual(await recordAttempt(db.prisma, failedAttempt(delivery.id, endpoint.id, 1, new Date(first.data.leasedUntil))), { recorded: false });
    const still = await db.prisma.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } });
    assert.deepEqual([still.status, still.attempts, still.leasedUntil?.getTime()], ['pending', 0, second.data.leasedUntil]);
    assert.equal((await db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } })).consecutiveFailures, 0);
    // The new claim's record is taken.
    const recorded = await recordAttempt(db.prisma, failedAttempt(delivery.id, endpoint.id, 1, new Date(second.data.leasedUntil)));
    assert.deepEqual(recorded, { recorded: true, status: 'pending' });
  });

  test('a job whose lease has less left than an attempt may take does not send; once it lapses, a new claim does', async () => {
    const { delivery } = await owed('short-lease');
    const first = await claim(delivery.id);
    // As if the job had waited in Redis until its lease nearly ran out.
    const shortened = new Date(Date.now() + TIMEOUT_MS / 2);
    await db.prisma.webhookDelivery.update({ where: { id: delivery.id }, data: { leasedUntil: shortened } });
    assert.deepEqual(await work.process(jobOf({ ...first.data, leasedUntil: shortened.getTime() })), { skipped: 'not this lease' });
    assert.equal(receiver.to('short-lease').length, 0);
    await lapse(delivery.id);
    const second = await claim(delivery.id);
    const done = (await work.process(jobOf(second.data))) as { recorded: boolean };
    assert.equal(done.recorded, true);
    assert.equal(receiver.to('short-lease').length, 1);
  });
});
