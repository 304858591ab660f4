/**
 * Faults while the API runs (the real runtime of `npm start`, in this process): the SMTP server,
 * Redis and the database each go away and come back. Every request answers within a bound (no
 * hang), in the envelope, and the service recovers by itself.
 *
 * Runs on PostgreSQL (DATABASE_URL, or the local server at 127.0.0.1:5432): the database outage is
 * `ALTER DATABASE … ALLOW_CONNECTIONS false` plus terminating that database's connections, which
 * touches no other test's database. Redis is a redis-server of this file on a TCP port, killed and
 * started again on the same port.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import pg from 'pg';
import { startRuntime, type Runtime } from '../../src/main/runtime.ts';
import { apiKey } from '../helpers/factories.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import {
  createPgDatabase,
  postgresAvailable,
  startTcpRedis,
  tmpDir,
  waitUntil,
  type PgDatabase,
  type TcpRedis,
} from './helpers.ts';
import { writingClient } from '../helpers/db.ts';

const skip = !(await postgresAvailable()) && 'no PostgreSQL at DATABASE_URL or 127.0.0.1:5432';

/** No request may take longer than this while a dependency is down. */
const FAIL_FAST_BOUND_MS = 3000;
/** DB_STATEMENT_TIMEOUT_MS here: well under the fail-fast bound, well over any query of these tests. */
const STATEMENT_TIMEOUT_MS = 1500;
/** The service must be back this long after the dependency is. */
const RECOVERY_BOUND_MS = 15_000;

let db: PgDatabase;
let redis: TcpRedis;
let smtp: TestSmtp;
let runtime: Runtime;
const data = tmpDir('capi-ops-faults-');
let key: string;

before(async () => {
  if (skip) return;
  [db, redis, smtp] = await Promise.all([createPgDatabase(), startTcpRedis(), startTestSmtp()]);
  runtime = await startRuntime('all', {
    env: {
      NODE_ENV: 'test',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      SMTP_URL: smtp.url,
      DATA_DIR: data.dir,
      PORT: '0',
      REPORT_WAIT_MS: '20000',
      // Retries of a transient SMTP failure within the report's wait (the default waits 30 s first).
      MAIL_RETRY_DELAY_MS: '100',
      DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
    },
    jobsCloseTimeoutMs: 2000,
    shutdownTimeoutMs: 2000,
  });
  const prisma = writingClient(runtime.database.prisma);
  const k = await apiKey(prisma, { scopes: ['admin:full'], rateLimit: 10_000 });
  key = k.key;
  await prisma.invoice.createMany({
    data: [
      { brokerId: k.brokerId, number: 'F-1', serviceNumber: 100000001, amount: '10.00', currency: 'EUR', status: 'paid', date: new Date('2025-06-02T00:00:00Z') },
      { brokerId: k.brokerId, number: 'F-2', serviceNumber: 100000002, amount: '20.00', currency: 'EUR', status: 'pending', date: new Date('2025-06-03T00:00:00Z') },
    ],
  });
});

after(async () => {
  await runtime?.shutdown('test done');
  await smtp?.stop();
  await redis?.stop();
  await db?.drop();
  data.remove();
});

interface Answer {
  status: number;
  body: { success: boolean; data?: Record<string, unknown>; error?: { code: string; message: string; details?: Record<string, unknown> } };
  ms: number;
}

