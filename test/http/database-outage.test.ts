// PostgreSQL gone (issue 45 item 2): every answer that needs it is `503 service_unavailable` with
// `Retry-After`, never `500`, whether the key is looked up (the gate) or the operation reads or
// writes; such a request gives the key's rate-limit unit back; answers are `2xx` again once it
// returns. The app runs on PostgreSQL through a TCP proxy this test cuts, as a stopped server is cut.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiKey, broker, type TestApiKey } from '../helpers/factories.ts';

const SERVER = new URL(process.env.DATABASE_URL?.trim() || 'postgresql://postgres@127.0.0.1:5432/postgres');

/** A TCP proxy to the PostgreSQL server that can be cut (every connection reset, new ones refused) and restored. */
class CuttableProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  async open(): Promise<void> {
    if (this.server) return;
    const server = net.createServer((client) => {
      const upstream = net.connect(Number(SERVER.port || 5432), SERVER.hostname);
      for (const s of [client, upstream]) {
        s.unref(); // a pooled connection left open never keeps the test process alive
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.port, '127.0.0.1', resolve));
    server.unref();
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server?.close(() => resolve()) ?? resolve());
    for (const s of this.sockets) s.resetAndDestroy();
    await closed;
  }
}

const proxy = new CuttableProxy();
let t: TestApp;
let key: TestApiKey;
let fresh: TestApiKey;
const LIMIT = 6;

const get = (k: TestApiKey, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${k.key}`);

before(async () => {
  await proxy.open();
  const viaProxy = new URL(SERVER);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  process.env.DATABASE_URL = viaProxy.toString();
  t = await createTestApp({}, { workers: false });
  const b = await broker(t.prisma, { approval: 'automatic' });
  key = await apiKey(t.prisma, { brokerId: b.id, rateLimit: LIMIT });
  fresh = await apiKey(t.prisma, { brokerId: b.id, rateLimit: LIMIT });
});

after(async () => {
  if (!proxy.port) return;
  await proxy.open(); // the database is dropped through it
  await t?.close();
  await proxy.cut();
});

function assertUnavailable(res: request.Response): void {
  assert.equal(res.status, 503, JSON.stringify(res.body));
  assert.equal(res.body.success, false);
  assert.equal(res.body.error.code, 'service_unavailable');
  assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
  assert.equal(res.body.error.request_id, res.headers['x-request-id']);
}

describe('PostgreSQL unreachable', () => {
  test('503 with Retry-After for reads, writes and key look-ups; the refused requests do not count', async () => {
    const first = await get(key, '/api/v1/requests').expect(200);
    assert.equal(first.headers['x-ratelimit-remaining'], String(LIMIT - 1));

    await proxy.cut();
    for (let i = 0; i < LIMIT + 2; i++) {
      const res = await get(key, '/api/v1/requests');
      assertUnavailable(res);
      // While the key's row is cached the request was counted, and its unit is given back: the window
      // stands as the first request left it. Once the row must be read again, nothing was counted.
      if (res.headers['x-ratelimit-remaining'] !== undefined) assert.equal(res.headers['x-ratelimit-remaining'], String(LIMIT - 1));
    }
    assertUnavailable(
      await request(t.app).post('/api/v1/service-create').set('Authorization', `Bearer ${key.key}`)
        .send({ plan: 'Basic VPS', hostname: 'outage.example.com', customer_email: 'outage@example.com' }),
    );
    assertUnavailable(await get(key, '/api/v1/events'));
    // A key not yet looked up: the gate's look-up fails, and the answer is the same 503.
    assertUnavailable(await get(fresh, '/api/v1/requests'));

    await proxy.open();
    const back = await eventually(async () => {
      const res = await get(key, '/api/v1/requests');
      return res.status === 503 ? undefined : res;
    }, 15_000, 'a 2xx once the database is back');
    assert.equal(back.status, 200);
    // The outage's refusals were all given back; only the two answered reads count.
    assert.equal(back.headers['x-ratelimit-remaining'], String(LIMIT - 2));
    await get(fresh, '/api/v1/requests').expect(200);
  });
});
