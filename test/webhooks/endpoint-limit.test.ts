/**
 * WEBHOOK_ENDPOINTS_PER_BROKER: a broker has at most so many endpoints in each mode; one more is a
 * `400 invalid_parameter` naming the bound, even when the creates come at once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { apiKey, broker } from '../helpers/factories.ts';

const LIMIT = 3;
let t: TestApp;

before(async () => {
  t = await createTestApp({ webhookEndpointsPerBroker: LIMIT, webhookAllowPrivateUrls: true }, { workers: false });
});
after(async () => {
  await t?.close();
});

/** A broker's live and sandbox keys. */
async function keys() {
  const brokerId = (await broker(t.prisma)).id;
  return {
    live: (await apiKey(t.prisma, { brokerId, mode: 'live', rateLimit: 1000 })).key,
    sandbox: (await apiKey(t.prisma, { brokerId, mode: 'test', rateLimit: 1000 })).key,
  };
}

const create = (key: string, n: number) =>
  request(t.app).post('/api/v1/webhook-endpoints').set('Authorization', `Bearer ${key}`).send({ url: `http://127.0.0.1:9/hook/${n}` });

function assertLimit(res: request.Response): void {
  const details = assertError(res, 400, 'invalid_parameter');
  assert.equal(details.max_endpoints, LIMIT);
  assert.equal(details.rule, 'endpoints_per_broker');
  assert.match(res.body.error.message, /at most 3 (live|test) webhook endpoints \(WEBHOOK_ENDPOINTS_PER_BROKER\)/);
}

test('live and sandbox each have their own allowance; past it, 400 naming the bound; a deletion makes room', async () => {
  const { live, sandbox } = await keys();
  const ids: string[] = [];
  for (let n = 0; n < LIMIT; n++) {
    const res = await create(live, n);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    ids.push(res.body.data.id);
  }
  assertLimit(await create(live, 99));
  for (let n = 0; n < LIMIT; n++) assert.equal((await create(sandbox, n)).status, 200);
  assertLimit(await create(sandbox, 99));
  assert.equal(await t.prisma.webhookEndpoint.count({ where: { url: 'http://127.0.0.1:9/hook/99' } }), 0);

  const deleted = await request(t.app).post(`/api/v1/webhook-endpoints/${ids[0]}/delete`).set('Authorization', `Bearer ${live}`);
  assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
  assert.equal((await create(live, 100)).status, 200);
  assertLimit(await create(live, 101));
});

test("one broker's full allowance does not touch another broker's", async () => {
  const full = await keys();
  for (let n = 0; n < LIMIT; n++) assert.equal((await create(full.live, n)).status, 200);
  const other = await keys();
  assert.equal((await create(other.live, 0)).status, 200);
});

test('creates sent at once cannot pass the bound together', async () => {
  const { live } = await keys();
  const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => create(live, n)));
  assert.equal(answers.filter((res) => res.status === 200).length, LIMIT);
  for (const res of answers.filter((r) => r.status !== 200)) assertLimit(res);
});
