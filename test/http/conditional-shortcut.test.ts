/**
 * A conditional read of a cached page is answered before validation (src/http/conditional.ts,
 * `shortcut`): the same key asking the exact URL of a cached page's 200 again, naming its tag,
 * while the page is fresh. Anything else takes the whole path: another URL is validated, another
 * key or a changed page is read again. The answers are the same either way; what the tests watch
 * is whether the services read cache was asked.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker, type TestApiKey } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

describe('a cached page\'s conditional read', () => {
  let t: TestApp;
  let brokerId: string;
  let key: TestApiKey;
  /** How often the services read cache was asked (once per request that reached the operation). */
  let reads = 0;

  before(async () => {
    t = await createTestApp({ servicesCacheMs: 60_000 }, { workers: false });
    brokerId = (await broker(t.prisma, { approval: 'automatic' })).id;
    key = await apiKey(t.prisma, { brokerId, scopes: ['admin:full'], rateLimit: 100_000 });
    await service(t, { brokerId });
    const cache = t.deps.serviceReads;
    const read = cache.read.bind(cache);
    cache.read = (...args) => {
      reads += 1;
      return read(...args);
    };
  });
  after(async () => {
    await t?.close();
  });
  beforeEach(() => {
    reads = 0;
  });

  const get = (url: string, headers: Record<string, string> = {}, as: TestApiKey = key) =>
    request(t.app).get(url).set({ Authorization: `Bearer ${as.key}`, ...headers });

  test('is answered 304 without reaching the operation, its unit of rate limit given back', async () => {
    const url = '/api/v1/services?limit=10';
    const first = await get(url);
    assert.equal(first.status, 200);
    const etag = first.headers.etag!;
    assert.equal(reads, 1);
    for (let i = 0; i < 3; i++) {
      const res = await get(url, { 'If-None-Match': etag });
      assert.equal(res.status, 304);
      assert.equal(res.text, '');
      assert.equal(res.headers.etag, etag);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers['x-ratelimit-remaining'], first.headers['x-ratelimit-remaining']);
    }
    assert.equal(reads, 1, 'the 304s did not reach the operation');
    assert.equal((await get(url, { 'If-None-Match': '"another-tag"' })).status, 200, 'a tag that does not match: the page');
    assert.equal(reads, 2);
  });

  test('a HEAD naming the tag is answered the same way: 304, its unit given back, the operation not reached', async () => {
    const url = '/api/v1/services?limit=9';
    const first = await get(url);
    const etag = first.headers.etag!;
    assert.equal(reads, 1);
    for (let i = 0; i < 3; i++) {
      const res = await request(t.app).head(url).set({ Authorization: `Bearer ${key.key}`, 'If-None-Match': etag });
      assert.equal(res.status, 304);
      assert.equal(res.headers.etag, etag);
      assert.equal(res.headers['x-ratelimit-remaining'], first.headers['x-ratelimit-remaining']);
    }
    assert.equal(reads, 1, 'the HEAD 304s did not reach the operation');
  });

  test('is logged with its operation, as every request', async () => {
    const url = '/api/v1/services?limit=11';
    const etag = (await get(url)).headers.etag!;
    assert.equal((await get(url, { 'If-None-Match': etag, 'X-Request-Id': 'shortcut-304' })).status, 304);
    await t.flushApiLog();
    const row = await t.prisma.apiLog.findFirst({ where: { requestId: 'shortcut-304' } });
    assert.equal(row?.status, 304);
    assert.equal(row?.operation, 'listServices');
    assert.equal(row?.path, '/api/v1/services');
  });

  test('another URL is validated: a bad parameter beside the same tag is a 400', async () => {
    const etag = (await get('/api/v1/services?limit=12')).headers.etag!;
    const res = await get('/api/v1/services?limit=12&colour=blue', { 'If-None-Match': etag });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'invalid_parameter');
    assert.equal((await get('/api/v1/services?limit=0', { 'If-None-Match': etag })).status, 400);
  });

  test('another key of the broker reads the page itself the first time', async () => {
    const url = '/api/v1/services?limit=13';
    const etag = (await get(url)).headers.etag!;
    const other = await apiKey(t.prisma, { brokerId, scopes: ['services:read'], rateLimit: 100_000 });
    reads = 0;
    assert.equal((await get(url, { 'If-None-Match': etag }, other)).status, 304);
    assert.equal(reads, 1, 'its own first conditional read reached the operation');
    assert.equal((await get(url, { 'If-None-Match': etag }, other)).status, 304);
    assert.equal(reads, 1);
  });

  test('a key that lost the scope is refused before the shortcut', async () => {
    const url = '/api/v1/services?limit=14';
    const reader = await apiKey(t.prisma, { brokerId, scopes: ['services:read'], rateLimit: 100_000 });
    const etag = (await get(url, {}, reader)).headers.etag!;
    await t.prisma.apiKey.update({ where: { id: reader.id }, data: { scopes: ['reports:write'] } });
    // The gate's key cache keeps a row briefly: ask until it has the new scopes.
    let status = 304;
    for (let i = 0; i < 100 && status === 304; i++) {
      status = (await get(url, { 'If-None-Match': etag }, reader)).status;
      if (status === 304) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(status, 403);
  });

  test('after a change through the API the old tag gets the new page', async () => {
    const url = '/api/v1/services?limit=100';
    const before = await get(url);
    const created = await request(t.app)
      .post('/api/v1/service-create')
      .set('Authorization', `Bearer ${key.key}`)
      .send({ plan: 'Basic VPS', hostname: 'shortcut.client.example', customer_email: 'ops@client.example' });
    assert.equal(created.status, 200);
    const after = await get(url, { 'If-None-Match': before.headers.etag! });
    assert.equal(after.status, 200);
    assert.notEqual(after.headers.etag, before.headers.etag);
    assert.equal(after.body.pagination.total, before.body.pagination.total + 1);
  });
});
