/**
 * What the gate records and how soon it can be read (src/auth/gate.ts, src/auth/api-log.ts): real
 * requests, then their entries through the API. The path redacted as the log lines' (no query), the
 * operation, the answer's error (code, message and details, redacted; of a replayed error too), the replay flag; an entry readable within
 * 2 s of its answer through another API process (polled with a deadline, never timed), at once
 * through the same one; a read of the logs logged itself; 30 days' retention.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { loggedError } from '../../src/auth/api-log.ts';
import { scrubPath } from '../../src/ops/redact.ts';
import { deleteRequestLogsBefore, REQUEST_LOG_RETENTION_DAYS } from '../../src/request-logs/store.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker, requestLog, type TestApiKey } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

let t: TestApp;
let live: TestApiKey;
let sandbox: TestApiKey;

before(async () => {
  t = await createTestApp({}, { workers: false });
  const { id: brokerId } = await broker(t.prisma, { approval: 'automatic' });
  live = await apiKey(t.prisma, { brokerId, mode: 'live', rateLimit: 10_000 });
  sandbox = await apiKey(t.prisma, { brokerId, mode: 'test', rateLimit: 10_000 });
});
after(async () => {
  await t?.close();
});

const send = (app: Express, key: string, method: 'get' | 'post', path: string, requestId: string) =>
  request(app)[method](path).set('Authorization', `Bearer ${key}`).set('X-Request-Id', requestId);

/** The entry of `requestId` as the API shows it through `app`, polled until `deadlineMs` (a bound, not a measure). */
async function entryOf(app: Express, key: string, requestId: string, deadlineMs = 20_000): Promise<Record<string, unknown>> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const res = await request(app).get(`/api/v1/request-logs/${requestId}`).set('Authorization', `Bearer ${key}`);
    if (res.status === 200) return res.body.data;
    assert.equal(res.status, 404, JSON.stringify(res.body));
    if (Date.now() > until) assert.fail(`no entry of ${requestId} after ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const id = (what: string) => `${what}-${randomUUID()}`;

describe('what is recorded', () => {
  test('the path as the log lines redact it, without its query; the operation and the error code', async () => {
    const secret = `sk_live_${'A1b2C3d4'.repeat(4)}`;
    const rid = id('redacted');
    const res = await send(t.app, live.key, 'get', `/api/v1/services/${secret}?search=customer-data`, rid);
    assert.equal(res.status, 400);
    const entry = await entryOf(t.app, live.key, rid);
    assert.equal(entry.path, scrubPath(`/api/v1/services/${secret}`));
    assert.equal(entry.path, '/api/v1/services/sk_live_[redacted]');
    assert.equal(entry.operation, 'getService');
    assert.equal(entry.status, 400);
    assert.equal(entry.error_code, 'invalid_parameter');
    assert.equal(entry.method, 'GET');
    assert.equal(entry.api_key_id, live.id);
    assert.equal(entry.mode, 'live');
    assert.ok(!JSON.stringify(entry).includes('customer-data') && !JSON.stringify(entry).includes(secret));
    const rows = await t.prisma.apiLog.findMany({ where: { requestId: rid } });
    assert.ok(!JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)).includes(secret));
  });

  test('an unknown path is recorded with no operation; a success with no error code', async () => {
    const unknown = id('unknown');
    assert.equal((await send(t.app, live.key, 'get', '/api/v1/nothing-here', unknown)).status, 404);
    const found = id('found');
    assert.equal((await send(t.app, live.key, 'get', '/api/v1/auth-check', found)).status, 200);
    const a = await entryOf(t.app, live.key, unknown);
    assert.deepEqual([a.operation, a.status, a.error_code], [null, 404, 'not_found']);
    const b = await entryOf(t.app, live.key, found);
    assert.deepEqual([b.operation, b.status, b.error_code, b.idempotency_replayed], ['getAuthCheck', 200, null, false]);
  });

  test('sandbox: an Idempotency-Key replay is marked, and a replayed error keeps its code', async () => {
    const body = { plan: 'Standard VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example', customer_name: 'Client Ltd' };
    const key = randomUUID();
    const ids = [id('first'), id('replay')];
    for (const rid of ids) {
      const res = await send(t.app, sandbox.key, 'post', '/api/v1/service-create', rid).set('Idempotency-Key', key).send(body);
      assert.ok(res.status === 200 || res.status === 202, JSON.stringify(res.body));
    }
    const [first, replay] = [await entryOf(t.app, sandbox.key, ids[0]!), await entryOf(t.app, sandbox.key, ids[1]!)];
    assert.deepEqual([first.idempotency_replayed, replay.idempotency_replayed], [false, true]);
    assert.deepEqual([first.mode, replay.operation], ['test', 'createService']);
    const errorKey = randomUUID();
    const errorIds = [id('error'), id('error-replay')];
    for (const rid of errorIds) {
      const res = await send(t.app, sandbox.key, 'post', '/api/v1/service-create', rid)
        .set('Idempotency-Key', errorKey).set('X-Test-Scenario', 'validation_error').send(body);
      assert.equal(res.status, 400);
    }
    const replayed = await entryOf(t.app, sandbox.key, errorIds[1]!);
    assert.deepEqual([replayed.status, replayed.error_code, replayed.idempotency_replayed], [400, 'invalid_parameter', true]);
    // The live key does not see the sandbox's entries.
    assert.equal((await request(t.app).get(`/api/v1/request-logs/${ids[0]}`).set('Authorization', `Bearer ${live.key}`)).status, 404);
  });
});

describe("the answer's error", () => {
  /** What an error answer's envelope carried, as the entry must keep it. */
  const sent = (body: { error: Record<string, unknown> }) => {
    const { request_id: _id, ...error } = body.error;
    return error;
  };

  test('a refused upgrade keeps its code, message and details exactly; a success keeps none', async () => {
    const { serviceNumber } = await service(t, { brokerId: live.brokerId, plan: 'Professional VPS' });
    const rid = id('tier');
    const res = await send(t.app, live.key, 'post', `/api/v1/services/${serviceNumber}/upgrade`, rid).send({ plan: 'Basic VPS' });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.ok(res.body.error.details, 'the answer has details');
    const entry = await entryOf(t.app, live.key, rid);
    assert.deepEqual(entry.error, sent(res.body));
    assert.equal(entry.error_code, res.body.error.code);
    const ok = id('no-error');
    assert.equal((await send(t.app, live.key, 'get', '/api/v1/auth-check', ok)).status, 200);
    assert.equal((await entryOf(t.app, live.key, ok)).error, null);
  });

  test('a key in the error (here a key-shaped Idempotency-Key the 422 names) is redacted, in the answer log and the row', async () => {
    const secret = `sk_live_${'Z9y8X7w6'.repeat(4)}`;
    const rids = [id('first'), id('reused')];
    const bodies = [{ plan: 'Standard VPS' }, { plan: 'Enterprise VPS' }];
    const { serviceNumber } = await service(t, { brokerId: live.brokerId, plan: 'Basic VPS' });
    for (const [i, rid] of rids.entries()) {
      await send(t.app, live.key, 'post', `/api/v1/services/${serviceNumber}/upgrade`, rid).set('Idempotency-Key', secret).send(bodies[i]);
    }
    const res = await request(t.app).get(`/api/v1/request-logs/${rids[1]}`).set('Authorization', `Bearer ${live.key}`);
    const entry = (res.body.data ?? (await entryOf(t.app, live.key, rids[1]!))) as { error: { code: string; details: Record<string, unknown> } };
    assert.equal(entry.error.code, 'idempotency_key_reused');
    assert.ok(!JSON.stringify(entry).includes(secret), JSON.stringify(entry));
    assert.match(String(entry.error.details.idempotency_key), /^sk_live_\[redacted\]/);
    const rows = await t.prisma.apiLog.findMany({ where: { requestId: rids[1] } });
    assert.ok(!JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)).includes(secret));
  });

  test('an error echoing a NUL or an unpaired surrogate is stored (as U+FFFD), and the entries written with it are not lost', async () => {
    const rid = id('surrogate');
    // The Idempotency-Key a 422 names comes back in its details as sent.
    const { serviceNumber } = await service(t, { brokerId: live.brokerId, plan: 'Basic VPS' });
    const key = `k-${randomUUID()}`;
    for (const [i, plan] of ['Standard VPS', 'Enterprise VPS'].entries()) {
      await send(t.app, live.key, 'post', `/api/v1/services/${serviceNumber}/upgrade`, i === 0 ? id('first') : rid).set('Idempotency-Key', key).send({ plan });
    }
    const stored = loggedError({ code: 'invalid_parameter', message: 'bad \ud800 and \u0000', details: { value: '\udfff', ['\u0000k']: ['\ud83d'] } });
    assert.deepEqual(stored, { errorCode: 'invalid_parameter', errorMessage: 'bad \ufffd and \ufffd', errorDetails: { value: '\ufffd', ['\ufffdk']: ['\ufffd'] } });
    assert.equal((await entryOf(t.app, live.key, rid)).status, 422);
  });

  test('a replayed error keeps its message and details', async () => {
    const key = randomUUID();
    const rids = [id('error'), id('error-replay')];
    const answers = [];
    for (const rid of rids) {
      const body = { plan: 'Standard VPS', hostname: 'a.example', customer_email: 'a@example.com' };
      answers.push(await send(t.app, sandbox.key, 'post', '/api/v1/service-create', rid).set('Idempotency-Key', key).set('X-Test-Scenario', 'validation_error').send(body));
    }
    assert.equal(answers[1]!.headers['idempotent-replayed'], 'true');
    assert.ok(answers[1]!.body.error.details, 'the answer has details');
    const replayed = await entryOf(t.app, sandbox.key, rids[1]!);
    assert.deepEqual(replayed.error, sent(answers[1]!.body));
    assert.equal(replayed.idempotency_replayed, true);
  });
});

describe('when it can be read', () => {
  test('through the same API process at once: its buffered entries are written before the read', async () => {
    const rid = id('same-process');
    assert.equal((await send(t.app, live.key, 'get', '/api/v1/auth-check', rid)).status, 200);
    const res = await request(t.app).get(`/api/v1/request-logs/${rid}`).set('Authorization', `Bearer ${live.key}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test('through another API process on the same database, by its flush timer (polled with a deadline)', async () => {
    const elsewhere = await t.another();
    const rid = id('other-process');
    assert.equal((await send(t.app, live.key, 'get', '/api/v1/auth-check', rid)).status, 200);
    const entry = await entryOf(elsewhere, live.key, rid);
    assert.equal(entry.request_id, rid);
  });

  test('a read of the logs is logged itself, with its rate limit counted', async () => {
    const rid = id('logs-read');
    const res = await send(t.app, live.key, 'get', '/api/v1/request-logs?status=4xx', rid);
    assert.equal(res.status, 200);
    assert.ok(res.headers['x-ratelimit-remaining']);
    const entry = await entryOf(t.app, live.key, rid);
    assert.deepEqual([entry.operation, entry.path, entry.status], ['listRequestLogs', '/api/v1/request-logs', 200]);
  });
});

describe('retention', () => {
  test(`entries older than ${REQUEST_LOG_RETENTION_DAYS} days are deleted, in batches, and newer ones kept`, async () => {
    const key = await apiKey(t.prisma);
    const day = 86_400_000;
    // Written in the order the requests arrived, as the gate writes them (the delete relies on it).
    await t.flushApiLog();
    await t.prisma.apiLog.deleteMany({});
    const old: string[] = [];
    for (let i = 5; i > 0; i--) old.push(await requestLog(t.prisma, key, { at: new Date(Date.now() - (30 + i) * day) }));
    const kept = await requestLog(t.prisma, key, { at: new Date(Date.now() - 29 * day) });
    const cutoff = new Date(Date.now() - REQUEST_LOG_RETENTION_DAYS * day);
    const deleted = await deleteRequestLogsBefore(t.prisma, cutoff, 2);
    assert.equal(deleted, old.length);
    const left = await t.prisma.apiLog.findMany({ where: { requestId: { in: [...old, kept] } }, select: { requestId: true } });
    assert.deepEqual(left.map((r) => r.requestId), [kept]);
    assert.equal(await t.prisma.apiLog.count({ where: { at: { lt: cutoff } } }), 0);
  });
});
