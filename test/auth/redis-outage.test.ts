import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Express } from 'express';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import { createGate, type Gate } from '../../src/auth/gate.ts';
import { RATE_LIMIT_PREFIX } from '../../src/auth/rate-limit.ts';
import { requestRedis, waitUntilReady } from '../../src/redis.ts';
import { HEALTH_PING_MS, HEALTH_STALL_LOOKS, redisHealth } from '../../src/shared/redis-health.ts';
import { createServiceReadCache } from '../../src/services/read-cache.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';

// Redis frozen (SIGSTOP) keeps its connections open and answers nothing: only the shared stall
// detector (src/redis.ts redisHealth) tells. An API process of its own runs on a redis-server
// this test can freeze; the database is the test app's.
let t: TestApp;
let server: ChildProcess;
let redis: Redis;
let gate: Gate;
let app: Express;

async function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

before(async () => {
  t = await createTestApp({}, { workers: false });
  const port = await freePort();
  server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; ; i++) {
    redis = requestRedis({ options: { port, host: '127.0.0.1' }, description: 'freezable redis', stop: async () => {} });
    redis.on('error', () => {});
    try {
      await waitUntilReady(redis, 2000);
      break;
    } catch (err) {
      redis.disconnect();
      if (i > 20) throw err;
    }
  }
  gate = createGate({ prisma: t.prisma, redis, logger: t.deps.logger });
  app = createApp({ ...t.deps, redis, gate: gate.gate });
});
after(async () => {
  server?.kill('SIGCONT');
  server?.kill('SIGKILL');
  redis?.disconnect();
  await gate?.apiLog.close();
  await t?.close();
});

const authCheck = (key: string) => request(app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`);

/** Polls `check` until it holds (bounded, so a broken detector fails the test instead of hanging it). */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await sleep(20);
  assert.ok(check(), what);
}

describe('Redis frozen (SIGSTOP)', () => {
  test('is seen as a stall by one detector per client, and served again at its first PONG', async () => {
    const health = redisHealth(redis);
    assert.equal(redisHealth(redis), health, 'one detector per client, shared');
    assert.equal(health.usable(), true);
    server.kill('SIGSTOP');
    try {
      // Unusable after HEALTH_STALL_LOOKS looks without a PONG (within 1 s on an idle machine).
      assert.ok((HEALTH_STALL_LOOKS + 1) * HEALTH_PING_MS <= 1000);
      await until(() => !health.usable(), 'the stall is seen');
    } finally {
      server.kill('SIGCONT');
    }
    await until(() => health.usable(), 'usable again after the freeze');
  });

  test('requests are served from the insurance while frozen, and none of them is counted in Redis afterwards', async () => {
    const k = await apiKey(t.prisma, { rateLimit: 120 });
    const warm = await authCheck(k.key);
    assert.equal(warm.status, 200);
    const claimed = Number(await redis.get(`${RATE_LIMIT_PREFIX}:${k.id}`));
    assert.ok(claimed >= 1);
    const health = redisHealth(redis);
    server.kill('SIGSTOP');
    try {
      await until(() => !health.usable(), 'the stall is seen');
      for (let i = 1; i <= 10; i++) {
        const res = await authCheck(k.key);
        assert.equal(res.status, 200, `request ${i}: ${JSON.stringify(res.body)}`);
        assert.equal(res.headers['x-ratelimit-limit'], '120');
        assert.equal(res.headers['x-ratelimit-remaining'], String(120 - i), 'counted by this process alone');
      }
    } finally {
      server.kill('SIGCONT');
    }
    await until(() => health.usable(), 'usable again after the freeze');
    assert.equal(Number(await redis.get(`${RATE_LIMIT_PREFIX}:${k.id}`)), claimed, 'nothing was queued to run late');
    const after = await authCheck(k.key);
    assert.equal(after.status, 200);
    assert.equal(after.headers['x-ratelimit-remaining'], String(120 - 2), 'the shared count goes on where it was');
  });

  test('the services read cache is off while the detector says Redis is unusable', async () => {
    const cache = createServiceReadCache({ ttlMs: 60_000, redis, logger: t.deps.logger });
    const health = redisHealth(redis);
    let loads = 0;
    const load = async () => ({ value: { page: (loads += 1) } });
    try {
      let first = await cache.read('b', 'list', load);
      for (let i = 0; i < 200 && cache.freshness(first) === undefined; i += 1) {
        await sleep(10);
        first = await cache.read('b', 'list', load);
      }
      assert.equal(cache.freshness(first)?.(), true, 'cached while Redis answers');
      server.kill('SIGSTOP');
      try {
        await until(() => !health.usable(), 'the stall is seen');
        assert.equal(cache.freshness(first)?.(), false);
        const before = loads;
        await cache.read('b', 'list', load);
        assert.equal(loads, before + 1, 'read from the database');
      } finally {
        server.kill('SIGCONT');
      }
    } finally {
      await cache.close();
    }
  });
});
