// Conditional reads (issue 33 item 2; openapi.yaml, "Conditional requests"): every 200 of a GET
// carries an ETag; If-None-Match naming it answers 304 with no body (uncounted by the rate limit only
// when answered from a cached page without the query: test/http/conditional-shortcut.test.ts), still authenticated, whitelisted, scoped and logged; a change gives the next read a new tag.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import { createGate } from '../../src/auth/gate.ts';
import { createLogger } from '../../src/logger.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker, type TestApiKey } from '../helpers/factories.ts';
import { service, serviceRequest } from '../helpers/service-factories.ts';
import { event, webhookEndpoint } from '../helpers/webhook-factories.ts';
import { LogCapture } from '../ops/helpers.ts';

let t: TestApp;
let live: TestApiKey;
let sandbox: TestApiKey;
/** One URL of each GET operation, for each mode, reading records of the key's own broker. */
let urls: { live: Record<string, string>; test: Record<string, string> };
let serviceNumber: number;
let endpointId: string;
let requestId: string;

before(async () => {
  t = await createTestApp({}, { workers: false });
  const b = await broker(t.prisma, { approval: 'automatic' });
  live = await apiKey(t.prisma, { brokerId: b.id, scopes: ['admin:full'], rateLimit: 100_000 });
  sandbox = await apiKey(t.prisma, { brokerId: b.id, scopes: ['admin:full'], mode: 'test', rateLimit: 100_000 });
  const s = await service(t, { brokerId: b.id });
  serviceNumber = s.serviceNumber;
  const pending = await serviceRequest(t.prisma, { brokerId: b.id, type: 'create', requestedPlan: 'Basic VPS' });
  requestId = `REQ-${String(pending.id).padStart(6, '0')}`;
  const run = await t.prisma.reportRun.create({ data: { brokerId: b.id, reportType: 'invoices' } });
  const testRun = await t.prisma.reportRun.create({ data: { brokerId: b.id, reportType: 'invoices', mode: 'test' } });
  endpointId = await webhookEndpoint(t.prisma, { brokerId: b.id });
  const testEndpoint = await webhookEndpoint(t.prisma, { brokerId: b.id, mode: 'test' });
  const liveEvent = await event(t.prisma, { brokerId: b.id });
  const testEvent = await event(t.prisma, { brokerId: b.id, mode: 'test' });
  // One logged request per mode whose entry the request-log reads below name (read alike each time).
  for (const [key, id] of [[live, 'etag-fixture-live'], [sandbox, 'etag-fixture-test']] as const) {
    await request(t.app).get('/api/v1/auth-check').set({ Authorization: `Bearer ${key.key}`, 'X-Request-Id': id }).expect(200);
  }
  const common = {
    getAuthCheck: '/api/v1/auth-check',
    listServices: '/api/v1/services?limit=25',
    getService: `/api/v1/services/${serviceNumber}`,
    listRequests: '/api/v1/requests',
    listReports: '/api/v1/reports',
    listWebhookEndpoints: '/api/v1/webhook-endpoints',
    listEvents: '/api/v1/events',
  };
  urls = {
    live: {
      ...common,
      getReport: `/api/v1/reports/${run.id}`,
      getWebhookEndpoint: `/api/v1/webhook-endpoints/${endpointId}`,
      listWebhookEndpointDeliveries: `/api/v1/webhook-endpoints/${endpointId}/deliveries`,
      getEvent: `/api/v1/events/${liveEvent}`,
      listRequestLogs: '/api/v1/request-logs?request_id=etag-fixture-live',
      getRequestStats: STATS_RANGE,
      getWebhookEndpointStats: `/api/v1/webhook-endpoints/${endpointId}/stats?created_gte=2025-03-02T00:00:00Z`,
      getRequestLog: '/api/v1/request-logs/etag-fixture-live',
    },
    test: {
      ...common,
      getReport: `/api/v1/reports/${testRun.id}`,
      getWebhookEndpoint: `/api/v1/webhook-endpoints/${testEndpoint}`,
      listWebhookEndpointDeliveries: `/api/v1/webhook-endpoints/${testEndpoint}/deliveries`,
      getEvent: `/api/v1/events/${testEvent}`,
      listRequestLogs: '/api/v1/request-logs?request_id=etag-fixture-test',
      getRequestStats: STATS_RANGE,
      getWebhookEndpointStats: `/api/v1/webhook-endpoints/${testEndpoint}/stats?created_gte=2025-03-02T00:00:00Z`,
      getRequestLog: '/api/v1/request-logs/etag-fixture-test',
    },
  };
});
after(async () => t?.close());

