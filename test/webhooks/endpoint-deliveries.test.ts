/**
 * GET /api/v1/webhook-endpoints/{endpoint_id}/deliveries (src/webhooks/endpoint-deliveries.ts): the
 * endpoint's deliveries newest first, each with its event and last attempt; the status filter;
 * cursor pages that hold still while deliveries arrive; isolation by broker and mode.
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

const list = (key: string, endpointId: string, query = '') =>
  request(t.app).get(`/api/v1/webhook-endpoints/${endpointId}/deliveries${query}`).set('Authorization', `Bearer ${key}`);

interface Listed {
  id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempt_count: number;
  last_attempt: { number: number; status_code: number | null; response_excerpt: string | null } | null;
}

describe('listWebhookEndpointDeliveries', () => {
  test('newest first, each with its event, status, attempts and last attempt; the excerpt the receiver answered', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const [failed] = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, attempts: 2 });
    const [delivered] = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, status: 'delivered', attempts: 1 });
    const pending = await event(t.prisma, { brokerId: w.brokerId, type: 'service.created' });
    await t.prisma.webhookAttempt.updateMany({
      where: { delivery: { eventId: failed }, number: 2 },
      data: { responseExcerpt: '{"error":"no handler for service.updated"}' },
    });

    const res = await list(w.live.key, w.endpoint);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const data = res.body.data as Listed[];
    assert.deepEqual(
      data.map((d) => [d.event_id, d.event_type, d.status, d.attempt_count, d.last_attempt?.number ?? null, d.last_attempt?.status_code ?? null]),
      [
        [pending, 'service.created', 'pending', 0, null, null],
        [delivered, 'service.updated', 'delivered', 1, 1, 200],
        [failed, 'service.updated', 'failed', 2, 2, 500],
      ],
    );
    assert.equal(data[2]!.last_attempt!.response_excerpt, '{"error":"no handler for service.updated"}');
    assert.equal(res.body.data[0].next_attempt_at !== null, true, 'a pending delivery says when its next attempt is due');
    assert.equal(res.body.data[1].next_attempt_at, null);
    for (const d of data) assert.match(d.id, /^whd_[0-9a-f]{32}$/);
    assert.deepEqual(res.body.pagination, { limit: 25, has_more: false, next_starting_after: null });
  });

  test('status filters', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const failed = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, count: 2 });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, status: 'delivered' });
    const res = await list(w.live.key, w.endpoint, '?status=failed');
    assert.deepEqual((res.body.data as Listed[]).map((d) => d.event_id), [...failed].reverse());
    assertError(await list(w.live.key, w.endpoint, '?status=succeeded'), 400, 'invalid_parameter');
  });

  test('cursor pages neither skip nor repeat a delivery while new ones arrive', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const first = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint, count: 7 });
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const res = await list(w.live.key, w.endpoint, `?limit=3${cursor === null ? '' : `&starting_after=${cursor}`}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      seen.push(...(res.body.data as Listed[]).map((d) => d.event_id));
      // A new delivery arrives between pages: it is newer than the walk, so no later page moves.
      await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.endpoint });
      cursor = res.body.pagination.next_starting_after;
      assert.equal(res.body.pagination.has_more, cursor !== null);
      if (cursor === null) break;
    }
    assert.deepEqual(seen, [...first].reverse());
  });

  test('a starting_after of another endpoint, or malformed, is 400 invalid_parameter', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.testEndpoint, mode: 'test' });
    const other = (await list(w.sandbox.key, w.testEndpoint)).body.data[0].id as string;
    const res = await list(w.live.key, w.endpoint, `?starting_after=${other}`);
    assertError(res, 400, 'invalid_parameter');
    assert.equal(res.body.error.details.field, 'starting_after');
    assert.equal(res.body.error.details.rule, 'exists');
    assertError(await list(w.live.key, w.endpoint, '?starting_after=evt_2Jf8Kq1Vx9Lm4Tb7Rc3Np6Zs'), 400, 'invalid_parameter');
  });

  test('a key sees its own mode and broker only: the other mode, another broker or an unknown endpoint is 404', async () => {
    const w = await brokerWithKeys(t.prisma, { endpoints: true });
    const other = await brokerWithKeys(t.prisma, { endpoints: true });
    const [testEvent] = await endedDeliveries(t.prisma, { brokerId: w.brokerId, endpointId: w.testEndpoint, mode: 'test' });
    const sandbox = await list(w.sandbox.key, w.testEndpoint);
    assert.deepEqual((sandbox.body.data as Listed[]).map((d) => d.event_id), [testEvent]);
    assertError(await list(w.sandbox.key, w.endpoint), 404, 'not_found');
    assertError(await list(w.live.key, w.testEndpoint), 404, 'not_found');
    assertError(await list(other.live.key, w.endpoint), 404, 'not_found');
    assertError(await list(w.live.key, 'we_000000000000000000000000'), 404, 'not_found');
  });
});
