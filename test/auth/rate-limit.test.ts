import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import { createGate } from '../../src/auth/gate.ts';
import { createKeyRateLimiter, insuredLimit, leaseSize, RATE_LIMIT_PREFIX } from '../../src/auth/rate-limit.ts';
import { requestRedis, waitUntilReady } from '../../src/redis.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t?.close();
});

const authCheck = (app: Express, key: string) => request(app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`);

const int = (value: string | undefined): number => {
  assert.match(value ?? '', /^\d+$/, `not an integer: ${value}`);
  return Number(value);
};

function assertHeaders(res: request.Response, limit: number, remaining: number): void {
  assert.equal(int(res.headers['x-ratelimit-limit']), limit);
  assert.equal(int(res.headers['x-ratelimit-remaining']), remaining);
  const reset = int(res.headers['x-ratelimit-reset']);
  assert.ok(reset >= 1 && reset <= 60, `reset ${reset}`);
  assert.equal(res.headers['ratelimit-policy'], `"default";q=${limit};w=60`);
  assert.equal(res.headers['ratelimit'], `"default";r=${remaining};t=${reset}`);
}

describe('rate limit per key', () => {
  test('a limit of N lets N requests through and refuses the next with 429 and Retry-After', async () => {
    const n = 5;
    const k = await apiKey(t.prisma, { rateLimit: n, mode: 'test' });
    for (let i = 1; i <= n; i++) {
      const res = await authCheck(t.app, k.key);
      assert.equal(res.status, 200, `request ${i}: ${JSON.stringify(res.body)}`);
      assertHeaders(res, n, n - i);
    }
    const refused = await authCheck(t.app, k.key);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.success, false);
    assert.equal(refused.body.error.code, 'rate_limit_exceeded');
    assertHeaders(refused, n, 0);
    const retryAfter = int(refused.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60);
    // Retry-After is never earlier than the window's reset.
    assert.ok(retryAfter >= int(refused.headers['x-ratelimit-reset']));
    // Refused requests still count: the key stays refused.
    assert.equal((await authCheck(t.app, k.key)).status, 429);
  });

  test('each key has its own count', async () => {
    const a = await apiKey(t.prisma, { rateLimit: 1 });
    const b = await apiKey(t.prisma, { rateLimit: 1, brokerId: a.brokerId });
    assert.equal((await authCheck(t.app, a.key)).status, 200);
    assert.equal((await authCheck(t.app, a.key)).status, 429);
    assert.equal((await authCheck(t.app, b.key)).status, 200);
  });

  test('two app instances on one Redis share a key\'s limit', async () => {
    const second = await t.another();
    const k = await apiKey(t.prisma, { rateLimit: 4 });
    assert.equal((await authCheck(t.app, k.key)).status, 200);
    assert.equal((await authCheck(second, k.key)).status, 200);
    assert.equal((await authCheck(t.app, k.key)).status, 200);
    const last = await authCheck(second, k.key);
    assert.equal(last.status, 200);
    assertHeaders(last, 4, 0);
    assert.equal((await authCheck(t.app, k.key)).status, 429);
    assert.equal((await authCheck(second, k.key)).status, 429);
  });

  test('every authenticated response carries the headers (403 and 400 too)', async () => {
    const k = await apiKey(t.prisma, { scopes: ['services:read'], rateLimit: 10 });
    const forbidden = await request(t.app).post('/api/v1/auth-check').set('Authorization', `Bearer ${k.key}`);
    assert.equal(forbidden.status, 403);
    assertHeaders(forbidden, 10, 9);
    const invalid = await request(t.app)
      .get('/api/v1/services?limit=0')
      .set('Authorization', `Bearer ${k.key}`);
    assert.equal(invalid.status, 400);
    assertHeaders(invalid, 10, 8);
  });

  test('with Redis down requests are served, each process counting alone at its share of the limit', async () => {
    const dead = requestRedis({ options: { path: '/nonexistent/capi-redis.sock' }, description: 'none', stop: async () => {} });
    dead.on('error', () => {});
    const gate = createGate({ prisma: t.prisma, redis: dead, logger: t.deps.logger, apiProcesses: 2 });
    const app = createApp({ ...t.deps, redis: dead, gate: gate.gate });
    const k = await apiKey(t.prisma, { rateLimit: 5 });
    try {
      // A key of 5 a minute on two API processes: 2 here.
      assert.equal(insuredLimit(5, 2), 2);
      for (let i = 1; i <= 2; i++) {
        const res = await authCheck(app, k.key);
        assert.equal(res.status, 200, `request ${i}: ${JSON.stringify(res.body)}`);
        assertHeaders(res, 2, 2 - i);
      }
      const refused = await authCheck(app, k.key);
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, 'rate_limit_exceeded');
      assert.ok(int(refused.headers['retry-after']) >= 1);
      // Nothing of this reached the shared count.
      assert.equal(await t.deps.redis.get(`${RATE_LIMIT_PREFIX}:${k.id}`), null);
    } finally {
      dead.disconnect();
      await gate.apiLog.close();
    }
  });

  test('a 304 counted by the insurance gives its unit back to the insurance', async () => {
    const dead = requestRedis({ options: { path: '/nonexistent/capi-redis.sock' }, description: 'none', stop: async () => {} });
    dead.on('error', () => {});
    const limiter = createKeyRateLimiter(dead);
    try {
      const first = await limiter.consume('key_insured_refund', 3);
      assert.equal(first.insured, true);
      assert.equal(first.remaining, 2);
      assert.equal(limiter.refund('key_insured_refund', 3, first)?.remaining, 3);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal((await limiter.consume('key_insured_refund', 3)).remaining, 2, 'the unit is back in the count');
    } finally {
      dead.disconnect();
    }
  });
});

describe('requests claimed from Redis in blocks', () => {
  const redisCount = async (keyId: string) => Number(await t.deps.redis.get(`${RATE_LIMIT_PREFIX}:${keyId}`));

  for (const [limit, counted, size] of [
    [5, 0, 1],
    [63, 0, 1],
    [120, 0, 3],
    [6400, 0, 100],
    [1_000_000_000, 0, 100],
    [6400, 6350, 1],
    [120, 130, 1],
  ] as const) {
    test(`a limit of ${limit} with ${counted} counted claims ${size} at once`, () => {
      assert.equal(leaseSize(limit, counted), size);
    });
  }

  test('a busy key costs Redis one claim per block, and its headers stay exact in one process', async () => {
    const k = await apiKey(t.prisma, { rateLimit: 6400 });
    assertHeaders(await authCheck(t.app, k.key), 6400, 6399);
    assert.equal(await redisCount(k.id), 100, 'one claim of 100');
    for (let i = 2; i <= 5; i++) assertHeaders(await authCheck(t.app, k.key), 6400, 6400 - i);
    assert.equal(await redisCount(k.id), 100, 'served from the block');
  });

  test('processes together never let more than the limit through, and at most a block per process fewer', async () => {
    const second = await t.another();
    const limit = 100;
    const k = await apiKey(t.prisma, { rateLimit: limit });
    let ok = 0;
    for (let i = 0; i < 130; i++) {
      const res = await authCheck(i % 2 === 0 ? t.app : second, k.key);
      assert.ok(res.status === 200 || res.status === 429, `status ${res.status}`);
      if (res.status === 200) ok += 1;
    }
    assert.ok(ok <= limit, `${ok} requests went through a limit of ${limit}`);
    assert.ok(ok >= limit - 2 * leaseSize(limit, 0), `only ${ok} of ${limit} went through`);
    assert.ok((await redisCount(k.id)) >= 130, 'refused requests are counted too');
  });

  test('concurrent requests of one key share one claim', async () => {
    const k = await apiKey(t.prisma, { rateLimit: 6400 });
    const statuses = await Promise.all(Array.from({ length: 20 }, () => authCheck(t.app, k.key).then((r) => r.status)));
    assert.deepEqual(new Set(statuses), new Set([200]));
    assert.equal(await redisCount(k.id), 100);
  });

  test('a block held when Redis goes away is not served from: the insurance counts instead', async () => {
    const redis = requestRedis(t.redisEndpoint);
    redis.on('error', () => {});
    await waitUntilReady(redis);
    const limiter = createKeyRateLimiter(redis);
    const first = await limiter.consume('key_block_test', 6400);
    assert.equal(first.remaining, 6399);
    assert.equal(first.insured, undefined);
    const closed = new Promise((resolve) => redis.once('end', resolve));
    redis.disconnect();
    await closed;
    assert.equal(limiter.tryConsume('key_block_test', 6400), undefined, 'nothing from the block');
    const insured = await limiter.consume('key_block_test', 6400);
    assert.equal(insured.insured, true);
    assert.equal(insured.limit, 6400);
    assert.equal(insured.remaining, 6399, 'the insurance counts on its own');
  });

  test('tryConsume counts from the block without Redis, and leaves what needs Redis to consume', async () => {
    const redis = requestRedis(t.redisEndpoint);
    redis.on('error', () => {});
    await waitUntilReady(redis);
    try {
      const limiter = createKeyRateLimiter(redis);
      assert.equal(limiter.tryConsume('key_try_test', 6400), undefined, 'no block claimed yet');
      assert.equal((await limiter.consume('key_try_test', 6400)).remaining, 6399);
      for (let i = 2; i <= 100; i++) assert.equal(limiter.tryConsume('key_try_test', 6400)?.remaining, 6400 - i);
      assert.equal(limiter.tryConsume('key_try_test', 6400), undefined, 'the block of 100 is used up');
      assert.equal(limiter.tryConsume('key_try_test', 9999), undefined, 'a changed limit goes to Redis');
      assert.equal(await redis.get(`${RATE_LIMIT_PREFIX}:key_try_test`), '100');
    } finally {
      redis.disconnect();
    }
  });
});
