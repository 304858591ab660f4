/**
 * The webhook endpoint operations (src/webhooks/endpoint-*.ts): create, list, detail, update,
 * delete, rotate, ping; secrets shown only on create and rotate and stored only encrypted; URL and
 * event type rules; tenant and mode isolation; Idempotency-Key on create.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { webhookEndpoint } from '../helpers/webhook-factories.ts';

let t: TestApp;
let live: string;
let sandbox: string;
let brokerId: string;
let other: string;

const URL_ = 'https://93.184.216.34/capi';

before(async () => {
  t = await createTestApp();
  brokerId = (await broker(t.prisma)).id;
  live = (await apiKey(t.prisma, { brokerId, mode: 'live', rateLimit: 1000 })).key;
  sandbox = (await apiKey(t.prisma, { brokerId, mode: 'test', rateLimit: 1000 })).key;
  other = (await apiKey(t.prisma, { mode: 'live', rateLimit: 1000 })).key;
});
after(async () => {
  await t?.close();
});

const post = (key: string, path: string, body?: object) => {
  const req = request(t.app).post(path).set('Authorization', `Bearer ${key}`);
  return body === undefined ? req : req.send(body);
};
const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
const create = (key: string, body: object = { url: URL_ }) => post(key, '/api/v1/webhook-endpoints', body);

async function created(key: string, body: object = { url: URL_ }) {
  const res = await create(key, body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data as { id: string; secret: string; [k: string]: unknown };
}

describe('webhook endpoints: happy paths', () => {
  test('create answers the endpoint with a whsec_ secret, every type by default, enabled', async () => {
    const e = await created(live, { url: URL_, description: 'Order system' });
    assert.match(e.id, /^we_[A-Za-z0-9]{24}$/);
    assert.match(e.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(e.secret.slice(6), 'base64').length, 32);
    assert.deepEqual([e.url, e.events, e.status, e.mode, e.description, e.consecutive_failures], [URL_, [], 'enabled', 'live', 'Order system', 0]);
  });

  test('the secret is stored only encrypted, and it is the one that was shown', async () => {
    const e = await created(live);
    const row = await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: e.id } });
    assert.ok(!row.secret.includes(e.secret.slice(6)), 'the stored secret is not the plain secret');
    assert.equal((await t.deps.credentials()).decrypt(row.secret), e.secret);
  });

  test('GET never shows the secret, nor the list', async () => {
    const e = await created(live);
    const one = await get(live, `/api/v1/webhook-endpoints/${e.id}`);
    assert.equal(one.status, 200);
    assert.equal('secret' in one.body.data, false);
    assert.equal(JSON.stringify(one.body).includes(e.secret), false);
    const list = await get(live, '/api/v1/webhook-endpoints?limit=100');
    assert.equal(JSON.stringify(list.body).includes(e.secret), false);
  });

  test('list: newest first, offset pagination with total', async () => {
    const { id: b } = await broker(t.prisma);
    const key = (await apiKey(t.prisma, { brokerId: b, rateLimit: 1000 })).key;
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await created(key)).id);
    const page1 = await get(key, '/api/v1/webhook-endpoints?limit=2');
    assert.deepEqual(page1.body.data.map((e: { id: string }) => e.id), [ids[2], ids[1]]);
    assert.deepEqual(page1.body.pagination, { total: 3, limit: 2, offset: 0, has_more: true });
    const page2 = await get(key, '/api/v1/webhook-endpoints?limit=2&offset=2');
    assert.deepEqual(page2.body.data.map((e: { id: string }) => e.id), [ids[0]]);
    assert.equal(page2.body.pagination.has_more, false);
  });

  test('update: url, events, description; fields left out stay', async () => {
    const e = await created(live, { url: URL_, description: 'x', events: ['ping'] });
    const res = await post(live, `/api/v1/webhook-endpoints/${e.id}`, { url: 'https://93.184.216.35/new', events: ['service.created', 'service.created'] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.data.url, res.body.data.events, res.body.data.description], ['https://93.184.216.35/new', ['service.created'], 'x']);
    const cleared = await post(live, `/api/v1/webhook-endpoints/${e.id}`, { description: null });
    assert.equal(cleared.body.data.description, null);
  });

  test('update: disabling records the broker as the reason; enabling clears the reason and the failure figures', async () => {
    const e = await created(live);
    const disabled = await post(live, `/api/v1/webhook-endpoints/${e.id}`, { status: 'disabled' });
    assert.deepEqual([disabled.body.data.status, disabled.body.data.disabled_reason], ['disabled', 'disabled by the broker']);
    await t.prisma.webhookEndpoint.update({ where: { id: e.id }, data: { consecutiveFailures: 7, failingSince: new Date(), disabledReason: 'the endpoint answered 410 Gone' } });
    const enabled = await post(live, `/api/v1/webhook-endpoints/${e.id}`, { status: 'enabled' });
    assert.deepEqual(
      [enabled.body.data.status, enabled.body.data.disabled_reason, enabled.body.data.consecutive_failures, enabled.body.data.failing_since],
      ['enabled', null, 0, null],
    );
  });

  test('disabling an endpoint disabled already keeps its reason; the rest of the change applies', async () => {
    const e = await created(live);
    await t.prisma.webhookEndpoint.update({ where: { id: e.id }, data: { status: 'disabled', disabledReason: 'the endpoint answered 410 Gone' } });
    const res = await post(live, `/api/v1/webhook-endpoints/${e.id}`, { status: 'disabled', description: 'paused' });
    assert.deepEqual([res.body.data.status, res.body.data.disabled_reason, res.body.data.description], ['disabled', 'the endpoint answered 410 Gone', 'paused']);
  });

  test('delete answers the endpoint with deleted: true; afterwards it is unknown', async () => {
    const e = await created(live);
    const res = await post(live, `/api/v1/webhook-endpoints/${e.id}/delete`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.data.id, res.body.data.deleted], [e.id, true]);
    assertError(await get(live, `/api/v1/webhook-endpoints/${e.id}`), 404, 'not_found');
    assertError(await post(live, `/api/v1/webhook-endpoints/${e.id}/delete`), 404, 'not_found');
  });

  test('rotate-secret shows a new secret once; the old one is kept encrypted for 24 hours', async () => {
    const e = await created(live);
    const before = Date.now();
    const res = await post(live, `/api/v1/webhook-endpoints/${e.id}/rotate-secret`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const rotated = res.body.data;
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, e.secret);
    const expires = Date.parse(rotated.previous_secret_expires_at);
    assert.ok(Math.abs(expires - (before + 24 * 3600_000)) < 60_000, rotated.previous_secret_expires_at);
    const row = await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: e.id } });
    const credentials = await t.deps.credentials();
    assert.deepEqual([credentials.decrypt(row.secret), credentials.decrypt(row.previousSecret!)], [rotated.secret, e.secret]);
    assert.equal('secret' in (await get(live, `/api/v1/webhook-endpoints/${e.id}`)).body.data, false);
    // The shown secret is one the standardwebhooks library takes as it is.
    assert.doesNotThrow(() => new Webhook(rotated.secret));
  });

  test('ping records a ping event owed to that endpoint only, even a disabled one', async () => {
    const e = await created(live, { url: URL_, events: ['service.created'] });
    const bystander = await created(live);
    await post(live, `/api/v1/webhook-endpoints/${e.id}`, { status: 'disabled' });
    const res = await post(live, `/api/v1/webhook-endpoints/${e.id}/ping`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.data.id, /^evt_[A-Za-z0-9]{24}$/);
    assert.deepEqual([res.body.data.type, res.body.data.mode, res.body.data.data], ['ping', 'live', { object: { object: 'ping', endpoint_id: e.id } }]);
    const deliveries = await t.prisma.webhookDelivery.findMany({ where: { eventId: res.body.data.id } });
    assert.deepEqual(deliveries.map((d) => [d.endpointId, d.status]), [[e.id, 'pending']]);
    assert.notEqual(deliveries[0]!.endpointId, bystander.id);
  });

  test('ping answers the event as stored: what getEvent answers, created_at included', async () => {
    // Issue 46: the answer was dated when the call began, the stored event when it committed (130 ms apart).
    const e = await created(sandbox);
    const res = await post(sandbox, `/api/v1/webhook-endpoints/${e.id}/ping`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const stored = await get(sandbox, `/api/v1/events/${res.body.data.id}`);
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    const { deliveries, ...event } = stored.body.data as { deliveries: unknown[] };
    assert.equal(deliveries.length, 1);
    assert.deepEqual(res.body.data, event);
  });
});

describe('webhook endpoints: refused input (400, nothing stored)', () => {
  const rows: Array<[why: string, body: object, field: string]> = [
    ['an http URL', { url: 'http://93.184.216.34/hook' }, 'url'],
    ['a loopback address', { url: 'https://127.0.0.1/hook' }, 'url'],
    ['a private address', { url: 'https://10.0.0.7/hook' }, 'url'],
    ['a host that resolves to loopback', { url: 'https://localhost/hook' }, 'url'],
    ['the metadata address', { url: 'https://169.254.169.254/latest' }, 'url'],
    ['not a URL', { url: 'hooks.example' }, 'url'],
    ['a URL with credentials', { url: 'https://user:pw@93.184.216.34/' }, 'url'],
    ['an unknown event type', { url: URL_, events: ['service.deleted'] }, 'events'],
  ];
  for (const [why, body, field] of rows) {
    test(`create with ${why}: 400 invalid_parameter naming ${field}`, async () => {
      const count = await t.prisma.webhookEndpoint.count();
      const details = assertError(await create(live, body), 400, 'invalid_parameter');
      assert.equal(details.field, field);
      assert.equal(details.location, 'body');
      assert.equal(await t.prisma.webhookEndpoint.count(), count);
    });
  }

  const wayOut = [
    ['an http URL', 'http://93.184.216.34/hook', 'the webhook URL must use https:, not http:'],
    ['a loopback address', 'https://127.0.0.1:4000/hooks', 'address 127.0.0.1 is loopback'],
    ['a private address', 'https://10.0.0.7/hook', 'address 10.0.0.7 is private'],
  ];
  for (const [why, url, refusal] of wayOut) {
    test(`create with ${why}: the message names the way out, the listen command or the server's setting`, async () => {
      const res = await create(live, { url });
      const details = assertError(res, 400, 'invalid_parameter');
      const reason = `${refusal}; to receive webhooks on your own machine run npx client-api-v1 listen --forward-to http://localhost:4000/hooks, or on a server you run yourself set WEBHOOK_ALLOW_PRIVATE_URLS=true`;
      assert.equal(details.reason, reason);
      assert.equal(res.body.error.message, `Invalid parameter url: ${reason}`);
    });
  }

  test('update to a private URL: 400 naming url, the endpoint unchanged', async () => {
    const e = await created(live);
    const details = assertError(await post(live, `/api/v1/webhook-endpoints/${e.id}`, { url: 'https://192.168.1.1/' }), 400, 'invalid_parameter');
    assert.equal(details.field, 'url');
    assert.equal((await get(live, `/api/v1/webhook-endpoints/${e.id}`)).body.data.url, URL_);
  });

  test('create without url: 400 missing_parameter', async () => {
    assertError(await create(live, {}), 400, 'missing_parameter');
  });

  test('a malformed endpoint id: 400 invalid_parameter naming endpoint_id', async () => {
    const details = assertError(await get(live, '/api/v1/webhook-endpoints/nope'), 400, 'invalid_parameter');
    assert.equal(details.field, 'endpoint_id');
  });
});

describe('webhook endpoints: tenant and mode isolation (404, the same as unknown)', () => {
  const paths: Array<[method: 'get' | 'post', suffix: string]> = [
    ['get', ''],
    ['post', ''],
    ['post', '/delete'],
    ['post', '/rotate-secret'],
    ['post', '/ping'],
  ];
  for (const [method, suffix] of paths) {
    for (const [who, owner, caller] of [
      ['another broker', 'live', 'other'],
      ['a sandbox key on a live endpoint', 'live', 'sandbox'],
      ['a live key on a sandbox endpoint', 'test', 'live'],
    ] as const) {
      test(`${method.toUpperCase()} …/{endpoint_id}${suffix} by ${who}: 404 not_found, nothing changed`, async () => {
        const id = await webhookEndpoint(t.prisma, { brokerId, mode: owner });
        const key = { other, sandbox, live }[caller];
        const path = `/api/v1/webhook-endpoints/${id}${suffix}`;
        const res = method === 'get' ? await get(key, path) : await post(key, path, suffix === '' ? { status: 'disabled' } : undefined);
        assertError(res, 404, 'not_found');
        const row = await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id } });
        assert.deepEqual([row.status, row.previousSecret, await t.prisma.event.count({ where: { type: 'ping', data: { path: ['object', 'endpoint_id'], equals: id } } })], ['enabled', null, 0]);
      });
    }
  }

  test('lists show only the key\'s own broker and mode', async () => {
    const { id: b } = await broker(t.prisma);
    const liveKey = (await apiKey(t.prisma, { brokerId: b, mode: 'live' })).key;
    const testKey = (await apiKey(t.prisma, { brokerId: b, mode: 'test' })).key;
    const l = await created(liveKey);
    const s = await created(testKey);
    assert.equal(s.mode, 'test');
    assert.deepEqual((await get(liveKey, '/api/v1/webhook-endpoints')).body.data.map((e: { id: string }) => e.id), [l.id]);
    assert.deepEqual((await get(testKey, '/api/v1/webhook-endpoints')).body.data.map((e: { id: string }) => e.id), [s.id]);
    assert.equal((await get(other, '/api/v1/webhook-endpoints')).body.data.length, 0);
  });
});

describe('webhook endpoints: Idempotency-Key', () => {
  test('a retried create with the same key answers the same endpoint and stores one', async () => {
    const { id: b } = await broker(t.prisma);
    const key = (await apiKey(t.prisma, { brokerId: b })).key;
    const send = () => create(key).set('Idempotency-Key', 'create-endpoint-1');
    const first = await send();
    const second = await send();
    assert.equal(first.status, 200);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.deepEqual(second.body.data, first.body.data);
    assert.equal(await t.prisma.webhookEndpoint.count({ where: { brokerId: b } }), 1);
  });
});
