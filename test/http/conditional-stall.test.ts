/**
 * Issue 40 item 8 end to end: two API apps on one database and one Redis, each with its own gate and
 * services read cache (as two processes have), and Redis frozen with SIGSTOP (connections open,
 * nothing answers). A service created through one is in the other's next conditional read of the
 * list: never a 304, never the old page.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';

let t: TestApp;
let redisPid: number;

before(async () => {
  t = await createTestApp({}, { workers: false });
  // On a connection of its own without the request client's 2 s command timeout: the app's first
  // moments (the validator compiling the contract) can hold the event loop longer than that under load.
  const probe = new Redis(t.redisEndpoint.options);
  const info = await probe.info('server').finally(() => probe.disconnect());
  redisPid = Number(/process_id:(\d+)/.exec(info)?.[1]);
  assert.ok(redisPid > 0, 'the private redis-server names its process');
});
after(async () => {
  try {
    process.kill(redisPid, 'SIGCONT');
  } catch {
    // Already gone.
  }
  // Commands sent during the stall end by their command timeout (3 s at most, src/jobs/queues.ts):
  // closed before that, the app's close met their rejection (`Command timed out`) on a loaded machine.
  await new Promise((r) => setTimeout(r, 3500));
  await t?.close();
});

test('a stalled Redis: a write through one API is never followed by a 304 or the old page on the other', async () => {
  const b = await broker(t.prisma, { approval: 'automatic' });
  const key = await apiKey(t.prisma, { brokerId: b.id, scopes: ['admin:full'], rateLimit: 100_000 });
  const auth = { Authorization: `Bearer ${key.key}` };
  const [one, two] = [t.app, await t.another()];
  const url = '/api/v1/services?limit=5';
  // Both gates hold a block of the key's rate limit, so neither needs Redis to count a request.
  assert.equal((await request(one).get('/api/v1/auth-check').set(auth)).status, 200);
  const first = await request(two).get(url).set(auth);
  assert.equal(first.status, 200);
  // The other API answers the page's 304 from its cache while Redis is heard.
  let cached = 0;
  for (let i = 0; i < 50 && cached === 0; i++) {
    if ((await request(two).get(url).set({ ...auth, 'If-None-Match': first.headers.etag! })).status === 304) cached += 1;
  }
  assert.equal(cached, 1, 'the page is served from the cache before the stall');

  process.kill(redisPid, 'SIGSTOP');
  try {
    const body = { plan: 'Basic VPS', hostname: 'stalled.client.example', customer_email: 'ops@client.example' };
    const created = await request(one).post('/api/v1/service-create').set(auth).send(body);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    for (let i = 0; i < 5; i++) {
      const res = await request(two).get(url).set({ ...auth, 'If-None-Match': first.headers.etag! });
      assert.equal(res.status, 200, `read ${i + 1} after the write: not a 304`);
      const hostnames = (res.body.data as Array<{ hostname: string }>).map((s) => s.hostname);
      assert.ok(hostnames.includes('stalled.client.example'), `read ${i + 1} after the write: the new service (${hostnames.join(', ')})`);
    }
  } finally {
    process.kill(redisPid, 'SIGCONT');
  }
});