/** A fixed past range (a default one ends now, so its answer changes with every read). */
const STATS_RANGE = '/api/v1/request-stats?interval=day&created_gte=2025-03-02T00:00:00Z';

const get = (path: string, key: TestApiKey, headers: Record<string, string> = {}) =>
  request(t.app).get(path).set({ Authorization: `Bearer ${key.key}`, ...headers });

const remaining = (res: request.Response): number => Number(res.headers['x-ratelimit-remaining']);

/** A strong entity tag, as the server makes them. */
const STRONG_TAG = /^"[A-Za-z0-9_-]{27}"$/;

function assertNotModified(res: request.Response, etag: string): void {
  assert.equal(res.status, 304);
  assert.equal(res.text ?? '', '', 'no body (supertest leaves a HEAD\'s text undefined)');
  assert.equal(res.headers.etag, etag);
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers['content-length'], undefined);
  assert.ok(res.headers['x-request-id']);
  assert.ok(res.headers['x-ratelimit-remaining']);
}

test('the table covers every GET operation of the contract', () => {
  const gets = t.deps.contract.operations.filter((op) => op.method === 'GET' && op.pathTemplate.startsWith('/api/v1/'));
  assert.deepEqual(Object.keys(urls.live).sort(), gets.map((op) => op.operationId).sort());
});

for (const mode of ['live', 'test'] as const) {
  describe(`every GET operation, ${mode} key`, () => {
    test('a 200 carries a strong ETag and Cache-Control: no-store', async () => {
      const key = mode === 'live' ? live : sandbox;
      for (const [operationId, url] of Object.entries(urls[mode])) {
        const res = await get(url, key);
        assert.equal(res.status, 200, `${operationId}: ${res.text}`);
        assert.match(res.headers.etag ?? '', STRONG_TAG, operationId);
        assert.equal(res.headers['cache-control'], 'no-store', operationId);
      }
    });
  });
}

describe('records read alike twice answer 304 to their tag', () => {
  for (const mode of ['live', 'test'] as const) {
    // The sandbox's simulated services and requests are dated at the time of the read (its report runs are recorded).
    const stable = mode === 'live' ? undefined : new Set(['getAuthCheck', 'getReport', 'listReports', 'listWebhookEndpoints', 'getWebhookEndpoint', 'listEvents', 'getEvent', 'listRequestLogs', 'getRequestLog', 'getRequestStats', 'getWebhookEndpointStats']);
    test(`${mode} key: the same tag, then 304 with no body, the same ETag and no-store`, async () => {
      const key = mode === 'live' ? live : sandbox;
      for (const [operationId, url] of Object.entries(urls[mode])) {
        if (stable && !stable.has(operationId)) continue;
        const first = await get(url, key);
        const again = await get(url, key);
        assert.equal(again.headers.etag, first.headers.etag, `${operationId}: the same body, the same tag`);
        assertNotModified(await get(url, key, { 'If-None-Match': first.headers.etag! }), first.headers.etag!);
      }
    });
  }

  test('the sandbox\'s simulated records, dated at each read, answer 304 to *', async () => {
    const res = await get(urls.test.getService!, sandbox, { 'If-None-Match': '*' });
    assert.match(res.headers.etag ?? '', STRONG_TAG);
    assertNotModified(res, res.headers.etag!);
  });
});

describe('If-None-Match forms (RFC 9110: weak comparison)', () => {
  let etag: string;
  before(async () => {
    etag = (await get('/api/v1/webhook-endpoints', live)).headers.etag!;
  });
  const cases: Array<[string, () => string, number]> = [
    ['the tag itself', () => etag, 304],
    ['the tag as a weak one (W/)', () => `W/${etag}`, 304],
    ['a list that holds it', () => `"other", ${etag}, W/"another"`, 304],
    ['a list that holds it as W/, without spaces', () => `"other",W/${etag}`, 304],
    ['*', () => '*', 304],
    ['the tag, with Cache-Control: no-cache beside it (fetch() adds it)', () => etag, 304],
    ['another tag', () => '"AAAAAAAAAAAAAAAAAAAAAAAAAAA"', 200],
    ['a list without it', () => '"a", W/"b"', 200],
    ['the tag without its quotes', () => etag.slice(1, -1), 200],
    ['* inside a list (not a tag)', () => '"a", *', 200],
  ];
  for (const [name, header, status] of cases) {
    test(`${name}: ${status}`, async () => {
      const res = await get('/api/v1/webhook-endpoints', live, { 'If-None-Match': header(), ...(name.includes('no-cache') && { 'Cache-Control': 'no-cache' }) });
      assert.equal(res.status, status, res.text);
      assert.equal(res.headers.etag, etag);
      if (status === 200) assert.equal(res.body.success, true);
      else assertNotModified(res, etag);
    });
  }
});

