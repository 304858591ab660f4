import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createApiLog } from '../../src/auth/api-log.ts';
import { generateApiKey } from '../../src/auth/keys.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t?.close();
});

const logsOf = (apiKeyId: string) => t.prisma.apiLog.findMany({ where: { apiKeyId }, orderBy: { id: 'asc' } });

describe('API log and last-used time', () => {
  test('a sandbox request updates last used and writes a log entry', async () => {
    const k = await apiKey(t.prisma, { mode: 'test' });
    const before = new Date();
    const res = await request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${k.key}`);
    assert.equal(res.status, 200);
    await t.flushApiLog();
    const row = await t.prisma.apiKey.findUniqueOrThrow({ where: { id: k.id } });
    assert.ok(row.lastUsedAt && row.lastUsedAt.getTime() >= before.getTime() - 5);
    const logs = await logsOf(k.id);
    assert.equal(logs.length, 1);
    const [log] = logs;
    assert.equal(log!.brokerId, k.brokerId);
    assert.equal(log!.mode, 'test');
    assert.equal(log!.method, 'GET');
    assert.equal(log!.path, '/api/v1/auth-check');
    assert.equal(log!.status, 200);
    assert.equal(log!.ip, '127.0.0.1');
    assert.equal(log!.requestId, res.headers['x-request-id']);
    assert.ok(log!.durationMs >= 0);
    assert.ok(log!.at.getTime() >= before.getTime() - 5);
  });

  test('429 and 403 responses are logged with their final status', async () => {
    const k = await apiKey(t.prisma, { scopes: ['services:read'], rateLimit: 2 });
    const auth = `Bearer ${k.key}`;
    await request(t.app).get('/api/v1/auth-check').set('Authorization', auth).expect(200);
    await request(t.app).post('/api/v1/auth-check').set('Authorization', auth).expect(403);
    await request(t.app).get('/api/v1/auth-check').set('Authorization', auth).expect(429);
    const ipRefused = await apiKey(t.prisma, { ipWhitelist: ['203.0.113.1'] });
    await request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${ipRefused.key}`).expect(403);
    await t.flushApiLog();
    assert.deepEqual((await logsOf(k.id)).map((l) => [l.method, l.status]), [['GET', 200], ['POST', 403], ['GET', 429]]);
    assert.deepEqual((await logsOf(ipRefused.id)).map((l) => l.status), [403]);
    assert.ok((await t.prisma.apiKey.findUniqueOrThrow({ where: { id: ipRefused.id } })).lastUsedAt);
  });

  test('a request that fails authentication is not logged against anyone', async () => {
    const count = await t.prisma.apiLog.count();
    await request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${generateApiKey('live').key}`).expect(401);
    await request(t.app).get('/api/v1/auth-check').expect(401);
    await t.flushApiLog();
    assert.equal(await t.prisma.apiLog.count(), count);
  });

  test('the log never holds the key, and the path has no query string', async () => {
    const k = await apiKey(t.prisma, { scopes: ['services:read'] });
    await request(t.app)
      .get(`/api/v1/services?search=${encodeURIComponent(k.key)}&limit=1`)
      .set('Authorization', `Bearer ${k.key}`);
    await t.flushApiLog();
    const logs = await logsOf(k.id);
    assert.equal(logs.length, 1);
    assert.equal(logs[0]!.path, '/api/v1/services');
    const text = JSON.stringify(logs, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    assert.ok(!text.includes(k.key) && !text.includes(k.key.slice(8)), text);
  });

  describe('a key sent in the path is stored redacted, as in the log lines (src/ops/redact.ts)', () => {
    const everyCharEncoded = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
    const forms: Array<[string, (key: string) => string]> = [
      ['a report id', (key) => `/api/v1/reports/${key}`],
      ['a service id', (key) => `/api/v1/services/${key}`],
      ['a request id', (key) => `/api/v1/requests/${key}/manage`],
      ['an unknown path', (key) => `/api/v1/${key}`],
      ['underscores percent-encoded', (key) => `/api/v1/services/${key.replace(/_/g, '%5F')}`],
      ['every character percent-encoded', (key) => `/api/v1/services/${everyCharEncoded(key)}`],
      ['percent-encoded twice', (key) => `/api/v1/reports/${encodeURIComponent(everyCharEncoded(key))}`],
      ['upper-case prefix', (key) => `/api/v1/services/${key.replace(/^sk_live_/, 'SK_LIVE_')}`],
      ['glued to other text', (key) => `/api/v1/services/svc_${key}`],
      // Segments shorter than a key's secret (a longer run is redacted whole, issue 32 row 4).
      ['cut at 2,048 characters', (key) => `/api/v1/services/${'a/'.repeat(1010)}a${key}`],
    ];
    for (const [form, pathFor] of forms) {
      test(`${form}: the secret is not in api_logs.path, the mode is`, async () => {
        const k = await apiKey(t.prisma, { scopes: ['admin:full'] });
        await request(t.app).get(pathFor(k.key)).set('Authorization', `Bearer ${k.key}`);
        await t.flushApiLog();
        const [log] = await logsOf(k.id);
        assert.ok(log, 'one entry');
        const secret = k.key.slice('sk_live_'.length);
        for (const leaked of [secret, everyCharEncoded(secret), secret.slice(0, 12), `sk_live_${secret.slice(0, 2)}`]) {
          assert.equal(log.path.includes(leaked), false, log.path);
        }
        // Cut after the scrub: a key across the 2,048th character leaves no part of its secret.
        assert.match(log.path, form.startsWith('cut') ? /sk_live_\[r$/ : /sk_live_\[redacted\]/i);
      });
    }
  });

  test('last used never moves backwards, and is coalesced per key', async () => {
    const k = await apiKey(t.prisma);
    const log = createApiLog(t.prisma, t.deps.logger, { flushIntervalMs: 60_000 });
    const later = new Date(Date.now() + 60_000);
    log.touch(k.id, later);
    log.touch(k.id, new Date(Date.now() - 60_000));
    assert.deepEqual(log.pending(), { entries: 0, keys: 1 });
    await log.flush();
    log.touch(k.id, new Date());
    await log.close();
    const row = await t.prisma.apiKey.findUniqueOrThrow({ where: { id: k.id } });
    assert.equal(row.lastUsedAt?.getTime(), later.getTime());
  });

  test('entries are written in batches: at the size threshold, and all of them on close', async () => {
    const k = await apiKey(t.prisma);
    const log = createApiLog(t.prisma, t.deps.logger, { flushIntervalMs: 60_000, flushAtEntries: 3 });
    const entry = (i: number) => ({
      at: new Date(),
      apiKeyId: k.id,
      brokerId: k.brokerId,
      mode: 'live' as const,
      method: 'GET',
      path: `/api/v1/batch/${i}`,
      status: 200,
      ip: '127.0.0.1',
      durationMs: 1,
      requestId: `req_batch_${i}`,
      operation: null,
      errorCode: null,
      errorMessage: null,
      errorDetails: null,
      idempotencyReplayed: false,
      viaConsole: false,
    });
    log.record(entry(1));
    log.record(entry(2));
    assert.equal(log.pending().entries, 2);
    log.record(entry(3)); // reaches the threshold: written without waiting for the interval
    for (let i = 0; i < 100 && (await logsOf(k.id)).length < 3; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal((await logsOf(k.id)).length, 3);
    log.record(entry(4));
    log.record(entry(5));
    await log.close(); // a graceful shutdown loses nothing
    assert.deepEqual((await logsOf(k.id)).map((l) => l.path.split('/').pop()), ['1', '2', '3', '4', '5']);
    assert.deepEqual(log.pending(), { entries: 0, keys: 0 });
  });
});
