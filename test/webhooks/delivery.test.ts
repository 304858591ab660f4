/**
 * Webhook delivery end to end (src/webhooks/dispatcher.ts): events written by live operations reach a
 * real HTTP receiver in this process, signed (checked with the `standardwebhooks` package), and
 * every attempt, retry, refusal and timeout is recorded on the delivery and the endpoint. The
 * retry schedule is `0,1,2` seconds and the timeout 1 s, so every case runs in seconds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Job } from 'bullmq';
import request from 'supertest';
import type { Credentials } from '../../src/db/credentials.ts';
import { deleteEventsBefore, recordEvents, type EventType } from '../../src/events/store.ts';
import { failingReason, GONE_REASON, recordAttempt } from '../../src/webhooks/delivery-store.ts';
import { newEndpointSecret } from '../../src/webhooks/secrets.ts';
import { createWebhookWork, DISPATCH_MS, PER_ENDPOINT_IN_FLIGHT, WEBHOOK_USER_AGENT, type WebhookJobData } from '../../src/webhooks/dispatcher.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';
import { eventually } from '../helpers/eventually.ts';
import { failedAttempt, inTurn, startReceiver, verified, webhookEndpoint, type Receiver } from '../helpers/webhooks.ts';

// Long enough that a loaded machine does not time out the hanging attempts before the fast endpoint is served.
const TIMEOUT_MS = 2500;

let t: TestApp;
let receiver: Receiver;
let credentials: Credentials;

before(async () => {
  t = await createTestApp({ webhookRetrySchedule: [0, 1, 2], webhookTimeoutMs: TIMEOUT_MS, webhookAllowPrivateUrls: true });
  receiver = await startReceiver();
  credentials = await t.deps.credentials();
});
after(async () => {
  await t?.close();
  await receiver?.stop();
});

/** A broker with a live admin key and one endpoint at the receiver's `path`. */
async function brokerWithEndpoint(path: string, fields: Partial<Parameters<typeof webhookEndpoint>[2]> = {}) {
  const key = await apiKey(t.prisma, { scopes: ['admin:full'], rateLimit: 100_000 });
  const endpoint = await webhookEndpoint(t.prisma, credentials, { brokerId: key.brokerId, url: receiver.url(path), ...fields });
  return { ...key, endpoint };
}

/** Writes events as a change would (its own transaction); their ids. */
const happen = (brokerId: string, n = 1, type: EventType = 'service.updated', db: Parameters<typeof recordEvents>[0] = t.prisma) =>
  recordEvents(db, Array.from({ length: n }, (_, i) => ({ brokerId, mode: 'live' as const, type, object: { object: 'service', service_number: 100_000_000 + i } })));

async function deliveryOf(eventId: string, endpointId: string) {
  return t.prisma.webhookDelivery.findFirstOrThrow({ where: { eventId, endpointId }, include: { attemptsMade: { orderBy: { number: 'asc' } } } });
}

/** The delivery once it is final (delivered or failed). */
const final = (eventId: string, endpointId: string) =>
  eventually(async () => {
    const d = await deliveryOf(eventId, endpointId);
    return d.status === 'pending' ? undefined : d;
  }, 20_000, `delivery of ${eventId} to be final`);

