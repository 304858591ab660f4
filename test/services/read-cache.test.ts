/**
 * Service list pages and auth-check's count are held per API process (SERVICES_CACHE_MS) and
 * dropped on every change through the API, in this process and in the others (Redis pub/sub).
 * Rows written behind the API's back (as an admin CLI import does) stand in for "outside the API".
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import request from 'supertest';
import type { Express } from 'express';
import { createLogger } from '../../src/logger.ts';
import { requestRedis, startPrivateRedis, waitUntilReady, type RedisEndpoint } from '../../src/redis.ts';
import { ACK_WAIT_MS, SERVICES_CHANGED_CHANNEL, createServiceReadCache, type ServiceReadCache, type ServiceReadCacheOptions } from '../../src/services/read-cache.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

const logger = createLogger('silent');
const createBody = { plan: 'Basic VPS', hostname: 'web.client.example', customer_email: 'ops@client.example' };

describe('API processes with a long cache time (60 s)', () => {
  let t: TestApp;
  let other: Express;
  let brokerId: string;
  let key: string;

  before(async () => {
    t = await createTestApp({ servicesCacheMs: 60_000 });
    other = await t.another();
    brokerId = (await broker(t.prisma, { approval: 'automatic' })).id;
    key = (await apiKey(t.prisma, { brokerId, scopes: ['admin:full'] })).key;
  });
  after(async () => {
    await t?.close();
  });

  const list = (app: Express, query = '') =>
    request(app).get(`/api/v1/services${query}`).set('Authorization', `Bearer ${key}`).expect(200);
  const numbers = (res: request.Response): number[] => res.body.data.map((s: { service_number: number }) => s.service_number);
  const create = (app: Express) =>
    request(app).post('/api/v1/service-create').set('Authorization', `Bearer ${key}`).send(createBody).expect(200);

  test('a page is reused until the broker\'s services change through the API, then read afresh', async () => {
    const first = await list(t.app);
    const behindTheBack = await service(t, { brokerId });
    const again = await list(t.app);
    assert.deepEqual(again.body, first.body, 'the same page, from the cache');
    const created = await create(t.app);
    const fresh = await list(t.app);
    assert.ok(numbers(fresh).includes(created.body.data.service_number), 'the created service shows at once');
    assert.ok(numbers(fresh).includes(behindTheBack.serviceNumber));
    assert.equal(fresh.body.pagination.total, first.body.pagination.total + 2);
  });

  test('another API process drops its pages when this one changes the broker\'s services', async () => {
    const before = await list(other);
    const created = await create(t.app);
    const after = await list(other);
    assert.equal(after.body.pagination.total, before.body.pagination.total + 1);
    assert.ok(numbers(after).includes(created.body.data.service_number));
  });

  test('each query has its page: filters and paging are part of the key', async () => {
    await service(t, { brokerId, status: 'suspended' });
    await create(t.app); // drops what the earlier tests cached
    const all = await list(t.app, '?limit=100');
    const suspended = await list(t.app, '?status=suspended');
    const second = await list(t.app, '?limit=1&offset=1');
    assert.ok(suspended.body.data.length >= 1);
    assert.ok(suspended.body.data.every((s: { status: string }) => s.status === 'suspended'));
    assert.equal(second.body.data.length, 1);
    assert.equal(second.body.data[0].service_number, all.body.data[1].service_number);
  });

  test('a scheduled cancellation shows the moment it falls due, though its page was cached', async () => {
    const ownBroker = (await broker(t.prisma)).id;
    const ownKey = (await apiKey(t.prisma, { brokerId: ownBroker, scopes: ['admin:full'] })).key;
    // Far enough ahead that the first read is done before it on a loaded machine (a full test run
    // on two cores once took longer than the 1.5 s this allowed).
    const cancelAt = new Date(Date.now() + 4000);
    const scheduled = await service(t, { brokerId: ownBroker, cancelAt });
    const read = () => request(t.app).get('/api/v1/services').set('Authorization', `Bearer ${ownKey}`).expect(200);
    const before = await read();
    assert.ok(Date.now() < cancelAt.getTime(), 'the first read was done before the cancellation fell due');
    assert.equal(before.body.data[0].service_number, scheduled.serviceNumber);
    assert.equal(before.body.data[0].status, 'active');
    await sleep(cancelAt.getTime() - Date.now() + 50);
    const after = await read();
    assert.equal(after.body.data[0].status, 'cancelled');
    assert.equal(after.body.data[0].cancelled_at, cancelAt.toISOString());
  });

  test('an approval through request management shows in the list at once', async () => {
    const manual = (await broker(t.prisma, { approval: 'manual' })).id;
    const manualKey = (await apiKey(t.prisma, { brokerId: manual, scopes: ['admin:full'] })).key;
    const as = (r: request.Test) => r.set('Authorization', `Bearer ${manualKey}`);
    const pending = await as(request(t.app).post('/api/v1/service-create')).send(createBody).expect(202);
    const before = await as(request(other).get('/api/v1/services')).expect(200);
    assert.equal(before.body.pagination.total, 0);
    const approved = await as(request(t.app).post(`/api/v1/requests/${pending.body.data.request_id}/manage`))
      .send({ action: 'approve' })
      .expect(200);
    const after = await as(request(other).get('/api/v1/services')).expect(200);
    assert.equal(after.body.pagination.total, 1);
    assert.equal(after.body.data[0].service_number, approved.body.data.service_number);
  });

  test('a password change through the API drops the pages (updated_at moves)', async () => {
    const created = await create(t.app);
    const n = created.body.data.service_number;
    const find = (res: request.Response) => res.body.data.find((s: { service_number: number }) => s.service_number === n);
    const before = find(await list(t.app, '?limit=100'));
    await sleep(5);
    await request(t.app).post(`/api/v1/services/${n}/password`).set('Authorization', `Bearer ${key}`).send({}).expect(200);
    const after = find(await list(other, '?limit=100'));
    assert.ok(after.updated_at > before.updated_at, `${after.updated_at} > ${before.updated_at}`);
  });

  test('pages with credentials are never cached', async () => {
    const row = await service(t, { brokerId, password: 'First-Passw0rd-1' });
    const creds = async () => {
      const res = await list(t.app, '?include_credentials=true&limit=100');
      return res.body.data.find((s: { service_number: number }) => s.service_number === row.serviceNumber).credentials;
    };
    assert.equal((await creds()).password, 'First-Passw0rd-1');
    await t.prisma.service.update({
      where: { id: row.id },
      data: { passwordEnc: (await t.deps.credentials()).encrypt('Second-Passw0rd-2') },
    });
    assert.equal((await creds()).password, 'Second-Passw0rd-2');
  });

  test('auth-check\'s service count is dropped on a change too', async () => {
    const count = async (app: Express) =>
      (await request(app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`).expect(200)).body.data.service_count;
    const before = await count(other);
    await service(t, { brokerId }); // behind the API's back: not counted yet
    assert.equal(await count(other), before);
    await create(t.app);
    assert.equal(await count(other), before + 2);
  });
});

describe('a cached page as production sends it (responses not validated)', () => {
  let t: TestApp;
  let checked: TestApp;

  before(async () => {
    t = await createTestApp({ servicesCacheMs: 60_000, validateResponses: false });
    checked = await createTestApp({ servicesCacheMs: 60_000 });
  });
  after(async () => {
    await t?.close();
    await checked?.close();
  });

  test('is the same JSON, with the same headers, as the page a validated app answers', async () => {
    const pages = [];
    for (const app of [t, checked]) {
      const brokerId = (await broker(app.prisma)).id;
      const key = (await apiKey(app.prisma, { brokerId, scopes: ['services:read'] })).key;
      for (const n of [100000001, 100000002]) {
        await service(app, { brokerId, serviceNumber: n, createdAt: new Date(Date.UTC(2026, 0, n - 100000000)), password: 'Same-Passw0rd-1' });
      }
      const read = () => request(app.app).get('/api/v1/services?limit=1').set('Authorization', `Bearer ${key}`).expect(200);
      const first = await read();
      const cached = await read();
      assert.equal(cached.text, first.text);
      assert.equal(cached.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(cached.headers['content-length'], String(Buffer.byteLength(cached.text)));
      const head = await request(app.app).head('/api/v1/services?limit=1').set('Authorization', `Bearer ${key}`).expect(200);
      assert.equal(head.headers['content-length'], cached.headers['content-length']);
      assert.equal(head.text, undefined, 'HEAD has no body');
      pages.push(cached);
    }
    assert.equal(pages[0]!.text, pages[1]!.text);
    assert.deepEqual(JSON.parse(pages[0]!.text), {
      success: true,
      data: [pages[1]!.body.data[0]],
      pagination: { total: 2, limit: 1, offset: 0, has_more: true },
    });
    assert.equal(pages[0]!.body.data[0].service_number, 100000002);
  });
});

describe('changes outside the API', () => {
  let t: TestApp;

  before(async () => {
    t = await createTestApp({ servicesCacheMs: 400 });
  });
  after(async () => {
    await t?.close();
  });

  test('show once the cache time has passed', async () => {
    const brokerId = (await broker(t.prisma)).id;
    const key = (await apiKey(t.prisma, { brokerId, scopes: ['services:read'] })).key;
    const total = async () =>
      (await request(t.app).get('/api/v1/services').set('Authorization', `Bearer ${key}`).expect(200)).body.pagination.total;
    assert.equal(await total(), 0);
    await service(t, { brokerId });
    await sleep(450);
    assert.equal(await total(), 1);
  });
});

describe('the cache itself', () => {
  let endpoint: RedisEndpoint;
  let redis: Redis;

  before(async () => {
    endpoint = await startPrivateRedis();
    redis = requestRedis(endpoint);
    await waitUntilReady(redis);
  });
  after(async () => {
    redis?.disconnect();
    await endpoint?.stop();
  });

  /** A cache whose subscription is up: a second read of a key comes from memory. */
  async function subscribedCache(options: Partial<ServiceReadCacheOptions> = {}) {
    const cache = createServiceReadCache({ ttlMs: 60_000, redis, logger, ...options });
    for (let i = 0; i < 200; i += 1) {
      let loads = 0;
      await cache.read('probe', 'k', async () => ({ value: (loads += 1) }));
      await cache.read('probe', 'k', async () => ({ value: (loads += 1) }));
      if (loads === 1) return cache;
      await sleep(10);
    }
    throw new Error('the cache never subscribed');
  }

  test('concurrent reads of one key share one load', async () => {
    const cache = await subscribedCache();
    let loads = 0;
    const load = async () => {
      loads += 1;
      await sleep(20);
      return { value: 'page' };
    };
    const values = await Promise.all([cache.read('b1', 'k', load), cache.read('b1', 'k', load), cache.read('b1', 'k', load)]);
    assert.deepEqual(values, ['page', 'page', 'page']);
    assert.equal(loads, 1);
    await cache.close();
  });

  test('a failed load is not kept: the next read loads again', async () => {
    const cache = await subscribedCache();
    await assert.rejects(cache.read('b1', 'k', async () => Promise.reject(new Error('database down'))), /database down/);
    assert.equal(await cache.read('b1', 'k', async () => ({ value: 'ok' })), 'ok');
    await cache.close();
  });

  test('a read in flight when the broker changes is neither stored nor shared with later reads', async () => {
    const cache = await subscribedCache();
    let release!: () => void;
    const slow = cache.read('b1', 'k', () => new Promise<{ value: string }>((resolve) => (release = () => resolve({ value: 'before' }))));
    await cache.changed('b1');
    const later = await cache.read('b1', 'k', async () => ({ value: 'after' }));
    assert.equal(later, 'after');
    release();
    assert.equal(await slow, 'before');
    assert.equal(await cache.read('b1', 'k', async () => ({ value: 'third' })), 'after');
    await cache.close();
  });

  test('a value is not used past the `until` its loader gave', async () => {
    const cache = await subscribedCache();
    const until = new Date(Date.now() + 100);
    assert.equal(await cache.read('b1', 'due', async () => ({ value: 1, until })), 1);
    assert.equal(await cache.read('b1', 'due', async () => ({ value: 2 })), 1);
    await sleep(120);
    assert.equal(await cache.read('b1', 'due', async () => ({ value: 3 })), 3);
    await cache.close();
  });

  test('a change published by another process drops this one\'s entries', async () => {
    const cache = await subscribedCache();
    const elsewhere = createServiceReadCache({ ttlMs: 60_000, redis, logger });
    await cache.read('b2', 'k', async () => ({ value: 'old' }));
    await elsewhere.changed('b2');
    let value = 'old';
    for (let i = 0; i < 100 && value === 'old'; i += 1) {
      await sleep(10);
      value = await cache.read('b2', 'k', async () => ({ value: 'new' }));
    }
    assert.equal(value, 'new');
    await elsewhere.close();
    await cache.close();
  });

  /**
   * A request client whose duplicates (the cache's subscriber) handle each message `delayMs` late, as
   * a process whose event loop is busy does: its copy of a notice sits unread while others answer.
   */
  function slowToHear(delayMs: number): Redis {
    const client = requestRedis(endpoint);
    const duplicate = client.duplicate.bind(client);
    client.duplicate = (override) => {
      const subscriber = duplicate(override);
      const emit = subscriber.emit.bind(subscriber);
      subscriber.emit = (event: string | symbol, ...args: unknown[]) => {
        if (event !== 'message') return emit(event, ...args);
        setTimeout(() => emit(event, ...args), delayMs);
        return true;
      };
      return subscriber;
    };
    return client;
  }

  /** A bare subscriber, as another process's or a previous version's, that never acknowledges. */
  async function listener(channel: string): Promise<Redis> {
    const client = redis.duplicate();
    await waitUntilReady(client);
    await client.subscribe(channel);
    return client;
  }

  /** A logger whose warnings the test reads. */
  function warnings() {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    return { lines, logger: createLogger('warn', sink) };
  }

  test('a change returns only once a process slow to hear it has dropped its pages', async () => {
    const slowRedis = slowToHear(100);
    await waitUntilReady(slowRedis);
    const slow = await subscribedCache({ redis: slowRedis });
    // A generous bound: this is about waiting for the slow process, not about the bound.
    const writer = await subscribedCache({ ackWaitMs: 5000 });
    try {
      assert.equal(await slow.read('b5', 'k', async () => ({ value: 'old' })), 'old');
      assert.equal(await slow.read('b5', 'k', async () => ({ value: 'unread' })), 'old', 'cached');
      const started = Date.now();
      await writer.changed('b5');
      const took = Date.now() - started;
      assert.equal(await slow.read('b5', 'k', async () => ({ value: 'new' })), 'new', 'the next read in the slow process sees the change');
      assert.ok(took >= 90, `changed() waited for the slow process (${took} ms)`);
    } finally {
      await writer.close();
      await slow.close();
      slowRedis.disconnect();
    }
  });

  test('a change returns within the bound, with a warning, when a receiver never acknowledges', async () => {
    const mute = await listener(SERVICES_CHANGED_CHANNEL);
    const { lines, logger: warned } = warnings();
    const cache = await subscribedCache({ logger: warned });
    try {
      const started = Date.now();
      await cache.changed('b6');
      const took = Date.now() - started;
      assert.ok(took >= ACK_WAIT_MS - 10, `it waited for the silent receiver (${took} ms)`);
      assert.ok(took < ACK_WAIT_MS + 1000, `but not much past the bound (${took} ms)`);
      const warning = lines.find((l) => String(l.msg).includes('acknowledged'));
      assert.ok(warning, 'a warning says not every process acknowledged');
      assert.equal(warning.receivers, 2, 'this cache and the silent one received it');
      assert.equal(warning.acknowledged, 1, 'only this cache acknowledged');
    } finally {
      await cache.close();
      mute.disconnect();
    }
  });

  test('a process of the previous version (bare broker id, no acknowledgement) hears our changes, and we its', async () => {
    const previous = await listener('capi:services-changed');
    const heard: string[] = [];
    previous.on('message', (_channel: string, brokerId: string) => heard.push(brokerId));
    const cache = await subscribedCache();
    try {
      const started = Date.now();
      await cache.changed('b7');
      assert.ok(Date.now() - started < ACK_WAIT_MS, 'it is not waited for');
      for (let i = 0; i < 100 && !heard.includes('b7'); i += 1) await sleep(10);
      assert.deepEqual(heard, ['b7']);
      await cache.read('b7', 'k', async () => ({ value: 'old' }));
      await redis.publish('capi:services-changed', 'b7');
      let value = 'old';
      for (let i = 0; i < 100 && value === 'old'; i += 1) {
        await sleep(10);
        value = await cache.read('b7', 'k', async () => ({ value: 'new' }));
      }
      assert.equal(value, 'new');
    } finally {
      await cache.close();
      previous.disconnect();
    }
  });

  test('without its subscription (Redis unreachable) it serves nothing from memory', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const unreachable = new Redis({ port, host: '127.0.0.1', lazyConnect: true, enableOfflineQueue: false, retryStrategy: () => 50 });
    const cache = createServiceReadCache({ ttlMs: 60_000, redis: unreachable, logger });
    let loads = 0;
    for (let i = 0; i < 3; i += 1) await cache.read('b3', 'k', async () => ({ value: (loads += 1) }));
    assert.equal(loads, 3);
    const started = Date.now();
    await cache.changed('b3');
    assert.ok(Date.now() - started < ACK_WAIT_MS, 'a change returns at once: nobody can be told');
    await cache.close();
    unreachable.disconnect();
  });

  test('a cache time of 0 turns it off', async () => {
    const cache = createServiceReadCache({ ttlMs: 0, redis, logger });
    let loads = 0;
    await cache.read('b4', 'k', async () => ({ value: (loads += 1) }));
    await cache.read('b4', 'k', async () => ({ value: (loads += 1) }));
    assert.equal(loads, 2);
    await cache.changed('b4');
    await cache.close();
  });

  // What lets a conditional read of a cached page be answered before validation
  // (src/http/conditional.ts): it holds exactly as long as the cache would serve the page.
  describe('the freshness of a cached answer', () => {
    const caches: ServiceReadCache[] = [];
    const kept = async (made: Promise<ServiceReadCache>) => {
      const cache = await made;
      caches.push(cache);
      return cache;
    };
    after(async () => {
      for (const cache of caches) await cache.close();
    });

    const page = (name: string) => ({ name });

    test('holds for a cached page until its broker\'s services change, and not after', async () => {
      const cache = await kept(subscribedCache());
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
      const cache = await kept(subscribedCache());
      const mine = await cache.read('b2', 'list', async () => ({ value: page('mine') }));
      await cache.changed('someone-else');
      assert.equal(cache.freshness(mine)?.(), true);
    });

    test('a change while the page was loading: never fresh', async () => {
      const cache = await kept(subscribedCache());
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
      const short = await kept(subscribedCache({ ttlMs: 150 }));
      const timed = await short.read('b4', 'list', async () => ({ value: page('timed') }));
      assert.equal(short.freshness(timed)?.(), true);
      const cache = await kept(subscribedCache());
      const due = await cache.read('b4', 'list', async () => ({ value: page('due'), until: new Date(Date.now() + 150) }));
      assert.equal(cache.freshness(due)?.(), true);
      await sleep(200);
      assert.equal(short.freshness(timed)?.(), false, 'the cache time is up');
      assert.equal(cache.freshness(due)?.(), false, 'the page\'s own end has come');
    });

    test('nothing is fresh without the subscription, and numbers have none', async () => {
      const off = await kept(Promise.resolve(createServiceReadCache({ ttlMs: 0, redis, logger })));
      const uncached = await off.read('b5', 'list', async () => ({ value: page('uncached') }));
      assert.equal(off.freshness(uncached), undefined);
      const cache = await kept(subscribedCache());
      await cache.read('b5', 'count', async () => ({ value: 3 }));
      assert.equal(cache.freshness(page('never read')), undefined);
    });
  });
});

