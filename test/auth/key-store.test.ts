import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { createApp } from '../../src/app.ts';
import { createGate, type GateDeps } from '../../src/auth/gate.ts';
import { generateApiKey } from '../../src/auth/keys.ts';
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

/** The test database's client, counting the key look-ups made through it. */
function countingPrisma(prisma: PrismaClient): { prisma: PrismaClient; lookups: () => number } {
  let n = 0;
  const apiKeys = new Proxy(prisma.apiKey, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== 'findUnique' || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        n += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const counted = new Proxy(prisma, {
    get: (target, prop, receiver) => (prop === 'apiKey' ? apiKeys : Reflect.get(target, prop, receiver)),
  });
  return { prisma: counted, lookups: () => n };
}

function gateApp(overrides: Partial<GateDeps>) {
  const counting = countingPrisma(t.prisma);
  const gate = createGate({ prisma: counting.prisma, redis: t.deps.redis, logger: t.deps.logger, ...overrides });
  return { app: createApp({ ...t.deps, gate: gate.gate }), gate, lookups: counting.lookups };
}

describe('unknown keys (negative cache)', () => {
  test('a flood of one unknown key costs one database look-up', async () => {
    const { app, gate, lookups } = gateApp({ negativeCache: { ttlMs: 60_000, size: 100 } });
    const unknown = generateApiKey('live').key;
    const first = await Promise.all(Array.from({ length: 20 }, () => authCheck(app, unknown)));
    for (let i = 0; i < 20; i++) first.push(await authCheck(app, unknown));
    for (const res of first) assert.equal(res.status, 401);
    assert.equal(lookups(), 1);
    await gate.apiLog.close();
  });

  test('without the negative cache every request of an unknown key is looked up', async () => {
    // The control of the test above: the count it asserts is the cache's doing.
    const { app, gate, lookups } = gateApp({ negativeCache: { ttlMs: 0, size: 100 } });
    const unknown = generateApiKey('live').key;
    for (let i = 0; i < 3; i++) assert.equal((await authCheck(app, unknown)).status, 401);
    assert.equal(lookups(), 3);
    await gate.apiLog.close();
  });

  test('a key created after its hash was cached as unknown works within the negative cache time', async () => {
    const ttlMs = 300;
    const { app, gate } = gateApp({ negativeCache: { ttlMs, size: 100 } });
    const chosen = generateApiKey('live').key;
    assert.equal((await authCheck(app, chosen)).status, 401);
    const k = await apiKey(t.prisma, { key: chosen });
    const deadline = Date.now() + ttlMs + 50;
    await new Promise((r) => setTimeout(r, deadline - Date.now()));
    const res = await authCheck(app, chosen);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.key_id, k.id);
    await gate.apiLog.close();
  });

  test('the configured app remembers unknown keys for KEY_NEGATIVE_CACHE_MS', async () => {
    const small = await createTestApp({ keyNegativeCacheMs: 3000 }, { workers: false });
    try {
      const chosen = generateApiKey('test').key;
      assert.equal((await authCheck(small.app, chosen)).status, 401);
      await apiKey(small.prisma, { key: chosen, mode: 'test' });
      // Still remembered as unknown inside the window (the look-up is what is saved)...
      assert.equal((await authCheck(small.app, chosen)).status, 401);
      await new Promise((r) => setTimeout(r, 3100));
      // ...and a working key once it has passed.
      assert.equal((await authCheck(small.app, chosen)).status, 200);
    } finally {
      await small.close();
    }
  });

  test('the negative cache never holds more than its size', async () => {
    const size = 5;
    const { app, gate, lookups } = gateApp({ negativeCache: { ttlMs: 60_000, size } });
    const keys = Array.from({ length: 12 }, () => generateApiKey('live').key);
    for (const key of keys) {
      assert.equal((await authCheck(app, key)).status, 401);
      assert.ok(gate.keys.unknownCount <= size, `${gate.keys.unknownCount} entries`);
    }
    assert.equal(gate.keys.unknownCount, size);
    // The oldest were forgotten (looked up again), the newest are still remembered.
    const before = lookups();
    assert.equal((await authCheck(app, keys[0]!)).status, 401);
    assert.equal(lookups(), before + 1);
    assert.equal((await authCheck(app, keys.at(-1)!)).status, 401);
    assert.equal(lookups(), before + 1);
    await gate.apiLog.close();
  });
});
