/**
 * POST /api/v1/webhook-endpoints/{endpoint_id}/send-example (src/webhooks/examples.ts): for every
 * event type, an event whose object is the contract's example of that type, `data.example: true`,
 * owed to that endpoint only (as a ping) and delivered to a real receiver, signed with the secret
 * the API showed; a sandbox key's example goes to its test endpoint as a test event; an unknown
 * type is refused; a contract without an example of some type is refused at start.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { EVENT_TYPES } from '../../src/events/store.ts';
import { eventExamples } from '../../src/webhooks/examples.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { eventually } from '../helpers/eventually.ts';
import { startReceiver, verified, type Receiver } from '../helpers/webhooks.ts';

type Data = Record<string, unknown>;

let t: TestApp;
let receiver: Receiver;

before(async () => {
  t = await createTestApp({ webhookRetrySchedule: [0, 1, 2], webhookTimeoutMs: 2000, webhookAllowPrivateUrls: true });
  receiver = await startReceiver();
});
after(async () => {
  await t?.close();
  await receiver?.stop();
});

const post = (key: string, path: string, body?: object) => {
  const req = request(t.app).post(path).set('Authorization', `Bearer ${key}`);
  return body === undefined ? req : req.send(body);
};
const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

/** The contract's example of a type's webhook: what the served openapi.json shows a receiver. */
async function contractExample(type: string): Promise<Data> {
  const doc = (await request(t.app).get('/openapi.json')).body as Data;
  const webhooks = doc.webhooks as Record<string, { post: { requestBody: { content: Record<string, { examples: Record<string, { value: { data: Data } }> }> } } }>;
  return Object.values(webhooks[type]!.post.requestBody.content['application/json']!.examples)[0]!.value.data;
}

let brokers = 0;

async function setUp() {
  const { id: brokerId } = await broker(t.prisma);
  const keys = {
    live: (await apiKey(t.prisma, { brokerId, mode: 'live', rateLimit: 100_000 })).key,
    test: (await apiKey(t.prisma, { brokerId, mode: 'test', rateLimit: 100_000 })).key,
  };
  const n = ++brokers;
  const endpoint = async (key: string, path: string, events?: string[]) => {
    const res = await post(key, '/api/v1/webhook-endpoints', { url: receiver.url(path), ...(events && { events }) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return { id: res.body.data.id as string, secret: res.body.data.secret as string, path };
  };
  return {
    keys,
    // Subscribed to one type only: an example is sent whatever its types, as a ping.
    target: await endpoint(keys.live, `x${n}/target`, ['report.failed']),
    bystander: await endpoint(keys.live, `x${n}/bystander`),
    testTarget: await endpoint(keys.test, `x${n}/test`),
  };
}

describe('sendExampleEvent', () => {
  test('every event type: the contract example, marked example, delivered signed to this endpoint only, as getEvent shows it', async () => {
    const s = await setUp();
    for (const type of EVENT_TYPES) {
      const res = await post(s.keys.live, `/api/v1/webhook-endpoints/${s.target.id}/send-example`, { type });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const shown = res.body.data as Data & { data: Data };
      assert.deepEqual([shown.object, shown.type, shown.mode, shown.data.example], ['event', type, 'live', true]);
      const example = await contractExample(type);
      const expected = type === 'ping' ? { object: 'ping', endpoint_id: s.target.id } : example.object;
      assert.deepEqual(shown.data.object, expected, `${type}: the contract's example object`);
      assert.deepEqual(shown.data.previous_attributes, example.previous_attributes, `${type}: its previous_attributes as the example has them`);

      const copy = await eventually(() => receiver.to(s.target.path).find((c) => JSON.parse(c.body).id === shown.id), 20_000, `the ${type} example delivered`);
      assert.deepEqual(verified(s.target.secret, copy), shown, 'signed with the endpoint secret; the body is the answer');
      assert.equal(copy.headers['webhook-id'], shown.id);
      const detail = await eventually(async () => {
        const d = (await get(s.keys.live, `/api/v1/events/${String(shown.id)}`)).body.data as Data & { deliveries: Array<{ endpoint_id: string; status: string }> };
        return d.deliveries.every((x) => x.status !== 'pending') ? d : undefined;
      }, 20_000, 'the delivery final');
      assert.deepEqual(detail.deliveries.map((d) => [d.endpoint_id, d.status]), [[s.target.id, 'delivered']], 'owed to this endpoint only');
    }
    assert.deepEqual(receiver.to(s.bystander.path).filter((c) => JSON.parse(c.body).data.example === true), [], 'no other endpoint gets an example');
  });

  test("a sandbox key sends to its test endpoint a test event; another mode's or broker's endpoint is 404 and records nothing", async () => {
    const s = await setUp();
    const other = await setUp();
    const res = await post(s.keys.test, `/api/v1/webhook-endpoints/${s.testTarget.id}/send-example`, { type: 'request.approved' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.data.mode, res.body.data.data.example], ['test', true]);
    const copy = await eventually(() => receiver.to(s.testTarget.path)[0], 20_000, 'the test example delivered');
    assert.deepEqual(verified(s.testTarget.secret, copy), res.body.data);

    const before = await t.prisma.event.count();
    assertError(await post(s.keys.test, `/api/v1/webhook-endpoints/${s.target.id}/send-example`, { type: 'ping' }), 404, 'not_found');
    assertError(await post(s.keys.live, `/api/v1/webhook-endpoints/${s.testTarget.id}/send-example`, { type: 'ping' }), 404, 'not_found');
    assertError(await post(other.keys.live, `/api/v1/webhook-endpoints/${s.target.id}/send-example`, { type: 'ping' }), 404, 'not_found');
    assert.equal(await t.prisma.event.count(), before, 'no event recorded');
  });

  test('a type that is not an event type, or none, is 400 and records nothing; a live event is never marked example', async () => {
    const s = await setUp();
    const before = await t.prisma.event.count();
    const path = `/api/v1/webhook-endpoints/${s.target.id}/send-example`;
    assert.equal(assertError(await post(s.keys.live, path, { type: 'service.exploded' }), 400, 'invalid_parameter').field, 'type');
    assertError(await post(s.keys.live, path, {}), 400, 'missing_parameter');
    assert.equal(await t.prisma.event.count(), before);
    const ping = await post(s.keys.live, `/api/v1/webhook-endpoints/${s.target.id}/ping`);
    assert.equal(ping.status, 200, JSON.stringify(ping.body));
    assert.equal('example' in ping.body.data.data, false, 'a real ping carries no example mark');
  });

  test('a contract without an example of some type is refused, naming the type', () => {
    assert.throws(() => eventExamples({ webhooks: {} }), /no example of the service\.created webhook/);
  });
});