// Issue 40 item 8: Redis frozen (SIGSTOP) keeps every connection open and answers nothing, so
// neither "subscription lost" nor a change notice arrives. Two caches, each with its own Redis
// connections and subscription, stand for two API processes; the loads stand for the database.
describe('a stalled Redis (SIGSTOP)', () => {
  let server: ChildProcess;
  let port: number;

  before(async () => {
    port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  });
  after(() => {
    server.kill('SIGCONT');
    server.kill('SIGKILL');
  });

  test('a write on one process is never followed by the old page on the other', async () => {
    const connect = async () => {
      const r = requestRedis({ options: { port, host: '127.0.0.1' }, description: 'stalling redis', stop: async () => {} });
      r.on('error', () => {});
      await waitUntilReady(r);
      return r;
    };
    const [r1, r2] = [await connect(), await connect()];
    const one = createServiceReadCache({ ttlMs: 60_000, redis: r1, logger });
    const two = createServiceReadCache({ ttlMs: 60_000, redis: r2, logger });
    let database = 'old';
    const load = async () => ({ value: { page: database } });
    try {
      let first = await two.read('b', 'list', load);
      for (let i = 0; i < 200 && two.freshness(first) === undefined; i += 1) {
        await sleep(10);
        first = await two.read('b', 'list', load);
      }
      assert.equal(two.freshness(first)?.(), true, 'the other process serves the page from its cache');
      server.kill('SIGSTOP');
      database = 'new';
      await one.changed('b');
      assert.deepEqual(await two.read('b', 'list', load), { page: 'new' }, 'no old page after the write');
      assert.equal(two.freshness(first)?.(), false, 'no 304 for the old page either');
      server.kill('SIGCONT');
    } finally {
      server.kill('SIGCONT');
      await one.close();
      await two.close();
      r1.disconnect();
      r2.disconnect();
    }
  });
});
