/**
 * `GET /requests` by cursor (issue 39, item 5): a walk while another client makes requests sees
 * every request that existed when it began exactly once; the cursors' `400`s and the sandbox's row.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { assertEachOnce, walk } from '../helpers/pages.ts';
import { serviceRequest } from '../helpers/service-factories.ts';

let t: TestApp;
let admin: string;
let sandbox: string;
let otherId: string;
const seeded: string[] = [];

const get = (key: string) => (path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
const requestId = (row: Record<string, unknown>) => row.request_id as string;
const asId = (id: number) => `REQ-${String(id).padStart(6, '0')}`;
const create = (n: number) =>
  request(t.app).post('/api/v1/service-create').set('Authorization', `Bearer ${admin}`)
    .send({ plan: 'Basic VPS', hostname: `new${n}.example.com`, customer_email: `new${n}@example.com` })
    .expect(202);

before(async () => {
  t = await createTestApp();
  const brokerId = (await broker(t.prisma, { approval: 'manual' })).id;
  admin = (await apiKey(t.prisma, { brokerId, scopes: ['admin:full'] })).key;
  sandbox = (await apiKey(t.prisma, { brokerId, scopes: ['admin:full'], mode: 'test' })).key;
  otherId = asId((await serviceRequest(t.prisma, { brokerId: (await broker(t.prisma)).id, type: 'create' })).id);
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  for (let i = 0; i < 11; i += 1) {
    const row = await serviceRequest(t.prisma, { brokerId, type: 'create', createdAt: new Date(start + Math.min(i, 7) * 60_000) });
    seeded.unshift(asId(row.id));
  }
});
after(async () => {
  await t?.close();
});

describe('GET /api/v1/requests with cursors', () => {
  test('a starting_after walk while another client makes requests sees each request that existed once, in order', async () => {
    let n = 0;
    const { ids, pages } = await walk(get(admin), '/api/v1/requests', {
      cursor: 'starting_after',
      limit: 3,
      idOf: requestId,
      between: async () => { await create((n += 1)); },
    });
    assertEachOnce(ids, seeded);
    assert.deepEqual(ids, seeded);
    // Each page's offset counts the requests ahead of it, the new ones included.
    assert.deepEqual(pages.map((p) => p.offset), [0, 4, 8, 12, 15]);
  });

  test('ending_before gives the rows right before the cursor, newest first; request ids in any case and padding', async () => {
    const res = await get(admin)(`/api/v1/requests?limit=3&ending_before=${seeded[6]!.toLowerCase().replace('-0', '-')}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data.map(requestId), seeded.slice(3, 6));
  });

  test('a cursor naming no request of the broker, or a cursor with an offset, is 400 invalid_parameter', async () => {
    const between = await get(admin)(`/api/v1/requests?starting_after=${seeded[1]}&ending_before=${seeded[5]}`);
    assert.deepEqual(between.body.data.map(requestId), seeded.slice(2, 5));
    const cases: Array<[string, string, string]> = [
      [`starting_after=${otherId}`, 'starting_after', 'exists'],
      ['ending_before=REQ-99999999999', 'ending_before', 'exists'],
      [`ending_before=${seeded[1]}&offset=1`, 'offset', 'exclusive'],
    ];
    for (const [query, field, rule] of cases) {
      const res = await get(admin)(`/api/v1/requests?${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error.details.field, field, query);
      assert.equal(res.body.error.details.rule, rule, query);
    }
    assert.equal((await get(admin)('/api/v1/requests?starting_after=44')).status, 400);
  });

  test('sandbox: the one generated row is before any cursor but itself, and nothing is after one', async () => {
    const afterRow = await get(sandbox)('/api/v1/requests?starting_after=REQ-318274&limit=5');
    assert.equal(afterRow.status, 200, JSON.stringify(afterRow.body));
    assert.deepEqual(afterRow.body, { success: true, data: [], pagination: { total: 1, limit: 5, offset: 1, has_more: false } });
    const beforeRow = await get(sandbox)('/api/v1/requests?ending_before=req-318274');
    assert.deepEqual(beforeRow.body.pagination, { total: 1, limit: 25, offset: 0, has_more: true });
    const other = await get(sandbox)(`/api/v1/requests?ending_before=${seeded[0]}`);
    assert.equal(other.status, 200);
    assert.deepEqual(other.body.data.map(requestId), ['REQ-318274']);
  });
});
