/**
 * GET /api/v1/webhook-endpoints/{endpoint_id}/stats (src/webhooks/endpoint-stats.ts) and the mark
 * of a recovered failure in the deliveries list (`superseded_by`): deliveries per hour of their
 * making, succeeded, failed, recovered, pending, attempts and latency percentiles; the range's
 * bound; isolation by broker and mode.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { brokerWithKeys } from '../helpers/factories.ts';
import { endedDeliveries, event } from '../helpers/webhook-factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => {
  await t?.close();
});

const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

const HOUR = 3_600_000;
const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** A later delivery of `eventId` to `endpointId`, made at `at` and ended `status` after one attempt of `durationMs`; its public id. */
async function laterDelivery(eventId: string, endpointId: string, at: number, status: 'delivered' | 'failed', durationMs: number): Promise<string> {
  const row = await t.prisma.webhookDelivery.create({
    data: { eventId, endpointId, status, attempts: 1, nextAttemptAt: null, createdAt: new Date(at), completedAt: new Date(at + 1000) },
  });
  await t.prisma.webhookAttempt.create({
    data: { deliveryId: row.id, number: 1, attemptedAt: new Date(at + 500), statusCode: status === 'delivered' ? 200 : 500, durationMs },
  });
  return row.publicId;
}

/**
 * In the hour `h`: two deliveries that failed after 3 attempts (5 ms each), one delivered at its
 * one attempt (40 ms). Two hours later: a redelivery of the first failure, delivered (100 ms), a
 * failed redelivery of the second (7 ms) before a pending delivery of a new event.
 */
async function history(brokerId: string, endpointId: string, h: number) {
  const [first, second] = await endedDeliveries(t.prisma, { brokerId, endpointId, count: 2, endedAt: new Date(h + 30 * MINUTE), attempts: 3 });
  const [ok] = await endedDeliveries(t.prisma, { brokerId, endpointId, status: 'delivered', endedAt: new Date(h + 30 * MINUTE), attempts: 1 });
  await t.prisma.webhookAttempt.updateMany({ where: { delivery: { eventId: { in: [first!, second!] } } }, data: { durationMs: 5 } });
  await t.prisma.webhookAttempt.updateMany({ where: { delivery: { eventId: ok! } }, data: { durationMs: 40 } });
  const failedAgain = await laterDelivery(second!, endpointId, h + 2 * HOUR + 5 * MINUTE, 'failed', 7);
  const recovery = await laterDelivery(first!, endpointId, h + 2 * HOUR + 10 * MINUTE, 'delivered', 100);
  const pending = await event(t.prisma, { brokerId, type: 'service.created', at: new Date(h + 2 * HOUR + 20 * MINUTE) });
  return { first: first!, second: second!, ok: ok!, recovery, failedAgain, pending };
}

