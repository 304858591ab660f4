/**
 * Issue 32 rows 3 and 4, end to end: after report downloads (200, HEAD, 404, one that fails
 * mid-body) and requests with a key's secret mangled into the path, no log line, no metric and no
 * stored row of any table holds the download token or the secret, while every request is still
 * logged (and recorded in api_logs when it carried a key).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import { createGate, type Gate } from '../../src/auth/gate.ts';
import { createLogger } from '../../src/logger.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';
import { holdsPartOf, keyForms, SEPARATORS } from '../helpers/key-spellings.ts';
import { downloadLink } from '../helpers/report-factories.ts';
import { LogCapture, sleep } from './helpers.ts';

const WORKBOOK = Buffer.from('the stored bytes of a workbook');

let t: TestApp;
let app: Express;
let gate: Gate;
const capture = new LogCapture();

before(async () => {
  t = await createTestApp({ reportDownloadsPerIpPerMinute: 1_000_000 }, { workers: false });
  const logger = createLogger('trace', capture);
  gate = createGate({ prisma: t.prisma, redis: t.deps.redis, logger });
  app = createApp({ ...t.deps, logger, gate: gate.gate });
});
after(async () => {
  await gate?.apiLog.close();
  await t?.close();
});

/** A link to a stored workbook of `chunks` chunks, `stored` of them stored; returns the token. */
const link = (chunks = 1, stored = 1): Promise<string> => downloadLink(t.prisma, { workbook: WORKBOOK, chunks, stored });

