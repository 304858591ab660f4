/**
 * The request log operations (src/request-logs/adapter.ts) over entries as the gate stores them:
 * newest-first cursor pages, every filter, one entry, `admin:full` only, and the broker's and the
 * mode's isolation (another broker's or mode's request id is 404, as an unknown one is).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { apiKey, brokerWithKeys, requestLog } from '../helpers/factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => {
  await t?.close();
});

const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

/** The entries of a page that a test made (the key's own reads of the logs are entries too). */
const made = (res: request.Response, ids: string[]): string[] =>
  res.body.data.map((e: { request_id: string }) => e.request_id).filter((id: string) => ids.includes(id));

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);

describe('listRequestLogs', () => {
  test('newest first; limit and starting_after page through all; has_more and next_starting_after', async () => {
    const w = await brokerWithKeys(t.prisma);
    const ids: string[] = [];
    for (let i = 5; i >= 1; i--) ids.push(await requestLog(t.prisma, w.live, { at: minutesAgo(60 + i) }));
    const newest = [...ids].reverse();
    const until = minutesAgo(30).toISOString();
    const first = await get(w.live.key, `/api/v1/request-logs?limit=2&created_lt=${until}`);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(made(first, ids), newest.slice(0, 2));
    assert.deepEqual(first.body.pagination, { limit: 2, has_more: true, next_starting_after: newest[1] });
    assert.equal(first.body.data[0].object, 'request_log');
    const second = await get(w.live.key, `/api/v1/request-logs?limit=2&created_lt=${until}&starting_after=${newest[1]}`);
    assert.deepEqual(made(second, ids), newest.slice(2, 4));
    const last = await get(w.live.key, `/api/v1/request-logs?limit=2&created_lt=${until}&starting_after=${newest[3]}`);
    assert.deepEqual(made(last, ids), newest.slice(4));
    assert.deepEqual(last.body.pagination, { limit: 2, has_more: false, next_starting_after: null });
  });

  test('each filter narrows the list: request_id, status code and class, method, operation, api_key_id, created_gte and created_lt', async () => {
    const w = await brokerWithKeys(t.prisma);
    const other = await apiKey(t.prisma, { brokerId: w.brokerId, mode: 'live', rateLimit: 1000 });
    const ok = await requestLog(t.prisma, w.live, { at: minutesAgo(50), status: 200 });
    const limited = await requestLog(t.prisma, w.live, { at: minutesAgo(40), status: 429, errorCode: 'rate_limit_exceeded' });
    const conflict = await requestLog(t.prisma, w.live, {
      at: minutesAgo(30),
      method: 'POST',
      path: '/api/v1/services/482913570/upgrade',
      operation: 'upgradeService',
      status: 409,
      errorCode: 'conflict',
      errorMessage: 'Service 482913570 already has a pending upgrade request (REQ-000044)',
      errorDetails: { current_status: 'pending', pending_request_id: 'REQ-000044' },
    });
    const failed = await requestLog(t.prisma, other, { at: minutesAgo(20), status: 500, errorCode: 'server_error' });
    const ids = [ok, limited, conflict, failed];
    const rows: Array<[query: string, expected: string[]]> = [
      [`request_id=${limited}`, [limited]],
      ['status=429', [limited]],
      ['status=4xx', [conflict, limited]],
      ['status=5xx', [failed]],
      ['status=2xx', [ok]],
      ['method=post', [conflict]],
      ['method=GET', [failed, limited, ok]],
      ['operation=upgradeService', [conflict]],
      [`api_key_id=${other.id}`, [failed]],
      [`created_gte=${minutesAgo(35).toISOString()}&created_lt=${minutesAgo(25).toISOString()}`, [conflict]],
      [`created_lt=${minutesAgo(45).toISOString()}`, [ok]],
      [`status=4xx&method=GET`, [limited]],
    ];
    for (const [query, expected] of rows) {
      const res = await get(w.live.key, `/api/v1/request-logs?${query}`);
      assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(made(res, ids), expected, query);
    }
    const one = await get(w.live.key, `/api/v1/request-logs?request_id=${conflict}`);
    assert.deepEqual(one.body.data[0], {
      object: 'request_log',
      request_id: conflict,
      created_at: one.body.data[0].created_at,
      method: 'POST',
      path: '/api/v1/services/482913570/upgrade',
      operation: 'upgradeService',
      status: 409,
      error_code: 'conflict',
      error: {
        code: 'conflict',
        message: 'Service 482913570 already has a pending upgrade request (REQ-000044)',
        details: { current_status: 'pending', pending_request_id: 'REQ-000044' },
      },
      duration_ms: 3,
      api_key_id: w.live.id,
      api_key_name: (await t.prisma.apiKey.findUniqueOrThrow({ where: { id: w.live.id } })).name,
      mode: 'live',
      ip: '203.0.113.10',
      idempotency_replayed: false,
      source: 'api',
    });
  });

  test('malformed filters, an unknown operation and a starting_after of no entry of the key are 400 invalid_parameter', async () => {
    const w = await brokerWithKeys(t.prisma);
    const elsewhere = await requestLog(t.prisma, (await brokerWithKeys(t.prisma)).live);
    const otherMode = await requestLog(t.prisma, w.sandbox);
    const rows: Array<[query: string, field: string]> = [
      ['status=600', 'status'],
      ['status=4XX', 'status'],
      ['status=abc', 'status'],
      ['method=G%20T', 'method'],
      ['operation=createServices', 'operation'],
      ['operation=list-events', 'operation'],
      ['created_gte=yesterday', 'created_gte'],
      ['created_lt=2025-13-01T00:00:00Z', 'created_lt'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['request_id=a%20b', 'request_id'],
      ['starting_after=req_unknown', 'starting_after'],
      [`starting_after=${elsewhere}`, 'starting_after'],
      [`starting_after=${otherMode}`, 'starting_after'],
    ];
    for (const [query, field] of rows) {
      const details = assertError(await get(w.live.key, `/api/v1/request-logs?${query}`), 400, 'invalid_parameter');
      assert.equal(details.field, field, query);
    }
  });

  test('a request id sent more than once: all its entries listed, the newest shown, paging moves past the oldest', async () => {
    const w = await brokerWithKeys(t.prisma);
    const older = await requestLog(t.prisma, w.live, { at: minutesAgo(90) });
    const reused = 'order-sync-0001';
    await requestLog(t.prisma, w.live, { requestId: reused, at: minutesAgo(80), status: 503, errorCode: 'service_unavailable' });
    await requestLog(t.prisma, w.live, { requestId: reused, at: minutesAgo(70), status: 200 });
    const all = await get(w.live.key, `/api/v1/request-logs?request_id=${reused}`);
    assert.deepEqual(all.body.data.map((e: { status: number }) => e.status), [200, 503]);
    const one = await get(w.live.key, `/api/v1/request-logs/${reused}`);
    assert.equal(one.body.data.status, 200);
    const next = await get(w.live.key, `/api/v1/request-logs?starting_after=${reused}&limit=1`);
    assert.deepEqual(next.body.data.map((e: { request_id: string }) => e.request_id), [older]);
  });
});

describe('the key by name', () => {
  test('each entry names its key (api_key_name); api_key_name filters by it, across the keys sharing it; a deleted key shows null', async () => {
    const w = await brokerWithKeys(t.prisma);
    const sync = await apiKey(t.prisma, { brokerId: w.brokerId, mode: 'live', name: 'order-sync' });
    const sync2 = await apiKey(t.prisma, { brokerId: w.brokerId, mode: 'live', name: 'order-sync' });
    const billing = await apiKey(t.prisma, { brokerId: w.brokerId, mode: 'live', name: 'billing' });
    const gone = await apiKey(t.prisma, { brokerId: w.brokerId, mode: 'live', name: 'old' });
    // Another broker's key of the same name: its entries are never this broker's.
    const other = await brokerWithKeys(t.prisma);
    const foreign = await apiKey(t.prisma, { brokerId: other.brokerId, mode: 'live', name: 'order-sync' });
    const at = minutesAgo(90);
    const a = await requestLog(t.prisma, sync, { at });
    const b = await requestLog(t.prisma, sync2, { at });
    const c = await requestLog(t.prisma, billing, { at });
    const d = await requestLog(t.prisma, gone, { at });
    await requestLog(t.prisma, foreign, { at });
    await t.prisma.apiKey.delete({ where: { id: gone.id } });
    const until = minutesAgo(60).toISOString();

    const one = await get(w.live.key, `/api/v1/request-logs/${c}`);
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.deepEqual([one.body.data.api_key_id, one.body.data.api_key_name], [billing.id, 'billing']);
    const all = await get(w.live.key, `/api/v1/request-logs?created_lt=${until}`);
    assert.equal(all.status, 200, JSON.stringify(all.body));
    const names = Object.fromEntries(all.body.data.map((e: { request_id: string; api_key_name: string | null }) => [e.request_id, e.api_key_name]));
    assert.deepEqual(names, { [a]: 'order-sync', [b]: 'order-sync', [c]: 'billing', [d]: null });
    const named = await get(w.live.key, `/api/v1/request-logs?created_lt=${until}&api_key_name=order-sync`);
    assert.deepEqual(made(named, [a, b, c, d]).sort(), [a, b].sort());
    const both = await get(w.live.key, `/api/v1/request-logs?created_lt=${until}&api_key_name=order-sync&api_key_id=${sync2.id}`);
    assert.deepEqual(made(both, [a, b, c, d]), [b]);
    const none = await get(w.live.key, `/api/v1/request-logs?created_lt=${until}&api_key_name=nobody`);
    assert.deepEqual(none.body.data, []);
  });
});

describe('getRequestLog', () => {
  test('one entry of the key\'s broker and mode', async () => {
    const w = await brokerWithKeys(t.prisma);
    const id = await requestLog(t.prisma, w.live, { method: 'POST', path: '/api/v1/service-create', operation: 'createService', idempotencyReplayed: true });
    const res = await get(w.live.key, `/api/v1/request-logs/${id}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.object, 'request_log');
    assert.equal(res.body.data.request_id, id);
    assert.equal(res.body.data.operation, 'createService');
    assert.equal(res.body.data.idempotency_replayed, true);
    assert.equal(res.body.data.error_code, null);
  });

  test('another broker\'s request id is 404 not_found, and so is one of the other mode or an unknown one', async () => {
    const w = await brokerWithKeys(t.prisma);
    const theirs = await requestLog(t.prisma, (await brokerWithKeys(t.prisma)).live);
    const live = await requestLog(t.prisma, w.live);
    const test_ = await requestLog(t.prisma, w.sandbox);
    assertError(await get(w.live.key, `/api/v1/request-logs/${theirs}`), 404, 'not_found');
    assertError(await get(w.live.key, `/api/v1/request-logs/${test_}`), 404, 'not_found');
    assertError(await get(w.sandbox.key, `/api/v1/request-logs/${live}`), 404, 'not_found');
    assertError(await get(w.live.key, '/api/v1/request-logs/req_none'), 404, 'not_found');
    assert.equal((await get(w.live.key, `/api/v1/request-logs/${live}`)).status, 200);
    assert.equal((await get(w.sandbox.key, `/api/v1/request-logs/${test_}`)).status, 200);
    const sandboxList = await get(w.sandbox.key, '/api/v1/request-logs?limit=100');
    assert.ok(sandboxList.body.data.every((e: { mode: string }) => e.mode === 'test'));
    assert.deepEqual(made(sandboxList, [live, test_, theirs]), [test_]);
  });

  test('a request id of other characters is 400 invalid_parameter', async () => {
    const w = await brokerWithKeys(t.prisma);
    const details = assertError(await get(w.live.key, '/api/v1/request-logs/a%20b'), 400, 'invalid_parameter');
    assert.equal(details.field, 'request_id');
  });
});

describe('sandbox test scenarios', () => {
  test('a sandbox key gets the simulated 400 and 500 of X-Test-Scenario; a live key ignores it', async () => {
    const w = await brokerWithKeys(t.prisma);
    const id = await requestLog(t.prisma, w.sandbox);
    for (const path of ['/api/v1/request-logs', `/api/v1/request-logs/${id}`]) {
      const invalid = assertError(await get(w.sandbox.key, path).set('X-Test-Scenario', 'validation_error'), 400, 'invalid_parameter');
      assert.equal(invalid.scenario, 'validation_error');
      assertError(await get(w.sandbox.key, path).set('X-Test-Scenario', 'server_error'), 500, 'server_error');
    }
    assert.equal((await get(w.live.key, '/api/v1/request-logs').set('X-Test-Scenario', 'validation_error')).status, 200);
  });
});

describe('keys and limits', () => {
  test('only admin:full keys read the logs (403 insufficient_permissions otherwise)', async () => {
    const w = await brokerWithKeys(t.prisma);
    const id = await requestLog(t.prisma, w.live);
    for (const scope of ['services:read', 'services:write', 'requests:read', 'requests:write', 'reports:generate']) {
      const key = await apiKey(t.prisma, { brokerId: w.brokerId, scopes: [scope] });
      assertError(await get(key.key, '/api/v1/request-logs'), 403, 'insufficient_permissions');
      assertError(await get(key.key, `/api/v1/request-logs/${id}`), 403, 'insufficient_permissions');
    }
  });

  test('both operations count against the key\'s rate limit and say so in their headers', async () => {
    const key = await apiKey(t.prisma, { rateLimit: 50 });
    const id = await requestLog(t.prisma, key);
    const list = await get(key.key, '/api/v1/request-logs');
    const one = await get(key.key, `/api/v1/request-logs/${id}`);
    for (const res of [list, one]) {
      assert.equal(res.status, 200);
      assert.equal(res.headers['x-ratelimit-limit'], '50');
      assert.ok(res.headers['ratelimit-policy'] && res.headers['ratelimit'] && res.headers['x-ratelimit-reset']);
    }
    assert.equal(Number(one.headers['x-ratelimit-remaining']), Number(list.headers['x-ratelimit-remaining']) - 1);
    const limited = await apiKey(t.prisma, { rateLimit: 1 });
    assert.equal((await get(limited.key, '/api/v1/request-logs')).status, 200);
    assertError(await get(limited.key, '/api/v1/request-logs'), 429, 'rate_limit_exceeded');
  });
});
