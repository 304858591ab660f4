/**
 * POST /api/v1/webhook-endpoints/{endpoint_id}/recover (src/webhooks/endpoint-store.ts,
 * recoverFailedDeliveries): every delivery to the endpoint that ended failed since `since` is queued
 * again as a new delivery, the failed one keeping its attempts; `since` within the 30 days events
 * are kept; at most RECOVER_LIMIT a call; tenant and mode isolation; Idempotency-Key; the API log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { RECOVER_LIMIT } from '../../src/webhooks/endpoint-store.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { apiKey, brokerWithKeys, type BrokerWithEndpoints } from '../helpers/factories.ts';
import { endedDeliveries, webhookEndpoint } from '../helpers/webhook-factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => {
  await t?.close();
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ago = (ms: number) => new Date(Date.now() - ms);

const recover = (key: string, endpointId: string, body: object, idempotencyKey?: string) => {
  const req = request(t.app).post(`/api/v1/webhook-endpoints/${endpointId}/recover`).set('Authorization', `Bearer ${key}`);
  return (idempotencyKey === undefined ? req : req.set('Idempotency-Key', idempotencyKey)).send(body);
};

/** The endpoint's deliveries by status. */
async function statuses(endpointId: string): Promise<Record<string, number>> {
  const rows = await t.prisma.webhookDelivery.groupBy({ by: ['status'], where: { endpointId }, _count: true });
  return Object.fromEntries(rows.map((r) => [r.status, r._count]));
}

describe('recoverWebhookEndpoint: what is queued again', () => {
  test('every delivery that ended failed since `since`, and no other: a new pending delivery each, the failed one keeping its attempts', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const since = ago(6 * HOUR);
    const recovered = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, count: 2, endedAt: ago(HOUR) });
    const atSince = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: since });
    const before = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(7 * HOUR) });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, status: 'delivered', endedAt: ago(HOUR) });
    const other = await webhookEndpoint(t.prisma, { brokerId: w.brokerId });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: other, endedAt: ago(HOUR) });
    const stillPending = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, attempts: 0 });
    await t.prisma.webhookDelivery.updateMany({ where: { eventId: stillPending[0] }, data: { status: 'pending', completedAt: null, nextAttemptAt: new Date() } });

    const started = Date.now();
    const res = await recover(w.live.key, w.endpoint, { since: since.toISOString() });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, {
      success: true,
      data: { object: 'webhook_recovery', endpoint_id: w.endpoint, since: since.toISOString(), queued: 3, has_more: false },
    });
    const queued = await t.prisma.webhookDelivery.findMany({ where: { endpointId: w.endpoint, status: 'pending', attempts: 0, eventId: { not: stillPending[0] } } });
    assert.deepEqual(queued.map((d) => d.eventId).sort(), [...recovered, ...atSince].sort());
    for (const d of queued) assert.ok(d.nextAttemptAt !== null && d.nextAttemptAt.getTime() <= Date.now() && d.nextAttemptAt.getTime() >= started - 1000);
    assert.deepEqual(await statuses(w.endpoint), { failed: 4, delivered: 1, pending: 4 });
    assert.deepEqual(await statuses(other), { failed: 1 });
    assert.equal(await t.prisma.webhookDelivery.count({ where: { eventId: before[0] } }), 1);

    // getEvent shows the failed delivery with its three attempts, then the new one.
    const detail = await request(t.app).get(`/api/v1/events/${recovered[0]}`).set('Authorization', `Bearer ${w.live.key}`);
    assert.deepEqual(
      detail.body.data.deliveries.map((d: { endpoint_id: string; status: string; attempts: Array<{ number: number }> }) => [d.endpoint_id, d.status, d.attempts.map((a) => a.number)]),
      [[w.endpoint, 'failed', [1, 2, 3]], [w.endpoint, 'pending', []]],
    );
  });

  test('calling again queues nothing that is queued already; what fails again is queued again', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const since = ago(DAY).toISOString();
    const [id] = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(HOUR) });
    assert.equal((await recover(w.live.key, w.endpoint, { since })).body.data.queued, 1);
    assert.equal((await recover(w.live.key, w.endpoint, { since })).body.data.queued, 0);
    // The new delivery fails as well: it is now the event's last, and failed.
    await t.prisma.webhookDelivery.updateMany({ where: { eventId: id, status: 'pending' }, data: { status: 'failed', attempts: 1, nextAttemptAt: null, completedAt: new Date() } });
    const again = await recover(w.live.key, w.endpoint, { since });
    assert.deepEqual([again.body.data.queued, again.body.data.has_more], [1, false]);
    assert.deepEqual(await statuses(w.endpoint), { failed: 2, pending: 1 });
  });

  test('a redelivered event is not queued again by recover', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const [id] = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(HOUR) });
    const redelivered = await request(t.app).post(`/api/v1/events/${id}/redeliver`).set('Authorization', `Bearer ${w.live.key}`).send({ endpoint_id: w.endpoint });
    assert.equal(redelivered.status, 200, JSON.stringify(redelivered.body));
    assert.equal((await recover(w.live.key, w.endpoint, { since: ago(DAY).toISOString() })).body.data.queued, 0);
  });

  test(`bounded: at most ${RECOVER_LIMIT} a call, oldest failure first, has_more until the rest is queued`, async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const [oldest] = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(3 * HOUR), attempts: 1 });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, count: RECOVER_LIMIT - 1, endedAt: ago(2 * HOUR), attempts: 0 });
    const [newest] = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(HOUR), attempts: 1 });
    const since = ago(DAY).toISOString();
    const first = await recover(w.live.key, w.endpoint, { since });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual([first.body.data.queued, first.body.data.has_more], [RECOVER_LIMIT, true]);
    assert.equal(await t.prisma.webhookDelivery.count({ where: { eventId: oldest, status: 'pending' } }), 1);
    assert.equal(await t.prisma.webhookDelivery.count({ where: { eventId: newest, status: 'pending' } }), 0);
    const second = await recover(w.live.key, w.endpoint, { since });
    assert.deepEqual([second.body.data.queued, second.body.data.has_more], [1, false]);
    assert.equal(await t.prisma.webhookDelivery.count({ where: { eventId: newest, status: 'pending' } }), 1);
    assert.deepEqual(await statuses(w.endpoint), { failed: RECOVER_LIMIT + 1, pending: RECOVER_LIMIT + 1 });
  });
});