describe('refusals stay refusals whatever If-None-Match says', () => {
  test('401 without a valid key', async () => {
    const res = await request(t.app).get('/api/v1/auth-check').set({ Authorization: 'Bearer sk_live_unknown', 'If-None-Match': '*' });
    assert.equal(res.status, 401);
    assert.equal(res.headers.etag, undefined);
  });

  test('403 from an address off the key\'s whitelist', async () => {
    const restricted = await apiKey(t.prisma, { brokerId: live.brokerId, scopes: ['admin:full'], ipWhitelist: ['203.0.113.7'] });
    const res = await get('/api/v1/auth-check', restricted, { 'If-None-Match': '*' });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.details.reason, 'ip_not_allowed');
    assert.equal(res.headers.etag, undefined);
  });

  test('403 for a key without the operation\'s scope', async () => {
    const reportsOnly = await apiKey(t.prisma, { brokerId: live.brokerId, scopes: ['reports:generate'] });
    const res = await get('/api/v1/services', reportsOnly, { 'If-None-Match': '*' });
    assert.equal(res.status, 403);
    assert.deepEqual(res.body.error.details.required_scopes, ['services:read', 'admin:full']);
    assert.equal(res.headers.etag, undefined);
  });

  test('400 for a bad parameter, and 404 for another broker\'s record', async () => {
    assert.equal((await get('/api/v1/services?limit=0', live, { 'If-None-Match': '*' })).status, 400);
    const other = await apiKey(t.prisma, { scopes: ['admin:full'] });
    const res = await get(`/api/v1/webhook-endpoints/${endpointId}`, other, { 'If-None-Match': '*' });
    assert.equal(res.status, 404);
    assert.equal(res.headers.etag, undefined);
  });
});

// Issue 40 item 3: a 304 the operation's query had to run for keeps its unit, so the limit bounds that work.
describe('a 304 answered after the query counts like its 200', () => {
  test('a key limited to 2 a minute polling the request log conditionally is refused on the third', async () => {
    const key = await apiKey(t.prisma, { brokerId: live.brokerId, scopes: ['admin:full'], rateLimit: 2 });
    const url = '/api/v1/request-logs?operation=getAuthCheck&limit=100';
    const first = await get(url, key);
    assert.equal(first.status, 200);
    assert.equal(remaining(first), 1);
    const second = await get(url, key, { 'If-None-Match': first.headers.etag! });
    assertNotModified(second, first.headers.etag!);
    assert.equal(remaining(second), 0, 'the 304 spent its unit');
    for (let i = 0; i < 3; i++) assert.equal((await get(url, key, { 'If-None-Match': first.headers.etag! })).status, 429);
  });

  test('a HEAD 304 after the query counts as the GET\'s does', async () => {
    const key = await apiKey(t.prisma, { brokerId: live.brokerId, scopes: ['admin:full'], rateLimit: 3 });
    const url = urls.live.getService!;
    const first = await get(url, key);
    assert.equal(remaining(first), 2);
    const res = await request(t.app).head(url).set({ Authorization: `Bearer ${key.key}`, 'If-None-Match': first.headers.etag! });
    assertNotModified(res, first.headers.etag!);
    assert.equal(remaining(res), 1);
  });
});

// Issue 39 item 6: HEAD is GET without a body, conditional requests included.
describe('HEAD answers If-None-Match as GET does', () => {
  const head = (path: string, key: TestApiKey, headers: Record<string, string> = {}) =>
    request(t.app).head(path).set({ Authorization: `Bearer ${key.key}`, ...headers });

  test('a HEAD 200 carries the GET\'s ETag; a matching If-None-Match is a 304', async () => {
    const url = urls.live.getService!;
    const got = await get(url, live);
    const tag = got.headers.etag!;
    const plain = await head(url, live);
    assert.equal(plain.status, 200);
    assert.equal(plain.headers.etag, tag);
    assertNotModified(await head(url, live, { 'If-None-Match': tag }), tag);
    assert.equal((await head(url, live, { 'If-None-Match': '"other"' })).status, 200);
  });
});

