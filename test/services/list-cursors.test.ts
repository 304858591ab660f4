/**
 * `GET /services` by cursor (issue 39, item 5): a walk while another client creates services sees
 * every service that existed when it began exactly once, where the offset walk repeats one per
 * insert; the cursors' `400`s, their `offset`, and the sandbox's one row.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { assertEachOnce, walk } from '../helpers/pages.ts';
import { service } from '../helpers/service-factories.ts';

let t: TestApp;
let brokerId: string;
let admin: string;
let otherNumber: number;
let sandbox: string;
/** The seeded services, newest first (the list's order). */
const seeded: number[] = [];

const get = (key: string) => (path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
const create = (n: number) =>
  request(t.app).post('/api/v1/service-create').set('Authorization', `Bearer ${admin}`)
    .send({ plan: 'Basic VPS', hostname: `new${n}.example.com`, customer_email: `new${n}@example.com` })
    .expect(200);
const serviceNumber = (row: Record<string, unknown>) => row.service_number as number;

before(async () => {
  t = await createTestApp();
  brokerId = (await broker(t.prisma, { approval: 'automatic' })).id;
  admin = (await apiKey(t.prisma, { brokerId, scopes: ['admin:full'] })).key;
  sandbox = (await apiKey(t.prisma, { brokerId, scopes: ['admin:full'], mode: 'test' })).key;
  const other = (await broker(t.prisma)).id;
  otherNumber = (await service(t, { brokerId: other })).serviceNumber;
  // Thirteen services over ten instants: rows of one instant are ordered by their creation.
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  for (let i = 0; i < 13; i += 1) {
    const row = await service(t, { brokerId, createdAt: new Date(start + Math.min(i, 9) * 60_000) });
    seeded.unshift(row.serviceNumber);
  }
});
after(async () => {
  await t?.close();
});

describe('GET /api/v1/services with cursors', () => {
  test('without inserts, a starting_after walk is the offset list, and offset counts the rows ahead', async () => {
    const { ids, pages } = await walk(get(admin), '/api/v1/services', { cursor: 'starting_after', limit: 4, idOf: serviceNumber });
    assert.deepEqual(ids, seeded);
    assert.deepEqual(pages.map((p) => [p.offset, p.total, p.has_more]), [[0, 13, true], [4, 13, true], [8, 13, true], [12, 13, false], [13, 13, false]]);
  });

  test('a walk while another client creates services sees each service that existed once, in order', async () => {
    const before = (await get(admin)('/api/v1/services?limit=100')).body.data.map(serviceNumber) as number[];
    let n = 0;
    const writer = async () => {
      await create((n += 1));
      await create((n += 1));
    };
    const { ids, pages } = await walk(get(admin), '/api/v1/services', { cursor: 'starting_after', limit: 3, idOf: serviceNumber, between: writer });
    assertEachOnce(ids, before);
    assert.deepEqual(ids.filter((id) => before.includes(id)), before, 'in the list order');
    // The offset shown is the position of the page in the list as it is when asked.
    assert.ok(pages.every((p) => p.offset <= p.total));
    assert.ok(n >= 10);
  });

  test('the offset walk, under the same writer, repeats rows (what the cursor fixes)', async () => {
    const seen: number[] = [];
    for (let offset = 0; offset < 12; offset += 3) {
      const res = await get(admin)(`/api/v1/services?limit=3&offset=${offset}`);
      seen.push(...res.body.data.map(serviceNumber));
      await create(1000 + offset);
    }
    assert.notEqual(new Set(seen).size, seen.length);
  });

  test('ending_before walks back toward the newest, each row once, newest first within a page', async () => {
    const all = (await get(admin)('/api/v1/services?limit=100')).body.data.map(serviceNumber) as number[];
    const last = all.length - 5;
    const { ids, pages } = await walk(get(admin), '/api/v1/services', {
      cursor: 'ending_before',
      limit: 5,
      idOf: serviceNumber,
      first: `/api/v1/services?limit=5&offset=${last}`,
      between: async (page) => { if (page === 1) await create(2000); },
    });
    assertEachOnce(ids, all);
    assert.deepEqual(ids.slice(0, all.length), [...all].reverse());
    const page = await get(admin)(`/api/v1/services?limit=3&ending_before=${all[5]}`);
    assert.deepEqual(page.body.data.map(serviceNumber), all.slice(2, 5));
    // One service was created since `all` was read: it is ahead of the page too.
    assert.equal(page.body.pagination.offset, 3);
    assert.ok(pages.at(-1)!.offset === 0);
  });

  test('filters apply to the rows after the cursor; the cursor need not match them', async () => {
    const all = (await get(admin)('/api/v1/services?limit=100&search=vps')).body.data.map(serviceNumber) as number[];
    const [newest] = (await get(admin)('/api/v1/services?limit=1')).body.data.map(serviceNumber) as number[];
    const res = await get(admin)(`/api/v1/services?search=vps&limit=100&starting_after=${newest}`);
    assert.deepEqual(res.body.data.map(serviceNumber), all);
    assert.deepEqual(res.body.pagination, { total: all.length, limit: 100, offset: 0, has_more: false });
  });

  test('both cursors: the rows between them, from the one after starting_after on', async () => {
    const between = await get(admin)(`/api/v1/services?limit=4&starting_after=${seeded[2]}&ending_before=${seeded[9]}`);
    assert.equal(between.status, 200, JSON.stringify(between.body));
    assert.deepEqual(between.body.data.map(serviceNumber), seeded.slice(3, 7));
    const rest = await get(admin)(`/api/v1/services?limit=4&starting_after=${seeded[6]}&ending_before=${seeded[9]}`);
    assert.deepEqual(rest.body.data.map(serviceNumber), seeded.slice(7, 9));
    const none = await get(admin)(`/api/v1/services?starting_after=${seeded[4]}&ending_before=${seeded[4]}`);
    assert.deepEqual(none.body.data, []);
  });

  test('a cursor naming no service of the broker, or a cursor with an offset, is 400 invalid_parameter', async () => {
    const cases: Array<[string, string, string]> = [
      [`starting_after=${otherNumber}`, 'starting_after', 'exists'],
      ['starting_after=999999999', 'starting_after', 'exists'],
      ['ending_before=3000000000', 'ending_before', 'exists'],
      [`starting_after=${seeded[0]}&offset=2`, 'offset', 'exclusive'],
    ];
    for (const [query, field, rule] of cases) {
      const res = await get(admin)(`/api/v1/services?${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error.code, 'invalid_parameter');
      assert.equal(res.body.error.details.field, field, query);
      assert.equal(res.body.error.details.rule, rule, query);
    }
    assert.equal((await get(admin)('/api/v1/services?starting_after=abc')).status, 400);
    assert.equal((await get(admin)(`/api/v1/services?starting_after=${seeded[0]}&offset=0`)).status, 200);
  });

  test('sandbox: the one generated row, the newest, is before any cursor but itself, and nothing is after one', async () => {
    const first = await get(sandbox)('/api/v1/services');
    const [row] = first.body.data;
    assert.equal(row.service_number, 731845206);
    const afterRow = await get(sandbox)('/api/v1/services?starting_after=731845206');
    assert.equal(afterRow.status, 200);
    assert.deepEqual(afterRow.body.data, []);
    assert.deepEqual(afterRow.body.pagination, { total: 1, limit: 25, offset: 1, has_more: false });
    const beforeRow = await get(sandbox)('/api/v1/services?ending_before=731845206');
    assert.deepEqual(beforeRow.body.data, []);
    assert.deepEqual(beforeRow.body.pagination, { total: 1, limit: 25, offset: 0, has_more: true });
    // Any number names a service in the sandbox, as its detail echoes any number.
    const beforeOther = await get(sandbox)(`/api/v1/services?ending_before=${seeded[0]}`);
    assert.deepEqual(beforeOther.body.data.map(serviceNumber), [731845206]);
    const afterOther = await get(sandbox)(`/api/v1/services?starting_after=${seeded[0]}`);
    assert.deepEqual(afterOther.body, { success: true, data: [], pagination: { total: 1, limit: 25, offset: 1, has_more: false } });
    const filtered = await get(sandbox)('/api/v1/services?status=cancelled&ending_before=482913570');
    assert.deepEqual(filtered.body.pagination, { total: 0, limit: 25, offset: 0, has_more: false });
    assert.equal((await get(sandbox)('/api/v1/services?starting_after=731845206&offset=1')).status, 400);
  });
});