describe('recoverWebhookEndpoint: sandbox and isolation', () => {
  test("a sandbox key recovers its test endpoint's test-mode deliveries, and nothing live", async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.testEndpoint, mode: 'test', count: 2, endedAt: ago(HOUR) });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(HOUR) });
    const res = await recover(w.sandbox.key, w.testEndpoint, { since: ago(DAY).toISOString() });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.queued, 2);
    assert.deepEqual(await statuses(w.testEndpoint), { failed: 2, pending: 2 });
    assert.deepEqual(await statuses(w.endpoint), { failed: 1 });
  });

  const refused: Array<[why: string, key: 'live' | 'sandbox', endpoint: (w: BrokerWithEndpoints, other: BrokerWithEndpoints) => string, status: number, code: string]> = [
    ['an unknown endpoint', 'live', () => 'we_AAAAAAAAAAAAAAAAAAAAAAAA', 404, 'not_found'],
    ["another broker's endpoint", 'live', (_w, other) => other.endpoint, 404, 'not_found'],
    ["the test-mode endpoint, with the live key", 'live', (w) => w.testEndpoint, 404, 'not_found'],
    ['the live endpoint, with the sandbox key', 'sandbox', (w) => w.endpoint, 404, 'not_found'],
  ];
  for (const [why, key, endpoint, status, code] of refused) {
    test(`${why}: ${status} ${code}, nothing queued`, async () => {
      const w = await brokerWithKeys(t.prisma, { endpoints: true });
      const other = await brokerWithKeys(t.prisma, { endpoints: true });
      for (const x of [w, other]) {
        await endedDeliveries(t.prisma, { brokerId: x.brokerId, endpointId: x.endpoint, endedAt: ago(HOUR) });
        await endedDeliveries(t.prisma, { brokerId: x.brokerId, endpointId: x.testEndpoint, mode: 'test', endedAt: ago(HOUR) });
      }
      const pending = await t.prisma.webhookDelivery.count({ where: { status: 'pending' } });
      assertError(await recover(w[key].key, endpoint(w, other), { since: ago(DAY).toISOString() }), status, code);
      assert.equal(await t.prisma.webhookDelivery.count({ where: { status: 'pending' } }), pending);
    });
  }

  test('a disabled endpoint: 409 conflict with its status, nothing queued', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const disabled = await webhookEndpoint(t.prisma, { brokerId: w.brokerId, status: 'disabled' });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: disabled, endedAt: ago(HOUR) });
    const res = await recover(w.live.key, disabled, { since: ago(DAY).toISOString() });
    assert.deepEqual(assertError(res, 409, 'conflict'), { current_status: 'disabled' });
    assert.match(res.body.error.message, /is disabled; enable it before recovering its deliveries/);
    assert.deepEqual(await statuses(disabled), { failed: 1 });
  });

  test('a key without admin:full: 403', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const reader = (await apiKey(t.prisma, { brokerId: w.brokerId, scopes: ['services:read'] })).key;
    assertError(await recover(reader, w.endpoint, { since: ago(DAY).toISOString() }), 403, 'insufficient_permissions');
  });
});

