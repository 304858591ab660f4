/**
 * The event operations (src/events/adapter.ts): newest-first cursor pages with a type filter, one
 * event with every delivery attempt, redelivery; tenant and mode isolation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { brokerWithKeys } from '../helpers/factories.ts';
import { event, sampleObject, webhookEndpoint } from '../helpers/webhook-factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => {
  await t?.close();
});

const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
const post = (key: string, path: string, body?: object) => {
  const req = request(t.app).post(path).set('Authorization', `Bearer ${key}`);
  return body === undefined ? req : req.send(body);
};

const ids = (res: request.Response) => res.body.data.map((e: { id: string }) => e.id);

describe('listEvents', () => {
  test('newest first; limit and starting_after page through all; has_more and next_starting_after', async () => {
    const w = await brokerWithKeys(t.prisma);
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await event(t.prisma, { brokerId: w.brokerId }));
    const newest = [...made].reverse();
    const first = await get(w.live.key, '/api/v1/events?limit=2');
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(ids(first), newest.slice(0, 2));
    assert.deepEqual(first.body.pagination, { limit: 2, has_more: true, next_starting_after: newest[1] });
    const second = await get(w.live.key, `/api/v1/events?limit=2&starting_after=${newest[1]}`);
    assert.deepEqual(ids(second), newest.slice(2, 4));
    const last = await get(w.live.key, `/api/v1/events?limit=2&starting_after=${newest[3]}`);
    assert.deepEqual(ids(last), newest.slice(4));
    assert.deepEqual(last.body.pagination, { limit: 2, has_more: false, next_starting_after: null });
  });

  test('type filters, across pages too', async () => {
    const w = await brokerWithKeys(t.prisma);
    const a = await event(t.prisma, { brokerId: w.brokerId, type: 'request.created' });
    await event(t.prisma, { brokerId: w.brokerId, type: 'service.created' });
    const b = await event(t.prisma, { brokerId: w.brokerId, type: 'request.created' });
    assert.deepEqual(ids(await get(w.live.key, '/api/v1/events?type=request.created')), [b, a]);
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?type=request.created&starting_after=${b}`)), [a]);
  });

  test('types filters by several types (a comma list), across pages and in both orders', async () => {
    const w = await brokerWithKeys(t.prisma);
    const a = await event(t.prisma, { brokerId: w.brokerId, type: 'request.created' });
    await event(t.prisma, { brokerId: w.brokerId, type: 'ping' });
    const b = await event(t.prisma, { brokerId: w.brokerId, type: 'service.created' });
    const c = await event(t.prisma, { brokerId: w.brokerId, type: 'request.approved' });
    const types = 'types=request.created,service.created,request.approved';
    const all = await get(w.live.key, `/api/v1/events?${types}`);
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.deepEqual(ids(all), [c, b, a]);
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?${types}&limit=2&starting_after=${c}`)), [b, a]);
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?${types}&order=asc&starting_after=${a}`)), [b, c]);
    assert.deepEqual(ids(await get(w.live.key, '/api/v1/events?types=ping')), ids(await get(w.live.key, '/api/v1/events?type=ping')));
  });

  test('type and types together: the events of any of them; an unknown type in types: 400 invalid_parameter', async () => {
    const w = await brokerWithKeys(t.prisma);
    const a = await event(t.prisma, { brokerId: w.brokerId, type: 'ping' });
    const b = await event(t.prisma, { brokerId: w.brokerId, type: 'report.failed' });
    await event(t.prisma, { brokerId: w.brokerId, type: 'service.created' });
    assert.deepEqual(ids(await get(w.live.key, '/api/v1/events?type=ping&types=report.failed,ping')), [b, a]);
    assert.match(String(assertError(await get(w.live.key, '/api/v1/events?types=ping,service.deleted'), 400, 'invalid_parameter').field), /^types/);
    // Repeated, too; an empty item or list is refused, as any bad value.
    assert.deepEqual(ids(await get(w.live.key, '/api/v1/events?types=ping&types=report.failed')), [b, a]);
    for (const query of ['types=', 'types=ping,,ping']) assertError(await get(w.live.key, `/api/v1/events?${query}`), 400, 'invalid_parameter');
  });

  test('each key sees its own broker and mode only', async () => {
    const w = await brokerWithKeys(t.prisma);
    const other = await brokerWithKeys(t.prisma);
    const l = await event(t.prisma, { brokerId: w.brokerId, mode: 'live' });
    const s = await event(t.prisma, { brokerId: w.brokerId, mode: 'test' });
    await event(t.prisma, { brokerId: other.brokerId, mode: 'live' });
    assert.deepEqual(ids(await get(w.live.key, '/api/v1/events')), [l]);
    assert.deepEqual(ids(await get(w.sandbox.key, '/api/v1/events')), [s]);
    const sandboxEvent = (await get(w.sandbox.key, '/api/v1/events')).body.data[0];
    assert.equal(sandboxEvent.mode, 'test');
  });

  const badCursors: Array<[why: string, cursor: (w: { brokerId: string }, other: { brokerId: string }) => Promise<string> | string]> = [
    ['an unknown event', () => 'evt_AAAAAAAAAAAAAAAAAAAAAAAA'],
    ["another broker's event", (_w, other) => event(t.prisma, { brokerId: other.brokerId })],
    ["the other mode's event", (w) => event(t.prisma, { brokerId: w.brokerId, mode: 'test' })],
  ];
  for (const [why, cursor] of badCursors) {
    test(`starting_after naming ${why}: 400 invalid_parameter naming starting_after`, async () => {
      const w = await brokerWithKeys(t.prisma);
      const other = await brokerWithKeys(t.prisma);
      const details = assertError(await get(w.live.key, `/api/v1/events?starting_after=${await cursor(w, other)}`), 400, 'invalid_parameter');
      assert.equal(details.field, 'starting_after');
    });
  }

  test('an unknown type: 400 invalid_parameter naming type', async () => {
    const w = await brokerWithKeys(t.prisma);
    assert.equal(assertError(await get(w.live.key, '/api/v1/events?type=service.deleted'), 400, 'invalid_parameter').field, 'type');
  });
});

describe('getEvent', () => {
  test('shows the event and every attempt of each delivery, with its status', async () => {
    const w = await brokerWithKeys(t.prisma);
    const endpointId = await webhookEndpoint(t.prisma, { brokerId: w.brokerId });
    const id = await event(t.prisma, { brokerId: w.brokerId, type: 'service.created' });
    const { createdAt } = await t.prisma.event.findUniqueOrThrow({ where: { id } });
    const delivery = await t.prisma.webhookDelivery.findFirstOrThrow({ where: { eventId: id } });
    await t.prisma.webhookAttempt.createMany({
      data: [
        { deliveryId: delivery.id, number: 1, attemptedAt: new Date('2026-01-02T03:04:05.100Z'), statusCode: 500, durationMs: 84, responseExcerpt: 'busy' },
        { deliveryId: delivery.id, number: 2, attemptedAt: new Date('2026-01-02T03:04:10.200Z'), error: 'timeout after 15000 ms', durationMs: 15000 },
        { deliveryId: delivery.id, number: 3, attemptedAt: new Date('2026-01-02T03:09:10.300Z'), statusCode: 204, durationMs: 12 },
      ],
    });
    await t.prisma.webhookDelivery.update({ where: { id: delivery.id }, data: { status: 'delivered', attempts: 3, completedAt: new Date('2026-01-02T03:09:10.312Z') } });
    const res = await get(w.live.key, `/api/v1/events/${id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data, {
      object: 'event',
      id,
      sequence: 1,
      type: 'service.created',
      created_at: createdAt.toISOString(),
      mode: 'live',
      data: { object: sampleObject('service.created') },
      deliveries: [
        {
          endpoint_id: endpointId,
          status: 'delivered',
          attempt_count: 3,
          next_attempt_at: null,
          completed_at: '2026-01-02T03:09:10.312Z',
          attempts: [
            { number: 1, attempted_at: '2026-01-02T03:04:05.100Z', status_code: 500, error: null, duration_ms: 84, response_excerpt: 'busy' },
            { number: 2, attempted_at: '2026-01-02T03:04:10.200Z', status_code: null, error: 'timeout after 15000 ms', duration_ms: 15000, response_excerpt: null },
            { number: 3, attempted_at: '2026-01-02T03:09:10.300Z', status_code: 204, error: null, duration_ms: 12, response_excerpt: null },
          ],
        },
      ],
    });
  });

  const hidden: Array<[why: string, owner: 'same' | 'other', mode: 'live' | 'test', key: 'live' | 'sandbox']> = [
    ["another broker's event", 'other', 'live', 'live'],
    ['a test-mode event with a live key', 'same', 'test', 'live'],
    ['a live event with a sandbox key', 'same', 'live', 'sandbox'],
  ];
  for (const [why, owner, mode, key] of hidden) {
    test(`${why}: 404 not_found, as an unknown one`, async () => {
      const w = await brokerWithKeys(t.prisma);
      const other = await brokerWithKeys(t.prisma);
      const id = await event(t.prisma, { brokerId: (owner === 'same' ? w : other).brokerId, mode });
      assertError(await get(w[key].key, `/api/v1/events/${id}`), 404, 'not_found');
      assertError(await post(w[key].key, `/api/v1/events/${id}/redeliver`, {}), 404, 'not_found');
    });
  }

  test('an unknown event: 404; a malformed id: 400 naming event_id', async () => {
    const w = await brokerWithKeys(t.prisma);
    assertError(await get(w.live.key, '/api/v1/events/evt_AAAAAAAAAAAAAAAAAAAAAAAA'), 404, 'not_found');
    assert.equal(assertError(await get(w.live.key, '/api/v1/events/123'), 400, 'invalid_parameter').field, 'event_id');
  });
});

describe('redeliverEvent', () => {
  test('without endpoint_id: a new pending delivery, due now, to every enabled endpoint subscribed to the type', async () => {
    const w = await brokerWithKeys(t.prisma);
    const all = await webhookEndpoint(t.prisma, { brokerId: w.brokerId });
    const subscribed = await webhookEndpoint(t.prisma, { brokerId: w.brokerId, events: ['service.created'] });
    const id = await event(t.prisma, { brokerId: w.brokerId, type: 'service.created' });
    // Added after the event: a redelivery reaches it too.
    const later = await webhookEndpoint(t.prisma, { brokerId: w.brokerId });
    await webhookEndpoint(t.prisma, { brokerId: w.brokerId, events: ['ping'] });
    await webhookEndpoint(t.prisma, { brokerId: w.brokerId, status: 'disabled' });
    await webhookEndpoint(t.prisma, { brokerId: w.brokerId, mode: 'test' });
    const before = Date.now();
    const res = await post(w.live.key, `/api/v1/events/${id}/redeliver`, {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const pending = res.body.data.deliveries.slice(2);
    assert.deepEqual(res.body.data.deliveries.slice(0, 2).map((d: { endpoint_id: string }) => d.endpoint_id).sort(), [all, subscribed].sort());
    assert.deepEqual(pending.map((d: { endpoint_id: string }) => d.endpoint_id).sort(), [all, subscribed, later].sort());
    for (const d of pending) {
      assert.deepEqual([d.status, d.attempt_count, d.attempts], ['pending', 0, []]);
      assert.ok(Date.parse(d.next_attempt_at) >= before - 1000 && Date.parse(d.next_attempt_at) <= Date.now());
    }
    assert.equal(await t.prisma.webhookDelivery.count({ where: { eventId: id, status: 'pending' } }), 5);
  });

  test('with endpoint_id: one new delivery to that endpoint, whatever its event types', async () => {
    const w = await brokerWithKeys(t.prisma);
    const other = await webhookEndpoint(t.prisma, { brokerId: w.brokerId });
    const pingOnly = await webhookEndpoint(t.prisma, { brokerId: w.brokerId, events: ['ping'] });
    const id = await event(t.prisma, { brokerId: w.brokerId });
    const res = await post(w.live.key, `/api/v1/events/${id}/redeliver`, { endpoint_id: pingOnly });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.deliveries.map((d: { endpoint_id: string; status: string }) => [d.endpoint_id, d.status]), [[other, 'pending'], [pingOnly, 'pending']]);
  });

  test('a sandbox key redelivers its test-mode events to its test endpoints', async () => {
    const w = await brokerWithKeys(t.prisma);
    const endpoint = await webhookEndpoint(t.prisma, { brokerId: w.brokerId, mode: 'test' });
    const id = await event(t.prisma, { brokerId: w.brokerId, mode: 'test' });
    const res = await post(w.sandbox.key, `/api/v1/events/${id}/redeliver`, { endpoint_id: endpoint });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.deliveries.length, 2);
  });

  const refused: Array<[why: string, endpoint: (w: { brokerId: string }, other: { brokerId: string }) => Promise<string> | string, status: number, code: string]> = [
    ['an unknown endpoint', () => 'we_AAAAAAAAAAAAAAAAAAAAAAAA', 404, 'not_found'],
    ["another broker's endpoint", (_w, other) => webhookEndpoint(t.prisma, { brokerId: other.brokerId }), 404, 'not_found'],
    ["the other mode's endpoint", (w) => webhookEndpoint(t.prisma, { brokerId: w.brokerId, mode: 'test' }), 404, 'not_found'],
    ['a disabled endpoint', (w) => webhookEndpoint(t.prisma, { brokerId: w.brokerId, status: 'disabled' }), 409, 'conflict'],
  ];
  for (const [why, endpoint, status, code] of refused) {
    test(`to ${why}: ${status} ${code}, no delivery added`, async () => {
      const w = await brokerWithKeys(t.prisma);
      const other = await brokerWithKeys(t.prisma);
      const id = await event(t.prisma, { brokerId: w.brokerId });
      const count = await t.prisma.webhookDelivery.count();
      assertError(await post(w.live.key, `/api/v1/events/${id}/redeliver`, { endpoint_id: await endpoint(w, other) }), status, code);
      assert.equal(await t.prisma.webhookDelivery.count(), count);
    });
  }
});
