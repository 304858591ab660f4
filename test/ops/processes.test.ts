/**
 * The two halves as separate processes (`npm run start:api` ×2, `npm run start:worker`) on one
 * PostgreSQL and one Redis: a key's rate limit is one count across both API processes, reports
 * are built and mailed by the worker process, and a worker killed (SIGKILL) in the middle of a
 * report leaves a job that the next worker completes.
 *
 * The children run `node --import tsx src/main/<role>.ts`, which is what the npm scripts run
 * through `tsx` (checked against package.json below).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { apiKey } from '../helpers/factories.ts';
import {
  apiAddress,
  createPgDatabase,
  freePort,
  postgresAvailable,
  ROOT,
  startHoldingSmtp,
  startRole,
  startTcpRedis,
  tmpDir,
  waitUntil,
  type HoldingSmtp,
  type PgDatabase,
  type RoleProcess,
  type TcpRedis,
} from './helpers.ts';
import { writingClient } from '../helpers/db.ts';

const skip = !(await postgresAvailable()) && 'no PostgreSQL at DATABASE_URL or 127.0.0.1:5432';

let pgdb: PgDatabase;
let redis: TcpRedis;
let smtp: HoldingSmtp;
let db: Database;
const data = tmpDir('capi-ops-procs-');
const children: RoleProcess[] = [];
let api1: RoleProcess;
let api2: RoleProcess;
let worker: RoleProcess;
let env: NodeJS.ProcessEnv;

const HELD = 'slow@example.com';

before(async () => {
  if (skip) return;
  [pgdb, redis, smtp] = await Promise.all([createPgDatabase(), startTcpRedis(), startHoldingSmtp({ hold: [HELD] })]);
  env = {
    DATABASE_URL: pgdb.url,
    REDIS_URL: redis.url,
    SMTP_URL: smtp.url,
    DATA_DIR: data.dir,
    // Settings every process apart shares (docs/running-apart.md); the worker's links point at api1.
    CREDENTIALS_KEY: randomBytes(32).toString('hex'),
    REPORT_WAIT_MS: '40000',
    // A send claimed by a killed worker is released after 2 × this (its claim is no longer renewed).
    REPORT_RECONCILE_MS: '1000',
  };
  // The first API process applies the migrations; the others start on the migrated database.
  const address = await apiAddress();
  env.PUBLIC_BASE_URL = address.PUBLIC_BASE_URL;
  api1 = await startRole('api', { ...env, PORT: address.PORT });
  children.push(api1);
  [api2, worker] = await Promise.all([startRole('api', env), startRole('worker', env)]);
  children.push(api2, worker);
  db = await openDatabase({ databaseUrl: pgdb.url, dataDir: data.dir, migrate: false, poolMax: 2 });
});

/** On a failure, the children's error lines tell why. */
function errorsOf(): string {
  return children
    .flatMap((c) => c.logs.records().filter((r) => Number(r.level) >= 40).map((r) => `${c.role}: ${JSON.stringify(r)}`))
    .join('\n');
}

after(async () => {
  for (const c of children) await c.kill('SIGKILL');
  await db?.close();
  await smtp?.stop();
  await redis?.stop();
  await pgdb?.drop();
  data.remove();
});