describe('getWebhookEndpointStats', () => {
  test('per hour of their making: deliveries, succeeded, failed, recovered, pending, attempts, latency p50/p95; every bucket, empty ones with zeros', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const h = (Math.floor(Date.now() / HOUR) - 5) * HOUR;
    await history(w.brokerId, w.endpoint, h);
    const res = await get(w.live.key, `/api/v1/webhook-endpoints/${w.endpoint}/stats?interval=hour&created_gte=${iso(h)}&created_lt=${iso(h + 3 * HOUR)}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { buckets, ...rest } = res.body.data;
    assert.deepEqual(rest, { object: 'webhook_endpoint_stats', endpoint_id: w.endpoint, interval: 'hour', created_gte: iso(h), created_lt: iso(h + 3 * HOUR) });
    assert.deepEqual(buckets, [
      { start: iso(h), deliveries: 3, succeeded: 1, failed: 2, recovered: 1, pending: 0, attempts: 7, latency_ms: { p50: 5, p95: 40 } },
      { start: iso(h + HOUR), deliveries: 0, succeeded: 0, failed: 0, recovered: 0, pending: 0, attempts: 0, latency_ms: { p50: null, p95: null } },
      { start: iso(h + 2 * HOUR), deliveries: 3, succeeded: 1, failed: 1, recovered: 0, pending: 1, attempts: 2, latency_ms: { p50: 7, p95: 100 } },
    ]);
  });

  test("per day; a sandbox key reads its test endpoint's, as live would; another mode's or broker's endpoint is 404, as an unknown one", async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const other = await brokerWithKeys(t.prisma, { endpoints: true });
    const day = Math.floor(Date.now() / (24 * HOUR)) * 24 * HOUR - 24 * HOUR;
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.testEndpoint, mode: 'test', count: 2, status: 'delivered', endedAt: new Date(day + HOUR), attempts: 1 });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, count: 5, endedAt: new Date(day + HOUR) });
    const query = `interval=day&created_gte=${iso(day)}&created_lt=${iso(day + 24 * HOUR)}`;
    const sandbox = await get(w.sandbox.key, `/api/v1/webhook-endpoints/${w.testEndpoint}/stats?${query}`);
    assert.equal(sandbox.status, 200, JSON.stringify(sandbox.body));
    assert.deepEqual(sandbox.body.data.buckets.map((b: { start: string; deliveries: number; succeeded: number }) => [b.start, b.deliveries, b.succeeded]), [[iso(day), 2, 2]]);
    const live = await get(w.live.key, `/api/v1/webhook-endpoints/${w.endpoint}/stats?${query}`);
    assert.deepEqual(live.body.data.buckets.map((b: { deliveries: number; failed: number }) => [b.deliveries, b.failed]), [[5, 5]]);
    assertError(await get(w.sandbox.key, `/api/v1/webhook-endpoints/${w.endpoint}/stats?${query}`), 404, 'not_found');
    assertError(await get(w.live.key, `/api/v1/webhook-endpoints/${w.testEndpoint}/stats?${query}`), 404, 'not_found');
    assertError(await get(other.live.key, `/api/v1/webhook-endpoints/${w.endpoint}/stats?${query}`), 404, 'not_found');
    assertError(await get(w.live.key, `/api/v1/webhook-endpoints/we_000000000000000000000000/stats?${query}`), 404, 'not_found');
  });

  test('a range over 30 days is 400 invalid_parameter naming created_gte (rule max_range); so is an empty one (rule range)', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const lt = Date.now();
    const over = await get(w.live.key, `/api/v1/webhook-endpoints/${w.endpoint}/stats?interval=day&created_gte=${iso(lt - 31 * 24 * HOUR)}&created_lt=${iso(lt)}`);
    const details = assertError(over, 400, 'invalid_parameter');
    assert.deepEqual([details.field, details.rule], ['created_gte', 'max_range']);
    const empty = await get(w.live.key, `/api/v1/webhook-endpoints/${w.endpoint}/stats?created_gte=${iso(lt)}&created_lt=${iso(lt - 1)}`);
    assert.equal(assertError(empty, 400, 'invalid_parameter').rule, 'range');
  });
});

describe('listWebhookEndpointDeliveries marks a recovered failure', () => {
  test('a failed delivery a later delivery of its event to the endpoint succeeded names it in superseded_by; every other has null', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const h = (Math.floor(Date.now() / HOUR) - 5) * HOUR;
    const x = await history(w.brokerId, w.endpoint, h);
    // The same event delivered to another endpoint recovers nothing here.
    const elsewhere = await brokerWithKeys(t.prisma, { endpoints: true });
    await t.prisma.webhookEndpoint.update({ where: { id: elsewhere.endpoint }, data: { brokerId: w.brokerId } });
    await laterDelivery(x.second, elsewhere.endpoint, h + 2 * HOUR + 30 * MINUTE, 'delivered', 9);

    const res = await get(w.live.key, `/api/v1/webhook-endpoints/${w.endpoint}/deliveries`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const shown = (res.body.data as Array<{ id: string; event_id: string; status: string; superseded_by: string | null }>).map((d) => [d.event_id, d.status, d.superseded_by]);
    assert.deepEqual(shown, [
      [x.pending, 'pending', null],
      [x.first, 'delivered', null],
      [x.second, 'failed', null],
      [x.ok, 'delivered', null],
      [x.second, 'failed', null],
      [x.first, 'failed', x.recovery],
    ]);
    const failedOnly = await get(w.live.key, `/api/v1/webhook-endpoints/${w.endpoint}/deliveries?status=failed&limit=1&starting_after=${x.failedAgain}`);
    assert.deepEqual(failedOnly.body.data.map((d: { superseded_by: string | null }) => d.superseded_by), [null]);
  });
});
