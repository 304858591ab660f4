/**
 * GET /api/v1/reports (issue 41 item 1): the broker's runs of the key's mode, newest first, each as
 * getReport answers it, paged by offset or by cursor; another broker's and the other mode's runs
 * never show, and a cursor walk neither skips nor repeats a run while reports are made.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, type TestApiKey } from '../helpers/factories.ts';

let t: TestApp;
let live: TestApiKey;
let sandbox: TestApiKey;
let other: TestApiKey;
/** The live runs of `live`'s broker, newest first. */
const liveRuns: string[] = [];
/** The sandbox runs of `sandbox` (the same broker), newest first. */
const testRuns: string[] = [];

const get = (key: TestApiKey, url: string) => request(t.app).get(url).set('Authorization', `Bearer ${key.key}`);
const ids = (res: request.Response) => (res.body.data as Array<{ report_id: string }>).map((r) => r.report_id);

before(async () => {
  t = await createTestApp();
  live = await apiKey(t.prisma, { scopes: ['reports:generate'], rateLimit: 10_000 });
  sandbox = await apiKey(t.prisma, { brokerId: live.brokerId, mode: 'test', scopes: ['reports:generate'], rateLimit: 10_000 });
  other = await apiKey(t.prisma, { scopes: ['reports:generate'], rateLimit: 10_000 });
  // Live runs as the pipeline records them, one a second apart (two at the same instant, ordered by id).
  const base = Date.UTC(2026, 0, 1);
  for (let i = 0; i < 7; i++) {
    const createdAt = new Date(base + Math.min(i, 5) * 1000);
    const run = await t.prisma.reportRun.create({
      data: { brokerId: live.brokerId, reportType: 'services', status: 'completed', createdAt, recipientsSent: 1, recipients: { create: [{ email: `r${i}@broker.example`, status: 'sent', attempts: 1 }] } },
    });
    liveRuns.push(run.id);
  }
  const rows = await t.prisma.reportRun.findMany({ where: { id: { in: liveRuns } }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true } });
  liveRuns.splice(0, liveRuns.length, ...rows.map((r) => r.id));
  await t.prisma.reportRun.create({ data: { brokerId: other.brokerId, reportType: 'invoices', status: 'completed' } });
  for (let i = 0; i < 2; i++) {
    const res = await request(t.app).post('/api/v1/reports/services').set('Authorization', `Bearer ${sandbox.key}`).send({ recipients: ['a@broker.example', 'b@failed.test'] });
    assert.equal(res.status, 200, res.text);
    testRuns.unshift(res.body.data.report_id);
  }
});
after(async () => t?.close());

describe('listReports', () => {
  test('a live key lists its broker\'s live runs newest first, each as getReport answers it', async () => {
    const res = await get(live, '/api/v1/reports?limit=100');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(ids(res), liveRuns);
    assert.deepEqual(res.body.pagination, { total: 7, limit: 100, offset: 0, has_more: false });
    for (const run of res.body.data.slice(0, 2)) {
      assert.deepEqual(run, (await get(live, `/api/v1/reports/${run.report_id}`)).body.data);
    }
  });

  test('a sandbox key lists its broker\'s test runs, with their counts, and never a live one', async () => {
    const res = await get(sandbox, '/api/v1/reports');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(ids(res), testRuns);
    for (const run of res.body.data) {
      assert.deepEqual([run.recipients_sent, run.recipients_failed, run.recipients_pending, run.mode, run.simulated], [1, 1, 0, 'test', true]);
      assert.deepEqual(run, (await get(sandbox, `/api/v1/reports/${run.report_id}`)).body.data);
    }
  });

  test('another broker sees none of these runs', async () => {
    const res = await get(other, '/api/v1/reports');
    assert.equal(res.body.pagination.total, 1);
    assert.ok(!ids(res).some((id) => liveRuns.includes(id) || testRuns.includes(id)));
  });

  test('a cursor walk with starting_after sees every run once, also while reports are made', async () => {
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await get(live, `/api/v1/reports?limit=2${after ? `&starting_after=${after}` : ''}`);
      assert.equal(res.status, 200, res.text);
      // With a cursor, offset counts the runs ahead of the page, the ones made during the walk included.
      assert.equal(res.body.pagination.offset, seen.length + page);
      seen.push(...ids(res));
      // A new run between pages: it sorts first and moves nothing after the cursor.
      await t.prisma.reportRun.create({ data: { brokerId: live.brokerId, reportType: 'services', status: 'completed' } });
      if (!res.body.pagination.has_more) break;
      after = ids(res).at(-1);
    }
    assert.deepEqual(seen, liveRuns);
  });

  test('ending_before gives the newer runs, still newest first; both cursors the runs between', async () => {
    const all = ids(await get(live, '/api/v1/reports?limit=100'));
    const pivot = all[4]!;
    const before = await get(live, `/api/v1/reports?limit=2&ending_before=${pivot}`);
    assert.deepEqual(ids(before), all.slice(2, 4));
    assert.equal(before.body.pagination.offset, 2);
    const between = await get(live, `/api/v1/reports?starting_after=${all[1]}&ending_before=${pivot}`);
    assert.deepEqual(ids(between), all.slice(2, 4));
  });

  test('a cursor of another mode or broker, or with an offset, is 400 invalid_parameter', async () => {
    for (const [key, cursor, rule] of [[live, testRuns[0]!, 'exists'], [sandbox, liveRuns[0]!, 'exists'], [other, liveRuns[0]!, 'exists']] as const) {
      const res = await get(key, `/api/v1/reports?starting_after=${cursor}`);
      assert.equal(res.status, 400, res.text);
      assert.deepEqual([res.body.error.code, res.body.error.details.field, res.body.error.details.rule], ['invalid_parameter', 'starting_after', rule]);
    }
    const offset = await get(live, `/api/v1/reports?offset=1&ending_before=${liveRuns[0]}`);
    assert.deepEqual([offset.status, offset.body.error?.details?.rule], [400, 'exclusive']);
    const malformed = await get(live, '/api/v1/reports?starting_after=not-a-uuid');
    assert.deepEqual([malformed.status, malformed.body.error?.code], [400, 'invalid_parameter']);
  });

  test('offset paging', async () => {
    const all = ids(await get(live, '/api/v1/reports?limit=100'));
    const res = await get(live, '/api/v1/reports?limit=3&offset=3');
    assert.deepEqual(ids(res), all.slice(3, 6));
    assert.equal(res.body.pagination.has_more, all.length > 6);
  });
});
