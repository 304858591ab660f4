/**
 * getRequestStats (src/request-logs/stats.ts) over entries as the gate stores them: buckets of
 * whole UTC hours or days, every one the range touches (empty ones with zeros), counts by status
 * class and operation, p50/p95 of the durations; one broker and one mode only; the range's
 * defaults and its 30-day bound. Ranges lie in the past, so the test's own reads (entries too)
 * never fall in them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { readFileSync } from 'node:fs';
import { ROOT_DIR } from '../../src/root.ts';
import { STATS_DURATION_BOUNDS } from '../../src/shared/stats-range.ts';
import { apiKey, brokerWithKeys, requestLog } from '../helpers/factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => {
  await t?.close();
});

const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The start of the UTC hour `hours` hours before the current one. */
const hourStart = (hours: number) => new Date((Math.floor(Date.now() / HOUR) - hours) * HOUR);
const iso = (d: Date | number) => new Date(d).toISOString();

interface Bucket {
  start: string;
  requests: number;
  status_classes: Record<string, number>;
  operations: Array<{ operation: string | null; requests: number }>;
  duration_ms: { p50: number | null; p95: number | null };
}

const zeros = { '1xx': 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };

describe('getRequestStats', () => {
  test('per hour: every bucket of the range, oldest first; counts by status class and operation; p50 and p95 of the durations', async () => {
    const w = await brokerWithKeys(t.prisma);
    const base = hourStart(10);
    const at = (hour: number, minute: number) => new Date(base.getTime() + hour * HOUR + minute * 60_000);
    await requestLog(t.prisma, w.live, { at: at(0, 1), status: 200, operation: 'listServices', durationMs: 10 });
    await requestLog(t.prisma, w.live, { at: at(0, 2), status: 200, operation: 'listServices', durationMs: 40 });
    await requestLog(t.prisma, w.live, { at: at(0, 3), status: 404, operation: 'getService', durationMs: 20 });
    await requestLog(t.prisma, w.live, { at: at(0, 4), status: 404, operation: null, durationMs: 30 });
    await requestLog(t.prisma, w.live, { at: at(2, 59), status: 503, operation: 'createService', durationMs: 2000 });
    // Outside the range: the hour before and the first instant after.
    await requestLog(t.prisma, w.live, { at: at(-1, 59), status: 200 });
    await requestLog(t.prisma, w.live, { at: at(3, 0), status: 200 });

    const res = await get(w.live.key, `/api/v1/request-stats?interval=hour&created_gte=${iso(base)}&created_lt=${iso(at(3, 0))}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const data = res.body.data as { object: string; mode: string; interval: string; created_gte: string; created_lt: string; buckets: Bucket[] };
    assert.deepEqual([data.object, data.mode, data.interval, data.created_gte, data.created_lt], ['request_stats', 'live', 'hour', iso(base), iso(at(3, 0))]);
    assert.deepEqual(data.buckets, [
      {
        start: iso(base),
        requests: 4,
        status_classes: { ...zeros, '2xx': 2, '4xx': 2 },
        operations: [
          { operation: 'listServices', requests: 2 },
          { operation: 'getService', requests: 1 },
          { operation: null, requests: 1 },
        ],
        duration_ms: { p50: 20, p95: 40 },
      },
      { start: iso(at(1, 0)), requests: 0, status_classes: zeros, operations: [], duration_ms: { p50: null, p95: null } },
      { start: iso(at(2, 0)), requests: 1, status_classes: { ...zeros, '5xx': 1 }, operations: [{ operation: 'createService', requests: 1 }], duration_ms: { p50: 2000, p95: 2000 } },
    ]);
  });

  test('per day: buckets start at UTC midnight; the first and last count only the requests within the range', async () => {
    const w = await brokerWithKeys(t.prisma);
    const today = Math.floor(Date.now() / DAY) * DAY;
    const from = today - 3 * DAY + 12 * HOUR;
    const to = today - DAY + 6 * HOUR;
    await requestLog(t.prisma, w.live, { at: new Date(from - HOUR) }); // same day, before the range
    await requestLog(t.prisma, w.live, { at: new Date(from + HOUR) });
    await requestLog(t.prisma, w.live, { at: new Date(today - 2 * DAY + HOUR), status: 429 });
    await requestLog(t.prisma, w.live, { at: new Date(to - HOUR) });
    await requestLog(t.prisma, w.live, { at: new Date(to + HOUR) }); // same day, after the range
    const res = await get(w.live.key, `/api/v1/request-stats?interval=day&created_gte=${iso(from)}&created_lt=${iso(to)}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const buckets = res.body.data.buckets as Bucket[];
    assert.deepEqual(
      buckets.map((b) => [b.start, b.requests, b.status_classes['4xx']]),
      [
        [iso(today - 3 * DAY), 1, 0],
        [iso(today - 2 * DAY), 1, 1],
        [iso(today - DAY), 1, 0],
      ],
    );
  });

  test("one broker and one mode: a live key counts its broker's live requests, a sandbox key the sandbox's; another broker's never", async () => {
    const w = await brokerWithKeys(t.prisma);
    const other = await brokerWithKeys(t.prisma);
    const second = await apiKey(t.prisma, { brokerId: w.brokerId, mode: 'live' });
    const at = new Date(hourStart(5).getTime() + 60_000);
    await requestLog(t.prisma, w.live, { at, operation: 'listServices' });
    await requestLog(t.prisma, second, { at, operation: 'getService' });
    await requestLog(t.prisma, w.sandbox, { at, operation: 'createService' });
    await requestLog(t.prisma, w.sandbox, { at, operation: 'createService' });
    await requestLog(t.prisma, other.live, { at, operation: 'cancelService' });
    const range = `interval=hour&created_gte=${iso(hourStart(5))}&created_lt=${iso(hourStart(4))}`;
    const counted = async (key: string) => {
      const res = await get(key, `/api/v1/request-stats?${range}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return [res.body.data.mode, (res.body.data.buckets as Bucket[]).map((b) => b.operations)];
    };
    assert.deepEqual(await counted(w.live.key), ['live', [[{ operation: 'getService', requests: 1 }, { operation: 'listServices', requests: 1 }]]]);
    assert.deepEqual(await counted(w.sandbox.key), ['test', [[{ operation: 'createService', requests: 2 }]]]);
    assert.deepEqual(await counted(other.live.key), ['live', [[{ operation: 'cancelService', requests: 1 }]]]);
    assert.deepEqual(await counted(other.sandbox.key), ['test', [[]]]);
  });

  test('the range: by default the 24 hours (hour) or 30 days (day) up to now; a start alone spans that much from it', async () => {
    const w = await brokerWithKeys(t.prisma);
    const before = Date.now();
    const hourly = await get(w.live.key, '/api/v1/request-stats');
    assert.equal(hourly.status, 200, JSON.stringify(hourly.body));
    const { interval, created_gte: gte, created_lt: lt, buckets } = hourly.body.data as { interval: string; created_gte: string; created_lt: string; buckets: Bucket[] };
    assert.equal(interval, 'hour');
    assert.ok(Date.parse(lt) >= before && Date.parse(lt) <= Date.now(), `${lt} is now`);
    assert.equal(Date.parse(lt) - Date.parse(gte), DAY);
    assert.ok(buckets.length === 24 || buckets.length === 25, `${buckets.length} hourly buckets`);
    assert.equal(Date.parse(buckets[0]!.start) % HOUR, 0);

    const daily = await get(w.live.key, '/api/v1/request-stats?interval=day');
    assert.equal(daily.status, 200, JSON.stringify(daily.body));
    assert.equal(Date.parse(daily.body.data.created_lt) - Date.parse(daily.body.data.created_gte), 30 * DAY);
    assert.equal(daily.body.data.buckets.length, 31, 'thirty days of now touch 31 calendar days');

    const fixed = await get(w.live.key, '/api/v1/request-stats?created_gte=2025-03-02T00:00:00.000Z');
    assert.equal(fixed.status, 200, JSON.stringify(fixed.body));
    assert.deepEqual([fixed.body.data.created_gte, fixed.body.data.created_lt, fixed.body.data.buckets.length], ['2025-03-02T00:00:00.000Z', '2025-03-03T00:00:00.000Z', 24]);
  });

  test('a range over 30 days, an empty one, an unknown interval or a malformed instant is 400 invalid_parameter; exactly 30 days is answered', async () => {
    const w = await brokerWithKeys(t.prisma);
    const lt = hourStart(0);
    const over = await get(w.live.key, `/api/v1/request-stats?interval=day&created_gte=${iso(lt.getTime() - 30 * DAY - 1)}&created_lt=${iso(lt)}`);
    const details = assertError(over, 400, 'invalid_parameter');
    assert.deepEqual([details.field, details.location, details.rule], ['created_gte', 'query', 'max_range']);
    assert.match(String(details.reason), /at most 30 days before created_lt/);
    const exactly = await get(w.live.key, `/api/v1/request-stats?interval=hour&created_gte=${iso(lt.getTime() - 30 * DAY)}&created_lt=${iso(lt)}`);
    assert.equal(exactly.status, 200, JSON.stringify(exactly.body));
    assert.equal(exactly.body.data.buckets.length, 720);
    const empty = await get(w.live.key, `/api/v1/request-stats?created_gte=${iso(lt)}&created_lt=${iso(lt)}`);
    assert.equal(assertError(empty, 400, 'invalid_parameter').rule, 'range');
    assert.equal(assertError(await get(w.live.key, '/api/v1/request-stats?interval=week'), 400, 'invalid_parameter').field, 'interval');
    assert.equal(assertError(await get(w.live.key, '/api/v1/request-stats?created_lt=yesterday'), 400, 'invalid_parameter').field, 'created_lt');
  });

  test('admin:full only, as the request logs', async () => {
    const w = await brokerWithKeys(t.prisma);
    const reader = await apiKey(t.prisma, { brokerId: w.brokerId, scopes: ['services:read'] });
    assertError(await get(reader.key, '/api/v1/request-stats'), 403, 'insufficient_permissions');
    assertError(await request(t.app).get('/api/v1/request-stats'), 401, 'authentication_failed');
  });

  test("durations are binned (STATS_DURATION_BOUNDS, the roll-up's bins): p50 and p95 are a bin's lower bound; a partial hour is counted from the log alike", async () => {
    const w = await brokerWithKeys(t.prisma);
    const base = hourStart(8);
    for (const ms of [11, 13, 14, 16, 700_000]) await requestLog(t.prisma, w.live, { at: new Date(base.getTime() + 10 * 60_000), durationMs: ms });
    const whole = await get(w.live.key, `/api/v1/request-stats?created_gte=${iso(base)}&created_lt=${iso(base.getTime() + HOUR)}`);
    assert.deepEqual(whole.body.data.buckets[0].duration_ms, { p50: 12, p95: 60_000 });
    // The same hour in part (from the log, not the roll-up): the same figures.
    const part = await get(w.live.key, `/api/v1/request-stats?created_gte=${iso(base.getTime() + 60_000)}&created_lt=${iso(base.getTime() + 30 * 60_000)}`);
    assert.deepEqual([part.body.data.buckets[0].requests, part.body.data.buckets[0].duration_ms], [5, { p50: 12, p95: 60_000 }]);
  });

  test("the roll-up's bins in the migration are STATS_DURATION_BOUNDS", () => {
    const sql = readFileSync(`${ROOT_DIR}/prisma/migrations/20261202130000_stats/migration.sql`, 'utf8');
    const lists = [...sql.matchAll(/width_bucket\(r\."duration_ms", ARRAY\[([0-9, ]+)\]\)/g)].map((m) => m[1]!.split(',').map(Number));
    assert.equal(lists.length, 2, 'the trigger and the backfill');
    for (const list of lists) assert.deepEqual(list, STATS_DURATION_BOUNDS);
  });
});