describe('recoverWebhookEndpoint: since', () => {
  const rows: Array<[why: string, body: () => object, code: string, rule: string | undefined]> = [
    ['older than the 30 days events are kept', () => ({ since: ago(30 * DAY + HOUR).toISOString() }), 'invalid_parameter', 'retention'],
    ['in the future', () => ({ since: new Date(Date.now() + HOUR).toISOString() }), 'invalid_parameter', 'future'],
    ['not a date-time', () => ({ since: 'yesterday' }), 'invalid_parameter', 'format'],
    ['missing', () => ({}), 'missing_parameter', undefined],
    ['with another field', () => ({ since: ago(HOUR).toISOString(), limit: 5 }), 'invalid_parameter', undefined],
  ];
  for (const [why, body, code, rule] of rows) {
    test(`${why}: 400 ${code}${rule ? ` (rule ${rule})` : ''}, nothing queued`, async () => {
      const w = await brokerWithKeys(t.prisma, { endpoints: true });
      await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(HOUR) });
      const res = await recover(w.live.key, w.endpoint, body());
      const details = assertError(res, 400, code);
      if (rule !== undefined) assert.deepEqual([details.field, details.location, details.rule], ['since', 'body', rule]);
      assert.deepEqual(await statuses(w.endpoint), { failed: 1 });
    });
  }

  test('the refusals say what is allowed: the earliest instant kept, or the server time', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const old = await recover(w.live.key, w.endpoint, { since: ago(31 * DAY).toISOString() });
    assert.match(old.body.error.message, /^Invalid parameter since: must be within the 30 days events are kept, at or after \d{4}-\d\d-\d\dT[\d:.]+Z; older deliveries were deleted with their events$/);
    const future = await recover(w.live.key, w.endpoint, { since: '2999-01-01T00:00:00Z' });
    assert.match(future.body.error.message, /^Invalid parameter since: must not be in the future \(the server's time is \d{4}-\d\d-\d\dT[\d:.]+Z\)$/);
  });

  test('an offset is taken as the instant it names and answered in UTC', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const instant = new Date(Math.floor(Date.now() / 1000) * 1000 - 2 * HOUR);
    const local = `${new Date(instant.getTime() - 5 * HOUR).toISOString().slice(0, 19)}-05:00`;
    const res = await recover(w.live.key, w.endpoint, { since: local });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.since, instant.toISOString());
  });
});

describe('recoverWebhookEndpoint: Idempotency-Key and the API log', () => {
  test('a retry with the same key gets the same answer and queues nothing twice', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, count: 3, endedAt: ago(HOUR) });
    const body = { since: ago(DAY).toISOString() };
    const first = await recover(w.live.key, w.endpoint, body, 'recover-key-1');
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.data.queued, 3);
    // More failures after the first call: a replay must still not queue them.
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(HOUR) });
    const replay = await recover(w.live.key, w.endpoint, body, 'recover-key-1');
    assert.equal(replay.status, 200);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body, first.body);
    assert.deepEqual(await statuses(w.endpoint), { failed: 4, pending: 3 });
  });

  test('the same key with another body: 422 idempotency_key_reused, nothing queued', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(HOUR) });
    assert.equal((await recover(w.live.key, w.endpoint, { since: ago(2 * HOUR).toISOString() }, 'recover-key-2')).body.data.queued, 1);
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, endedAt: ago(HOUR) });
    const reused = await recover(w.live.key, w.endpoint, { since: ago(DAY).toISOString() }, 'recover-key-2');
    assert.deepEqual(assertError(reused, 422, 'idempotency_key_reused'), { idempotency_key: 'recover-key-2' });
    assert.deepEqual(await statuses(w.endpoint), { failed: 2, pending: 1 });
  });

  test('each call is in the API log with its key, broker, mode and status', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const ok = await recover(w.live.key, w.endpoint, { since: ago(HOUR).toISOString() });
    assert.equal(ok.status, 200);
    const refused = await recover(w.sandbox.key, w.endpoint, { since: ago(HOUR).toISOString() });
    assert.equal(refused.status, 404);
    await t.flushApiLog();
    const rows = await t.prisma.apiLog.findMany({ where: { brokerId: w.brokerId, path: `/api/v1/webhook-endpoints/${w.endpoint}/recover` }, orderBy: { id: 'asc' } });
    assert.deepEqual(rows.map((r) => [r.method, r.mode, r.status, r.requestId]), [
      ['POST', 'live', 200, ok.headers['x-request-id']],
      ['POST', 'test', 404, refused.headers['x-request-id']],
    ]);
  });
});