/** Every row of every table of the database, as text. */
async function everyStoredRow(): Promise<string> {
  const tables = await t.prisma.$queryRawUnsafe<Array<{ name: string }>>(
    `SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  assert.ok(tables.some((x) => x.name === 'api_logs') && tables.some((x) => x.name === 'report_downloads'), 'the tables were found');
  const parts: string[] = [];
  for (const { name } of tables) {
    const rows = await t.prisma.$queryRawUnsafe<Array<{ row: string }>>(`SELECT to_jsonb(x)::text AS row FROM ${name} x`);
    parts.push(...rows.map((r) => r.row));
  }
  return parts.join('\n');
}

const lineOf = (requestId: string) => capture.records().find((r) => r.requestId === requestId && typeof r.req === 'object') as { req: { url: string; method: string } } | undefined;

describe('download tokens are in no log line, metric or record (issue 32 row 3)', () => {
  test('200, HEAD, 404 and a download that fails mid-body', async () => {
    const token = await link();
    const broken = await link(2, 1);
    const unknown = randomBytes(32).toString('base64url');
    const sends: Array<[id: string, method: 'get' | 'head', path: string, status: number]> = [
      ['dl-get', 'get', `/downloads/reports/${token}`, 200],
      ['dl-head', 'head', `/downloads/reports/${token}`, 200],
      ['dl-unknown', 'get', `/downloads/reports/${unknown}`, 404],
      ['dl-unknown-head', 'head', `/downloads/reports/${unknown}`, 404],
      ['dl-slash', 'get', `/downloads/reports/${token}/`, 200],
      ['dl-extra', 'get', `/downloads/reports/${token}/x`, 404],
      ['dl-case', 'get', `/DOWNLOADS/reports/${token}`, 200],
      ['dl-query', 'get', `/downloads/reports/${token}?t=${token}`, 200],
    ];
    for (const [id, method, path, status] of sends) {
      const res = await request(app)[method](path).set('X-Request-Id', id);
      assert.equal(res.status, status, `${id}: ${res.status}`);
    }
    // The headers go, then the store fails: the download ends short and a warning is logged with the error.
    await request(app).get(`/downloads/reports/${broken}`).set('X-Request-Id', 'dl-broken').catch(() => undefined);
    const metrics = await request(app).get('/metrics');
    assert.equal(metrics.status, 200);
    await sleep(50);

    assert.ok(await t.prisma.reportDownload.count() >= 3, 'downloads are still recorded');
    for (const [id, method] of [...sends.map(([id, method]) => [id, method] as const), ['dl-broken', 'get'] as const]) {
      const line = lineOf(id);
      assert.ok(line, `a request log line for ${id}`);
      assert.equal(line.req.method, method.toUpperCase());
      assert.match(line.req.url, /^\/downloads\/reports\/\[redacted\](\?t=\[redacted\])?$/, `${id}: ${line.req.url}`);
    }
    assert.ok(capture.records().some((r) => r.requestId === 'dl-broken' && r.msg === 'report download ended early'), 'the failure was logged');
    const logs = capture.text();
    const rows = await everyStoredRow();
    for (const secret of [token, broken, unknown]) {
      assert.equal(logs.includes(secret), false, 'a token reached the logs');
      assert.equal(logs.includes(secret.slice(0, 20)), false, 'part of a token reached the logs');
      assert.equal(metrics.text.includes(secret.slice(0, 20)), false, 'a token reached a metric label');
      assert.equal(rows.includes(secret.slice(0, 20)), false, 'a token was stored');
    }
  });
});

describe('a key mangled into a path is in no log line or api_logs row (issue 32 row 4)', () => {
  test('every spelling the probe sent, live and test keys', async () => {
    const secrets: string[] = [];
    const ids: string[] = [];
    for (const mode of ['live', 'test'] as const) {
      const k = await apiKey(t.prisma, { mode, scopes: ['admin:full'], rateLimit: 10_000 });
      const secret = k.key.slice(8);
      secrets.push(secret);
      const spellings = [
        `sk_${mode}_%0a${secret}`, `sk_${mode}_%20${secret}`, `sk_${mode}_%09${secret}`, `sk_${mode}_+${secret}`, `sk_${mode}_.${secret}`,
        `sk-${mode}-${secret}`, `sk_${mode}${secret}`, `SK_${mode.toUpperCase()}_${secret}`, secret, encodeURIComponent(`sk_${mode}_%0a${secret}`),
      ];
      for (const [i, spelled] of spellings.entries()) {
        const id = `key-${mode}-${i}`;
        ids.push(id);
        const res = await request(app).get(`/api/v1/reports/${spelled}`).set({ Authorization: `Bearer ${k.key}`, 'X-Request-Id': id });
        assert.ok(res.status < 500, `${id}: ${res.status} ${res.text}`);
      }
    }
    await gate.apiLog.flush();
    await sleep(50);

    const logged = await t.prisma.apiLog.findMany({ where: { requestId: { in: ids } }, select: { path: true, requestId: true } });
    assert.equal(logged.length, ids.length, 'every request is in api_logs');
    for (const row of logged) assert.match(row.path, /^\/api\/v1\/reports\/(sk_(live|test)_)?\[redacted\]$/, `${row.requestId}: ${row.path}`);
    for (const id of ids) assert.match(lineOf(id)?.req.url ?? '', /^\/api\/v1\/reports\/(sk_(live|test)_)?\[redacted\]$/, id);
    const logs = capture.text();
    const rows = await everyStoredRow();
    for (const secret of secrets) {
      assert.equal(logs.includes(secret.slice(0, 16)), false, 'a secret reached the logs');
      assert.equal(rows.includes(secret.slice(0, 16)), false, 'a secret was stored');
    }
  });
});

describe('a key broken by a separator is in no request-logs path or log line (issue 40 item 1)', () => {
  test('every separator the probe sent, right after the prefix and mid-secret, in a path and in a query value', async () => {
    const k = await apiKey(t.prisma, { mode: 'live', scopes: ['admin:full'], rateLimit: 10_000 });
    const secret = k.key.slice(8);
    const sent: Array<{ id: string; path: string; query: boolean }> = [];
    for (const [i, [, separator]] of SEPARATORS.entries()) {
      for (const at of [0, 16]) {
        const spelled = `sk_live_${secret.slice(0, at)}${separator}${secret.slice(at)}`;
        for (const query of [false, true]) {
          const id = `sep-${i}-${at}-${query ? 'q' : 'p'}`;
          const path = query ? `/api/v1/services?search=${spelled}&limit=1` : `/api/v1/services/${spelled}`;
          const res = await request(app).get(path).set({ Authorization: `Bearer ${k.key}`, 'X-Request-Id': id });
          assert.ok(res.status < 500, `${id}: ${res.status} ${res.text}`);
          sent.push({ id, path, query });
        }
      }
    }
    await gate.apiLog.flush();
    await sleep(50);

    for (const { id, path, query } of sent) {
      const entry = await request(app).get(`/api/v1/request-logs/${id}`).set('Authorization', `Bearer ${k.key}`);
      assert.equal(entry.status, 200, `${id}: ${entry.text}`);
      const stored = entry.body.data.path as string;
      assert.equal(holdsPartOf(stored, secret), undefined, `${id} (${path}): request-logs path ${stored}`);
      assert.equal(stored, query ? '/api/v1/services' : '/api/v1/services/sk_live_[redacted]', `${id} (${path})`);
      const line = lineOf(id)?.req.url ?? '';
      assert.equal(holdsPartOf(line, secret), undefined, `${id} (${path}): log line ${line}`);
      assert.match(line, query ? /^\/api\/v1\/services\?search=sk_live_\[redacted\]&limit=1$/ : /^\/api\/v1\/services\/sk_live_\[redacted\]$/, `${id} (${path})`);
    }
    assert.equal(holdsPartOf(capture.text(), secret.slice(4)), undefined, 'no 5 characters of the secret past its public 4 in any log line');
  });
});

describe('a key-derived X-Request-Id, Idempotency-Key or User-Agent is in no log line or record (issue 40 item 2)', () => {
  test('every form the probe sent: the request id is replaced; the other two are never logged', async () => {
    for (const mode of ['live', 'test'] as const) {
      const k = await apiKey(t.prisma, { mode, scopes: ['admin:full'], rateLimit: 10_000 });
      const secret = k.key.slice(8);
      const forms = keyForms(k.key);
      const ours: string[] = [];
      for (const [form, sent] of forms) {
        const res = await request(app).get('/api/v1/auth-check').set({ Authorization: `Bearer ${k.key}`, 'X-Request-Id': sent });
        assert.equal(res.status, 200, `${form}: ${res.text}`);
        const given = res.headers['x-request-id'] as string;
        assert.match(given, /^req_[0-9a-f]{32}$/, `${mode} ${form}: the id sent was kept`);
        ours.push(given);
        const post = await request(app)
          .post('/api/v1/auth-check')
          .set({ Authorization: `Bearer ${k.key}`, 'Idempotency-Key': sent, 'User-Agent': sent, 'X-Request-Id': `ua-${mode}-${ours.length}` });
        assert.equal(post.status, 200, `${form}: ${post.text}`);
      }
      await gate.apiLog.flush();
      await sleep(50);

      for (const id of ours) {
        const entry = await request(app).get(`/api/v1/request-logs/${id}`).set('Authorization', `Bearer ${k.key}`);
        assert.equal(entry.status, 200, `${id}: ${entry.text}`);
        assert.equal(entry.body.data.request_id, id);
        assert.ok(lineOf(id), `a log line for ${id}`);
      }
      const logs = capture.text();
      const rows = await everyStoredRow();
      assert.equal(holdsPartOf(logs, secret.slice(4)), undefined, 'part of the secret past its public 4 reached a log line');
      for (const [form, sent] of forms) {
        assert.equal(logs.includes(sent), false, `${mode} ${form} reached a log line`);
        assert.equal(rows.includes(sent), false, `${mode} ${form} was stored`);
      }
      const stored = await t.prisma.apiLog.findMany({ where: { apiKeyId: k.id }, select: { requestId: true } });
      for (const { requestId } of stored) assert.match(requestId, /^(req_[0-9a-f]{32}|ua-(live|test)-\d+)$/, requestId);
    }
  });
});