async function call(path: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(`${runtime.url}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...(init.headers ?? {}) },
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await res.json()) as Answer['body'];
  return { status: res.status, body, ms: Date.now() - started };
}

const authCheck = () => call('/api/v1/auth-check');
const report = (recipients = ['one@example.com', 'two@example.com']) =>
  call('/api/v1/reports/invoices', {
    method: 'POST',
    body: JSON.stringify({ recipients, start_date: '2025-06-01', end_date: '2025-06-30' }),
  });

/** An outage is a 503 asking for a retry, never a 500 (issue 45). */
function assertUnavailable(a: Answer, what: string): void {
  assert.equal(a.status, 503, `${what}: ${JSON.stringify(a.body)}`);
  assert.equal(a.body.success, false);
  assert.equal(a.body.error?.code, 'service_unavailable');
  assert.ok(a.ms < FAIL_FAST_BOUND_MS, `${what} answered in ${a.ms} ms (bound ${FAIL_FAST_BOUND_MS} ms)`);
}

async function recovers(ctx: TestContext, what: string): Promise<void> {
  // Ready again, and answering: with Redis down requests were answered all along (issue 45).
  const ms = await waitUntil(async () => (await call('/readyz')).status === 200 && (await authCheck()).status === 200, RECOVERY_BOUND_MS, `recovery after ${what}`);
  ctx.diagnostic(`${what}: requests succeed again ${ms} ms after it is back`);
  const ready = await call('/readyz');
  assert.equal(ready.status, 200, JSON.stringify(ready.body));
}

describe('faults', { skip }, () => {
  test('baseline: a live report is mailed to every recipient', async () => {
    const r = await report();
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data?.recipients_sent, 2);
    assert.equal(r.body.data?.recipients_failed, 0);
  });

  test('SMTP server stops: the report answers 200 with every recipient counted failed', async (ctx) => {
    await smtp.stop();
    const r = await report(['a@example.com', 'b@example.com', 'c@example.com']);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data?.recipients_sent, 0);
    assert.equal(r.body.data?.recipients_failed, 3);
    ctx.diagnostic(`report with the SMTP server down answered in ${r.ms} ms (3 attempts per recipient)`);
    const latest = () => runtime.database.prisma.reportRun.findFirstOrThrow({ orderBy: { createdAt: 'desc' }, include: { recipients: true } });
    await waitUntil(async () => (await latest()).status === 'completed', 10_000, 'the run record to complete');
    const run = await latest();
    assert.equal(run.recipientsFailed, 3);
    assert.ok(run.recipients.every((x) => x.status === 'failed' && /ECONNREFUSED|ECONNECTION|connect/i.test(x.error ?? '')), JSON.stringify(run.recipients));
  });

  test('Redis stops: requests are still answered from the database (issue 45), /readyz 503, and the API recovers by itself', async (ctx) => {
    assert.equal((await authCheck()).status, 200);
    await redis.stop();
    const a = await authCheck();
    assert.equal(a.status, 200, `auth-check with Redis down (the insurance limiter counts it): ${JSON.stringify(a.body)}`);
    assert.ok(a.ms < FAIL_FAST_BOUND_MS, `auth-check with Redis down answered in ${a.ms} ms`);
    const r = await report();
    // Recorded, its recipients pending: the reconciler queues it once Redis is back.
    assert.equal(r.status, 200, `report with Redis down: ${JSON.stringify(r.body)}`);
    assert.ok(r.ms < FAIL_FAST_BOUND_MS, `report with Redis down answered in ${r.ms} ms`);
    const ready = await call('/readyz');
    assert.equal(ready.status, 503);
    assert.equal(ready.body.error?.code, 'service_unavailable');
    assert.deepEqual(ready.body.error?.details, { checks: { database: 'ok', redis: 'down' } });
    assert.ok(ready.ms < FAIL_FAST_BOUND_MS, `/readyz took ${ready.ms} ms`);
    assert.equal((await call('/healthz')).status, 200, 'alive while Redis is down');
    const scrapeDown = await fetch(`${runtime.url}/metrics`, { signal: AbortSignal.timeout(FAIL_FAST_BOUND_MS) });
    assert.equal(scrapeDown.status, 200, 'metrics still scrape');
    assert.doesNotMatch(await scrapeDown.text(), /^bullmq_queue_jobs\{/m, 'no stale queue depth while Redis is down');
    ctx.diagnostic(`Redis down: auth-check ${a.ms} ms, report ${r.ms} ms, readyz ${ready.ms} ms`);

    await redis.start();
    await recovers(ctx, 'Redis restart');
    const scrapeUp = await (await fetch(`${runtime.url}/metrics`)).text();
    assert.match(scrapeUp, /^bullmq_queue_jobs\{queue="reports",state="waiting"\} \d+/m, 'queue depth is back');
    // The job pipeline is back too: workers and queue events reconnected to the new (empty) Redis.
    const after = await waitUntil(async () => (await report()).body.data?.recipients_failed === 2, RECOVERY_BOUND_MS, 'reports after Redis is back');
    ctx.diagnostic(`reports run again ${after} ms after requests did (SMTP still down: counted failed)`);
  });

  test('the database stops: requests answer 503 service_unavailable at once, /readyz 503, and the API recovers by itself', async (ctx) => {
    // A key the key cache has never seen, so authentication itself needs the database.
    const fresh = await apiKey(writingClient(runtime.database.prisma), { scopes: ['admin:full'] });
    await db.takeDown();
    try {
      const a = await call('/api/v1/auth-check', { headers: { Authorization: `Bearer ${fresh.key}` } });
      assertUnavailable(a, 'auth-check with the database down');
      const r = await report();
      assertUnavailable(r, 'report with the database down');
      const ready = await call('/readyz');
      assert.equal(ready.status, 503);
      assert.deepEqual(ready.body.error?.details, { checks: { database: 'down', redis: 'ok' } });
      ctx.diagnostic(`database down: auth-check ${a.ms} ms, report ${r.ms} ms, readyz ${ready.ms} ms`);
    } finally {
      await db.bringUp();
    }
    await recovers(ctx, 'the database coming back');
    const again = await call('/api/v1/auth-check', { headers: { Authorization: `Bearer ${fresh.key}` } });
    assert.equal(again.status, 200);
  });

  test('the database hangs (a lock never released): the request answers 503 within the statement timeout, then recovers', async (ctx) => {
    const fresh = await apiKey(writingClient(runtime.database.prisma), { scopes: ['admin:full'] });
    // Another session holds every lock on api_keys, so the key lookup waits, as on a hung server.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE "api_keys" IN ACCESS EXCLUSIVE MODE');
      const a = await call('/api/v1/auth-check', { headers: { Authorization: `Bearer ${fresh.key}` } });
      assertUnavailable(a, 'auth-check with api_keys locked');
      assert.ok(a.ms >= STATEMENT_TIMEOUT_MS - 100, `answered after ${a.ms} ms: it did wait for the lock`);
      ctx.diagnostic(`hung database: auth-check answered 503 after ${a.ms} ms`);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
    const again = await call('/api/v1/auth-check', { headers: { Authorization: `Bearer ${fresh.key}` } });
    assert.equal(again.status, 200, JSON.stringify(again.body));
  });
});