describe('HEAD is a GET without its body: conditional alike', () => {
  const head = (path: string, key: TestApiKey, headers: Record<string, string> = {}) =>
    request(t.app).head(path).set({ Authorization: `Bearer ${key.key}`, ...headers });

  test('every GET operation: the GET\'s tag; a matching If-None-Match is 304, another tag 200', async () => {
    const key = await apiKey(t.prisma, { brokerId: live.brokerId, scopes: ['admin:full'], rateLimit: 1000 });
    for (const [operationId, url] of Object.entries(urls.live)) {
      const got = await get(url, key);
      const headed = await head(url, key);
      assert.equal(headed.status, 200, operationId);
      assert.equal(headed.headers.etag, got.headers.etag, `${operationId}: the GET's tag`);
      const res = await head(url, key, { 'If-None-Match': got.headers.etag! });
      assert.equal(res.status, 304, operationId);
      assert.equal(res.headers.etag, got.headers.etag, operationId);
      assert.equal(res.headers['cache-control'], 'no-store', operationId);
      assert.equal((await head(url, key, { 'If-None-Match': '"other"' })).status, 200, operationId);
    }
  });
});

test('a 304 is logged: its api_logs row and its request log line', async () => {
  const capture = new LogCapture();
  const logger = createLogger('info', capture);
  const gate = createGate({ prisma: t.prisma, redis: t.deps.redis, logger });
  const app = createApp({ ...t.deps, logger, gate: gate.gate });
  const key = await apiKey(t.prisma, { brokerId: live.brokerId, scopes: ['admin:full'] });
  const auth = { Authorization: `Bearer ${key.key}` };
  const etag = (await request(app).get('/api/v1/webhook-endpoints').set(auth)).headers.etag!;
  const res = await request(app).get('/api/v1/webhook-endpoints').set({ ...auth, 'If-None-Match': etag, 'X-Request-Id': 'etag-log-304' });
  assert.equal(res.status, 304);
  await gate.apiLog.close();
  const rows = await t.prisma.apiLog.findMany({ where: { apiKeyId: key.id }, orderBy: { id: 'asc' } });
  assert.deepEqual(rows.map((r) => [r.status, r.method, r.path]), [
    [200, 'GET', '/api/v1/webhook-endpoints'],
    [304, 'GET', '/api/v1/webhook-endpoints'],
  ]);
  assert.equal(rows[1]!.requestId, 'etag-log-304');
  const line = capture.records().find((r) => r.requestId === 'etag-log-304');
  assert.ok(line, 'a request log line');
  assert.equal(line.msg, 'request completed');
  assert.deepEqual(line.res, { statusCode: 304 });
});

describe('a change through the API gives the next read a new tag', () => {
  /** Reads `url`, runs `change`, reads again with the old tag: a 200 with a new tag, whose own tag then answers 304. */
  async function changes(url: string, change: () => Promise<request.Response>): Promise<void> {
    const before = await get(url, live);
    assert.equal(before.status, 200);
    assertNotModified(await get(url, live, { 'If-None-Match': before.headers.etag! }), before.headers.etag!);
    const changed = await change();
    assert.ok(changed.status === 200 || changed.status === 202, changed.text);
    const after = await get(url, live, { 'If-None-Match': before.headers.etag! });
    assert.equal(after.status, 200, 'the old tag no longer matches');
    assert.equal(after.body.success, true);
    assert.notEqual(after.headers.etag, before.headers.etag);
    assertNotModified(await get(url, live, { 'If-None-Match': after.headers.etag! }), after.headers.etag!);
  }
  const post = (path: string, body: object) => request(t.app).post(path).set('Authorization', `Bearer ${live.key}`).send(body);

  test('a service\'s detail, after its password is changed', () =>
    changes(urls.live.getService!, () => post(`/api/v1/services/${serviceNumber}/password`, { password: 'Changed-Passw0rd-42' })));

  test('the services list (a cached page), and auth-check\'s count, after a service is created', async () => {
    const create = { plan: 'Basic VPS', hostname: 'etag-new.example.com', customer_email: 'etag@example.com' };
    await changes(urls.live.listServices!, () => post('/api/v1/service-create', create));
    await changes(urls.live.getAuthCheck!, () => post('/api/v1/service-create', { ...create, hostname: 'etag-newer.example.com' }));
  });

  test('the requests list, after a request is decided', () =>
    changes(urls.live.listRequests!, () => post(`/api/v1/requests/${requestId}/manage`, { action: 'deny', denial_reason: 'Not today' })));

  test('a webhook endpoint and the endpoints list, after it is updated', async () => {
    await changes(urls.live.getWebhookEndpoint!, () => post(`/api/v1/webhook-endpoints/${endpointId}`, { description: 'First' }));
    await changes(urls.live.listWebhookEndpoints!, () => post(`/api/v1/webhook-endpoints/${endpointId}`, { description: 'Second' }));
  });

  test('the events list, after a ping records an event', () =>
    changes(urls.live.listEvents!, () => post(`/api/v1/webhook-endpoints/${endpointId}/ping`, {})));
});
