/**
 * A cached page's freshness (src/services/read-cache.ts `freshness`): what lets a conditional read
 * of it be answered before validation (src/http/conditional.ts). It holds exactly as long as the
 * cache would serve the page: no change of the broker's services, its time not up.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { createLogger } from '../../src/logger.ts';
import { requestRedis, startPrivateRedis, waitUntilReady, type RedisEndpoint } from '../../src/redis.ts';
import { createServiceReadCache, type ServiceReadCache } from '../../src/services/read-cache.ts';

const logger = createLogger('silent');

describe('the freshness of a cached answer', () => {
  let endpoint: RedisEndpoint;
  let redis: Redis;
  const caches: ServiceReadCache[] = [];

  before(async () => {
    endpoint = await startPrivateRedis();
    redis = requestRedis(endpoint);
    await waitUntilReady(redis);
  });
  after(async () => {
    for (const cache of caches) await cache.close();
    redis?.disconnect();
    await endpoint?.stop();
  });

  /** A cache whose subscription is up (a second read of a key comes from memory). */
  async function subscribedCache(ttlMs = 60_000): Promise<ServiceReadCache> {
    const cache = createServiceReadCache({ ttlMs, redis, logger });
    caches.push(cache);
    for (let i = 0; i < 200; i += 1) {
      let loads = 0;
      await cache.read('probe', 'k', async () => ({ value: (loads += 1) }));
      await cache.read('probe', 'k', async () => ({ value: (loads += 1) }));
      if (loads === 1) return cache;
      await sleep(10);
    }
    throw new Error('the cache never subscribed');
  }

  const page = (name: string) => ({ name });

  test('holds for a cached page until its broker\'s services change, and not after', async () => {
    const cache = await subscribedCache();
    const first = await cache.read('b1', 'list', async () => ({ value: page('first') }));
    const fresh = cache.freshness(first);
    assert.ok(fresh, 'a cached object has a freshness');
    assert.equal(fresh(), true);
    assert.equal(await cache.read('b1', 'list', async () => ({ value: page('second') })), first, 'still the cached page');
    await cache.changed('b1');
    assert.equal(fresh(), false, 'a change ends it');
    const reloaded = await cache.read('b1', 'list', async () => ({ value: page('reloaded') }));
    assert.notEqual(reloaded, first);
    assert.equal(fresh(), false, 'the new page does not bring the old one back');
    assert.equal(cache.freshness(reloaded)?.(), true);
  });

  test('another broker\'s change leaves it fresh', async () => {
    const cache = await subscribedCache();
    const mine = await cache.read('b2', 'list', async () => ({ value: page('mine') }));
    await cache.changed('someone-else');
    assert.equal(cache.freshness(mine)?.(), true);
  });

  test('a change while the page was loading: never fresh', async () => {
    const cache = await subscribedCache();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const reading = cache.read('b3', 'list', async () => {
      await gate;
      return { value: page('loaded before the change committed') };
    });
    await cache.changed('b3');
    release();
    const stale = await reading;
    assert.equal(cache.freshness(stale)?.() ?? false, false);
  });

  test('ends with the cache time, and with the page\'s own end (a cancellation falling due)', async () => {
    const short = await subscribedCache(150);
    const timed = await short.read('b4', 'list', async () => ({ value: page('timed') }));
    assert.equal(short.freshness(timed)?.(), true);
    const cache = await subscribedCache();
    const due = await cache.read('b4', 'list', async () => ({ value: page('due'), until: new Date(Date.now() + 150) }));
    assert.equal(cache.freshness(due)?.(), true);
    await sleep(200);
    assert.equal(short.freshness(timed)?.(), false, 'the cache time is up');
    assert.equal(cache.freshness(due)?.(), false, 'the page\'s own end has come');
  });

  test('nothing is fresh without the subscription, and numbers have none', async () => {
    const off = createServiceReadCache({ ttlMs: 0, redis, logger });
    caches.push(off);
    const uncached = await off.read('b5', 'list', async () => ({ value: page('uncached') }));
    assert.equal(off.freshness(uncached), undefined);
    const cache = await subscribedCache();
    await cache.read('b5', 'count', async () => ({ value: 3 }));
    assert.equal(cache.freshness(page('never read')), undefined);
  });
});