async function call(base: string, key: string, pathname: string, body?: unknown) {
  const res = await fetch(`${base}${pathname}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { success: boolean; data?: Record<string, number>; error?: { code: string } } };
}

describe('start:api ×2 + start:worker on one PostgreSQL and Redis', { skip }, () => {
  test('the npm scripts run these entry points', () => {
    const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    // The compiled entry point of the same file (tsconfig.build.json: src/ → dist/src/), with Node
    // flags and glibc's fixed mmap threshold (docs/operations.md, "Memory and the start scripts"), as `npm run build` built it.
    for (const [script, file] of [['start', 'all'], ['start:api', 'api'], ['start:worker', 'worker']] as const) {
      assert.match(scripts[script]!, new RegExp(`^MALLOC_MMAP_THRESHOLD_=131072 node dist/src/main/${file}\\.js$`));
      // Nothing is compiled at start: the pre-step only refuses a build of another tree (test/e2e/start-built.test.ts).
      assert.equal(scripts[`pre${script}`], 'node scripts/build-stamp.mjs --check');
    }
    const build = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: Record<string, unknown>; include: string[] };
    assert.equal(build.compilerOptions.outDir, 'dist');
    assert.equal(build.compilerOptions.rootDir, '.');
    assert.ok(build.include.includes('src'));
    assert.notEqual(api1.url, api2.url);
  });

  test("one key's rate limit holds across both API processes", async () => {
    const { key } = await apiKey(writingClient(db.prisma), { scopes: ['services:read'], rateLimit: 6 });
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await call(i % 2 === 0 ? api1.url! : api2.url!, key, '/api/v1/auth-check'));
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200, 429, 429]);
    assert.deepEqual(answers.slice(0, 6).map((a) => a.headers.get('x-ratelimit-remaining')), ['5', '4', '3', '2', '1', '0']);
    assert.equal(answers[7]!.body.error?.code, 'rate_limit_exceeded');
    assert.ok(Number(answers[7]!.headers.get('retry-after')) >= 1);
  });

  test('a live invoices report is built and mailed by the worker process; a killed worker leaves it to the next one', async (ctx) => {
    const k = await apiKey(writingClient(db.prisma), { scopes: ['reports:generate'], rateLimit: 1000 });
    await db.prisma.invoice.createMany({
      data: [
        { brokerId: k.brokerId, number: 'P-1', serviceNumber: 100000001, amount: '10.00', currency: 'EUR', status: 'paid', date: new Date('2025-07-02T00:00:00Z') },
        { brokerId: k.brokerId, number: 'P-2', serviceNumber: 100000002, amount: '11.00', currency: 'EUR', status: 'paid', date: new Date('2025-07-03T00:00:00Z') },
        { brokerId: k.brokerId, number: 'P-3', serviceNumber: 100000003, amount: '12.00', currency: 'EUR', status: 'pending', date: new Date('2025-07-04T00:00:00Z') },
      ],
    });
    const range = { start_date: '2025-07-01', end_date: '2025-07-31' };

    // 1. An ordinary report through the second API process: the worker mails both recipients.
    const plain = await call(api2.url!, k.key, '/api/v1/reports/invoices', { recipients: ['a@example.com', 'b@example.com'], ...range });
    assert.equal(plain.status, 200, `${JSON.stringify(plain.body)}\n${errorsOf()}`);
    assert.deepEqual(
      { total: plain.body.data?.total_invoices, paid: plain.body.data?.paid_invoices, unpaid: plain.body.data?.unpaid_invoices, sent: plain.body.data?.recipients_sent, failed: plain.body.data?.recipients_failed },
      { total: 3, paid: 2, unpaid: 1, sent: 2, failed: 0 },
    );
    assert.equal(smtp.accepted.get('a@example.com'), 1);
    // (Its log line may reach this process's pipe just after the HTTP answer.)
    await waitUntil(() => worker.logs.records().some((r) => r.msg === 'report run completed'), 5000, 'the worker process to log the report run');
    for (const api of [api1, api2]) assert.ok(!api.logs.records().some((r) => r.msg === 'report run completed'), 'API processes only enqueue');

    // 2. The SMTP server holds the message to HELD: the worker is in the middle of sending it.
    const pending = call(api1.url!, k.key, '/api/v1/reports/invoices', { recipients: [HELD, 'fast@example.com'], ...range });
    await waitUntil(() => smtp.received.get(HELD) === 1, 20_000, 'the worker to be sending the held message').catch((e: Error) => {
      throw new Error(`${e.message}\n${errorsOf()}`);
    });
    const run = await db.prisma.reportRun.findFirstOrThrow({ where: { recipients: { some: { email: HELD } } }, include: { recipients: true } });
    const heldRecipient = run.recipients.find((r) => r.email === HELD)!;
    const jobId = `send.${heldRecipient.id}`;
    await worker.kill('SIGKILL');
    const killedAt = Date.now();

    // The next worker's reconciler releases the dead worker's claim (not renewed for 2 ×
    // REPORT_RECONCILE_MS) and BullMQ gives the dead worker's jobs to another worker once their locks
    // (30 s) have expired and a stalled-job check has seen them twice (checks every 30 s). Fast-forward that wait
    // for every job the dead worker held (the other e-mail may still be in flight on a slow
    // machine): expire the locks and record the first sighting, as the checks would have.
    const r = new Redis(redis.port, '127.0.0.1');
    try {
      assert.equal(await r.exists(`capi:mail:${jobId}:lock`), 1, 'the killed worker held the job');
      for (const queue of ['capi:mail', 'capi:reports']) {
        const active = await r.lrange(`${queue}:active`, 0, -1);
        if (queue === 'capi:mail') assert.ok(active.includes(jobId), 'the job is still active');
        await r.del(`${queue}:stalled-check`, ...active.map((id) => `${queue}:${id}:lock`));
        if (active.length > 0) await r.sadd(`${queue}:stalled`, ...active);
      }
    } finally {
      r.disconnect();
    }
    const metricsPort = await freePort();
    const restarted = await startRole('worker', { ...env, METRICS_PORT: String(metricsPort) });
    children.push(restarted);

    const answer = await pending;
    ctx.diagnostic(`report answered ${Date.now() - killedAt} ms after the worker was killed (new worker start included)`);
    assert.equal(answer.status, 200, `${JSON.stringify(answer.body)}\n${errorsOf()}`);
    assert.equal(answer.body.data?.recipients_sent, 2);
    assert.equal(answer.body.data?.recipients_failed, 0);
    const done = await db.prisma.reportRun.findUniqueOrThrow({ where: { id: run.id }, include: { recipients: true } });
    assert.equal(done.status, 'completed');
    assert.equal(done.recipientsSent, 2);
    assert.ok(done.recipients.every((x) => x.status === 'sent'));
    // At-least-once: the message the dead worker had fully transmitted was sent again.
    assert.equal(smtp.received.get(HELD), 2);
    assert.equal(smtp.accepted.get(HELD), 1);
    // The other e-mail was delivered, possibly twice: when the server had accepted it but the
    // worker died before recording that, the next worker sends it again (seen on loaded runs).
    const fastCopies = smtp.accepted.get('fast@example.com') ?? 0;
    assert.ok(fastCopies === 1 || fastCopies === 2, `fast@example.com accepted ${fastCopies} times`);
    if (fastCopies === 2) ctx.diagnostic('duplicate delivery observed: accepted, then the worker was killed before recording it');
    await waitUntil(() => restarted.logs.records().some((x) => x.msg === 'report run completed' && x.runId === run.id), 5000, 'the restarted worker to log the run');
    // A worker's own counters are on its METRICS_PORT: it sent the e-mails it took over (the held
    // one, and the other one too if the dead worker had not recorded it).
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    assert.match(metrics, /^emails_sent_total\{kind="report"\} [12]$/m);
    assert.match(metrics, /^bullmq_queue_jobs\{queue="mail",state="waiting"\} \d+/m);
    // Kept completed jobs stop at their cap, so the gauge does not report them (issue 47).
    assert.doesNotMatch(metrics, /^bullmq_queue_jobs\{[^}]*state="completed"\}/m);
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status, 200);
  });

  test('SIGTERM and SIGINT stop each API and worker process cleanly (exit 0) and promptly', async (ctx) => {
    const alive = children.filter((c) => c.proc.exitCode === null && c.proc.signalCode === null);
    assert.equal(alive.length, 3, 'two API processes and the restarted worker');
    const started = Date.now();
    const codes = await Promise.all(alive.map((c, i) => c.kill(i === 1 ? 'SIGINT' : 'SIGTERM')));
    const ms = Date.now() - started;
    assert.deepEqual(codes, [0, 0, 0]);
    assert.ok(ms < 10_000, `stopped in ${ms} ms`);
    ctx.diagnostic(`idle API ×2 and worker stopped ${ms} ms after SIGTERM / SIGINT`);
    for (const c of alive) assert.ok(c.logs.records().some((r) => r.msg === 'stopped'), `${c.role} logged "stopped"`);
  });
});