describe('webhook delivery', () => {
  test('an event of a live operation reaches the receiver within a second, signed, its body the event', async () => {
    const b = await brokerWithEndpoint('signed');
    const s = await service(t, { brokerId: b.brokerId });
    const res = await request(t.app).post(`/api/v1/services/${s.serviceNumber}/password`).set('Authorization', `Bearer ${b.key}`).send({});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    // Within a second by construction, not by a timed assertion (a loaded machine is slow): the delivery is
    // due when the event is written and each worker claims due deliveries every DISPATCH_MS; polled with a bound.
    assert.ok(DISPATCH_MS < 1000);
    const [copy] = await eventually(() => (receiver.to('signed').length > 0 ? receiver.to('signed') : undefined), 10_000, 'the first attempt');
    const event = await t.prisma.event.findFirstOrThrow({ where: { brokerId: b.brokerId } });
    assert.deepEqual(verified(b.endpoint.secret, copy!), {
      object: 'event',
      id: event.id,
      sequence: Number(event.sequence),
      type: 'service.updated',
      created_at: event.createdAt.toISOString(),
      mode: 'live',
      data: event.data,
    });
    assert.equal(copy!.headers['webhook-id'], event.id);
    assert.equal(copy!.headers['content-type'], 'application/json');
    assert.equal(copy!.headers['user-agent'], WEBHOOK_USER_AGENT);
    const d = await final(event.id, b.endpoint.id);
    assert.deepEqual([d.status, d.attempts, d.leasedUntil, d.attemptsMade.map((a) => a.statusCode)], ['delivered', 1, null, [200]]);
    const endpoint = await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: b.endpoint.id } });
    assert.ok(endpoint.lastSuccessAt);
    assert.equal(endpoint.consecutiveFailures, 0);
  });

  const outcomes = [
    { what: '500, 500, then 200 → three attempts, delivered', answers: inTurn(500, 500, 200), codes: [500, 500, 200], status: 'delivered', failures: 0, disabled: null },
    { what: '500 every time → the schedule runs out after three attempts, failed', answers: inTurn(500), codes: [500, 500, 500], status: 'failed', failures: 3, disabled: null },
    { what: '410 → failed at once and the endpoint disabled', answers: inTurn(410), codes: [410], status: 'failed', failures: 1, disabled: GONE_REASON },
    { what: 'a redirect is not followed → a failed attempt', answers: inTurn(302, 200), codes: [302, 200], status: 'delivered', failures: 0, disabled: null },
  ] as const;
  for (const [i, row] of outcomes.entries()) {
    test(row.what, async () => {
      const path = `outcome-${i}`;
      receiver.answer(path, row.answers);
      const b = await brokerWithEndpoint(path);
      const [eventId] = await happen(b.brokerId);
      const d = await final(eventId!, b.endpoint.id);
      assert.deepEqual(d.attemptsMade.map((a) => a.statusCode), row.codes);
      // Each attempt keeps what the receiver answered (its body's first kilobyte).
      assert.deepEqual(d.attemptsMade.map((a) => a.responseExcerpt), row.codes.map((code) => `answer ${code}`));
      assert.equal(d.status, row.status);
      assert.deepEqual(receiver.to(path).map((c) => c.headers['webhook-id']), row.codes.map(() => eventId), 'the same webhook-id on every attempt');
      for (const copy of receiver.to(path)) verified(b.endpoint.secret, copy);
      const endpoint = await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: b.endpoint.id } });
      assert.equal(endpoint.consecutiveFailures, row.failures);
      assert.equal(endpoint.status, row.disabled ? 'disabled' : 'enabled');
      assert.equal(endpoint.disabledReason, row.disabled);
    });
  }

  test('failing for WEBHOOK_DISABLE_AFTER_HOURS → the endpoint disabled with the reason, its pending deliveries failed', async () => {
    receiver.answer('long-failing', inTurn(503));
    const b = await brokerWithEndpoint('long-failing');
    await t.prisma.webhookEndpoint.update({ where: { id: b.endpoint.id }, data: { failingSince: new Date(Date.now() - 121 * 3_600_000), consecutiveFailures: 40 } });
    const [eventId] = await happen(b.brokerId);
    const d = await final(eventId!, b.endpoint.id);
    assert.deepEqual([d.status, d.attempts], ['failed', 1]);
    const endpoint = await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: b.endpoint.id } });
    assert.deepEqual([endpoint.status, endpoint.disabledReason, endpoint.consecutiveFailures], ['disabled', failingReason(t.deps.config.webhookDisableAfterHours), 41]);
  });

  test('a disabled endpoint: its pending deliveries fail unsent; a ping is still sent', async () => {
    const b = await brokerWithEndpoint('disabled');
    // Owed while it was enabled, then disabled before a worker got to them.
    await t.prisma.$transaction(async (tx) => {
      await happen(b.brokerId, 2, 'service.updated', tx);
      await tx.webhookEndpoint.update({ where: { id: b.endpoint.id }, data: { status: 'disabled', disabledReason: 'by the broker' } });
    });
    const events = await t.prisma.event.findMany({ where: { brokerId: b.brokerId } });
    for (const e of events) assert.deepEqual([(await final(e.id, b.endpoint.id)).status, (await deliveryOf(e.id, b.endpoint.id)).attempts], ['failed', 0]);
    const [pingId] = await recordEvents(t.prisma, [{ brokerId: b.brokerId, mode: 'live' as const, type: 'ping', object: { object: 'ping' }, endpointId: b.endpoint.id }]);
    assert.equal((await final(pingId!, b.endpoint.id)).status, 'delivered');
    assert.deepEqual(receiver.to('disabled').map((c) => c.headers['webhook-id']), [pingId]);
  });

  const rotations = [
    { what: 'while the previous secret is valid, both secrets verify the delivery', expiresInMs: 3_600_000, verifiedBy: ['new', 'previous'] },
    { what: 'once the previous secret has expired, only the new one does', expiresInMs: -1000, verifiedBy: ['new'] },
  ] as const;
  for (const [i, row] of rotations.entries()) {
    test(`rotation: ${row.what}`, async () => {
      const path = `rotation-${i}`;
      const previous = newEndpointSecret();
      const b = await brokerWithEndpoint(path, { previousSecret: previous, previousSecretExpiresAt: new Date(Date.now() + row.expiresInMs) });
      const [eventId] = await happen(b.brokerId);
      await final(eventId!, b.endpoint.id);
      const [copy] = receiver.to(path);
      const by = { new: b.endpoint.secret, previous };
      const passes = (Object.keys(by) as Array<keyof typeof by>).filter((name) => {
        try {
          verified(by[name], copy!);
          return true;
        } catch {
          return false;
        }
      });
      assert.deepEqual(passes, row.verifiedBy);
      assert.equal(String(copy!.headers['webhook-signature']).split(' ').length, row.verifiedBy.length);
    });
  }

  test('a receiver that hangs past the timeout: failed attempts with the error, at most the per-endpoint cap at once, and another endpoint is not delayed', async () => {
    receiver.answer('hangs', inTurn('hang'));
    const slow = await brokerWithEndpoint('hangs');
    const fast = await brokerWithEndpoint('fast');
    const stuck = await happen(slow.brokerId, 12);
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    const [eventId] = await happen(fast.brokerId);
    const [copy] = await eventually(() => (receiver.to('fast').length > 0 ? receiver.to('fast') : undefined));
    assert.ok(copy!.at - started < TIMEOUT_MS, `the fast endpoint got its event ${copy!.at - started} ms after it happened`);
    assert.equal((await final(eventId!, fast.endpoint.id)).status, 'delivered');
    const d = await eventually(async () => {
      const one = await deliveryOf(stuck[0]!, slow.endpoint.id);
      return one.attemptsMade.length > 0 ? one : undefined;
    });
    assert.equal(d.attemptsMade[0]!.statusCode, null);
    assert.equal(d.attemptsMade[0]!.error, `timeout after ${TIMEOUT_MS} ms`);
    assert.ok(d.attemptsMade[0]!.durationMs >= TIMEOUT_MS);
    assert.ok(receiver.mostOpen('hangs') <= PER_ENDPOINT_IN_FLIGHT, `${receiver.mostOpen('hangs')} requests open at once`);
    assert.ok(receiver.mostOpen('hangs') > 0);
  });

  test('a repeated job for an attempt already recorded sends nothing and records nothing', async () => {
    const b = await brokerWithEndpoint('repeated');
    const [eventId] = await happen(b.brokerId);
    const d = await final(eventId!, b.endpoint.id);
    const work = createWebhookWork({
      prisma: t.prisma,
      config: t.deps.config,
      log: t.deps.logger,
      queues: { add: () => Promise.reject(new Error('nothing is queued here')) },
      decrypt: async (stored) => credentials.decrypt(stored),
    });
    // Its lease is gone with the record: whatever lease a repeated job names, it does nothing.
    const leasedUntil = new Date(Date.now() + 60_000);
    const job = { data: { deliveryId: d.id.toString(), number: 1, leasedUntil: leasedUntil.getTime() } } as Job<WebhookJobData>;
    assert.deepEqual(await work.process(job), { skipped: 'not this lease' });
    const again = await recordAttempt(t.prisma, failedAttempt(d.id, b.endpoint.id, 1, leasedUntil));
    assert.deepEqual(again, { recorded: false });
    const later = await deliveryOf(eventId!, b.endpoint.id);
    assert.deepEqual([later.status, later.attempts, later.attemptsMade.map((a) => a.statusCode)], ['delivered', 1, [200]]);
    assert.equal(receiver.to('repeated').length, 1);
    assert.equal((await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: b.endpoint.id } })).consecutiveFailures, 0);
  });

  test('retention: deleting an event deletes its deliveries and their attempts', async () => {
    const b = await brokerWithEndpoint('retention');
    const [eventId] = await happen(b.brokerId);
    const d = await final(eventId!, b.endpoint.id);
    // The retention purge: the one path the database lets delete an event.
    const { createdAt } = await t.prisma.event.findUniqueOrThrow({ where: { id: eventId! } });
    assert.ok((await deleteEventsBefore(t.prisma, new Date(createdAt.getTime() + 1))) >= 1);
    assert.equal(await t.prisma.webhookDelivery.count({ where: { id: d.id } }), 0);
    assert.equal(await t.prisma.webhookAttempt.count({ where: { deliveryId: d.id } }), 0);
  });
});
