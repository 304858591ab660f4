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
