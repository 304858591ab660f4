/**
 * Report delivery under faults (`npm run test:faults`), with the API and the worker as separate
 * processes on a private PostgreSQL cluster, a private redis-server and an SMTP server of this file.
 * Each scenario asserts the records (report_runs, report_recipients), the copies the SMTP server got
 * per recipient, and that every HTTP answer's counts agree with the records: the sent it reports were
 * sent, nothing is reported failed that was delivered, sent + failed + pending = recipients.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { apiKey } from '../helpers/factories.ts';
import type { Database } from '../../src/db/client.ts';
import { apiAddress, sleep, startRole, tmpDir, waitUntil, type RoleProcess, type TcpRedis } from '../ops/helpers.ts';
import { faultsAvailable, startFaultServers, type FaultServers, type FaultySmtp, type PgCluster, queryOnce, withDatabaseAt } from './harness.ts';
import { writingClient } from '../helpers/db.ts';

const skip = faultsAvailable();
/** Every recipient ends sent or failed within this once the fault is over (docs/operations.md, "Report delivery"). */
const FINAL_BOUND_MS = 90_000;
const RANGE = { start_date: '2025-09-01', end_date: '2025-09-30' };

let cluster: PgCluster;
let redis: TcpRedis;
let smtp: FaultySmtp;
let api: RoleProcess;
let worker: RoleProcess;
let env: NodeJS.ProcessEnv;
let servers: FaultServers | undefined;
let dataDir: string;
const children: RoleProcess[] = [];

before(async () => {
  if (skip) return;
  servers = await startFaultServers('capi-faults-data-');
  ({ cluster, redis, smtp, dataDir } = servers);
  env = {
    ...servers.env,
    REPORT_WAIT_MS: '20000',
    MAIL_RETRY_DELAY_MS: '500',
    REPORT_RECONCILE_MS: '1000',
    DB_STATEMENT_TIMEOUT_MS: '5000',
    REPORTS_CONCURRENT_PER_BROKER: '10',
    // Settings every process apart shares (issue 32 rows 7 and 8).
    CREDENTIALS_KEY: randomBytes(32).toString('hex'),
  };
  const address = await apiAddress();
  env.PUBLIC_BASE_URL = address.PUBLIC_BASE_URL;
  api = await startRole('api', { ...env, PORT: address.PORT });
  children.push(api);
  worker = await startRole('worker', env);
  children.push(worker);
});

after(async () => {
  await servers?.stop(children);
});

const query = <T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> => queryOnce<T>(cluster.url, sql, params);
const withDatabase = <T>(use: (db: Database) => Promise<T>): Promise<T> => withDatabaseAt(cluster.url, dataDir, use);

/** A broker with a live key and paid invoices in RANGE (`rows` of them). */
async function brokerWithInvoices(rows = 2): Promise<string> {
  return withDatabase(async (db) => {
    const k = await apiKey(writingClient(db.prisma), { scopes: ['reports:generate'], rateLimit: 100_000 });
    await db.prisma.$executeRaw`
      INSERT INTO "invoices" ("broker_id", "number", "service_number", "amount", "currency", "status", "date")
      SELECT ${k.brokerId}, 'F-' || n, 100000000 + n, 10.00, 'EUR', 'paid'::"invoice_status", DATE '2025-09-15'
      FROM generate_series(1, ${rows}) AS n`;
    return k.key;
  });
}

interface ReportAnswer {
  status: number;
  body: { data?: { report_id: string; recipients_sent: number; recipients_failed: number; recipients_pending: number }; error?: { code: string } };
}

async function report(baseUrl: string, key: string, recipients: string[]): Promise<ReportAnswer> {
  const res = await fetch(`${baseUrl}/api/v1/reports/invoices`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ recipients, ...RANGE }),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: res.status, body: (await res.json()) as ReportAnswer['body'] };
}

interface RecipientRow {
  email: string;
  status: string;
  attempts: number;
  message_id: string | null;
}

async function recipientsOf(runId: string): Promise<RecipientRow[]> {
  return query<RecipientRow>('SELECT email, status::text, attempts, message_id FROM report_recipients WHERE report_run_id = $1 ORDER BY id', [runId]);
}

/** Waits until every recipient of the run is final and the run completed; returns the recipients. */
async function finalOf(runId: string): Promise<RecipientRow[]> {
  await waitUntil(
    async () => {
      const rows = await query<{ status: string }>('SELECT status::text FROM report_runs WHERE id = $1', [runId]).catch(() => []);
      return rows[0]?.status === 'completed' || rows[0]?.status === 'failed';
    },
    FINAL_BOUND_MS,
    `run ${runId} to finish`,
  );
  return recipientsOf(runId);
}

/** The answer agrees with the final records: what it called sent was sent, it called nothing failed that was not. */
function assertAnswerAgrees(answer: ReportAnswer, recipients: string[], final: RecipientRow[]): void {
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const d = answer.body.data!;
  assert.equal(d.recipients_sent + d.recipients_failed + d.recipients_pending, recipients.length, JSON.stringify(d));
  assert.ok(d.recipients_sent <= final.filter((r) => r.status === 'sent').length, JSON.stringify(d));
  assert.equal(d.recipients_failed, final.filter((r) => r.status === 'failed').length, JSON.stringify(d));
}

/** Every recipient sent, exactly one accepted copy each, and every copy of one recipient with its Message-ID. */
function assertDeliveredOnce(recipients: string[], final: RecipientRow[]): void {
  assert.deepEqual(final.map((r) => r.status), recipients.map(() => 'sent'), JSON.stringify(final));
  for (const row of final) {
    assert.equal(smtp.acceptedTo(row.email).length, 1, `accepted copies to ${row.email}`);
    for (const copy of smtp.receivedTo(row.email)) assert.equal(copy.messageId, row.message_id, `Message-ID of every copy to ${row.email}`);
  }
}

/** Waits for the run of an answer to finish, then checks the answer against the records and the copies. */
async function settlesDeliveredOnce(answer: ReportAnswer | Promise<ReportAnswer>, recipients: string[]): Promise<ReportAnswer> {
  const settled = await answer;
  assert.equal(settled.status, 200, JSON.stringify(settled.body));
  const final = await finalOf(settled.body.data!.report_id);
  assertAnswerAgrees(settled, recipients, final);
  assertDeliveredOnce(recipients, final);
  return settled;
}

/** Replaces the worker (after it was killed) with a new one; `over` changes its settings (another host's DATA_DIR). */
async function restartWorker(over: NodeJS.ProcessEnv = {}): Promise<void> {
  worker = await startRole('worker', { ...env, ...over });
  children.push(worker);
}

/** A scenario that failed half-way may have left no worker running: each starts with one. */
async function ensureWorker(): Promise<void> {
  if (worker.proc.exitCode === null && worker.proc.signalCode === null) return;
  await restartWorker();
}

const addresses = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}-${i + 1}@broker.example`);

describe('report delivery under faults', { skip }, () => {
  test('Redis restarted empty while builds and e-mails are queued: every run finishes, one copy per recipient', async () => {
    await ensureWorker();
    smtp.setDelay(0);
    const key = await brokerWithInvoices();
    await worker.kill('SIGTERM');
    const lists = [addresses('redis-a', 3), addresses('redis-b', 3), addresses('redis-c', 4)];
    const answers = lists.map((r) => report(api.url!, key, r));
    await waitUntil(async () => (await query("SELECT count(*)::int AS n FROM report_runs WHERE status = 'queued'"))[0]!.n >= 3, 20_000, 'three queued runs');
    await redis.stop();
    await redis.start();
    await restartWorker();
    for (const [i, answer] of answers.entries()) await settlesDeliveredOnce(answer, lists[i]!);
  });

  test('PostgreSQL stopped for 10 s while e-mails are being sent: recorded after it is back, nothing sent twice, never a 500', async () => {
    await ensureWorker();
    smtp.setDelay(3000);
    const key = await brokerWithInvoices();
    const recipients = addresses('pg', 3);
    const answer = report(api.url!, key, recipients);
    await waitUntil(() => recipients.every((r) => smtp.receivedTo(r).length === 1), 20_000, 'the messages at the SMTP server');
    cluster.stop();
    await sleep(10_000);
    cluster.start();
    const settled = await settlesDeliveredOnce(answer, recipients);
    for (const row of await recipientsOf(settled.body.data!.report_id)) assert.equal(row.attempts, 1, `${row.email}: one attempt`);
  });

  test('the SMTP server answers the end of DATA after 12 s: delivered once, counted sent within the wait', async () => {
    await ensureWorker();
    smtp.setDelay(12_000);
    const key = await brokerWithInvoices();
    const recipients = addresses('slow12', 2);
    const answer = await report(api.url!, key, recipients);
    assert.equal(answer.body.data?.recipients_sent, 2, `${JSON.stringify(answer.body)}\n${worker.stderr()}\n${worker.logs.text().slice(-3000)}`);
    await settlesDeliveredOnce(answer, recipients);
  });

  test('the SMTP server answers after 25 s: the answer at 20 s counts them pending, not failed; delivered once', async () => {
    await ensureWorker();
    smtp.setDelay(25_000);
    const key = await brokerWithInvoices();
    const recipients = addresses('slow25', 2);
    const answer = await report(api.url!, key, recipients);
    assert.deepEqual(
      [answer.body.data?.recipients_sent, answer.body.data?.recipients_failed, answer.body.data?.recipients_pending],
      [0, 0, 2],
      JSON.stringify(answer.body),
    );
    await settlesDeliveredOnce(answer, recipients);
    const run = await fetch(`${api.url}/api/v1/reports/${answer.body.data!.report_id}`, { headers: { Authorization: `Bearer ${key}` } });
    const body = (await run.json()) as { data: { status: string; recipients_sent: number } };
    assert.equal(body.data.status, 'completed');
    assert.equal(body.data.recipients_sent, 2);
  });

  test('the worker SIGKILLed during a build: the next worker builds and mails it, one copy per recipient', async () => {
    await ensureWorker();
    smtp.setDelay(0);
    const key = await brokerWithInvoices(60_000);
    const recipients = addresses('killbuild', 2);
    const answer = report(api.url!, key, recipients);
    await waitUntil(async () => (await query("SELECT count(*)::int AS n FROM report_runs WHERE status = 'building'"))[0]!.n > 0, 20_000, 'a build under way');
    await worker.kill('SIGKILL');
    await restartWorker();
    await settlesDeliveredOnce(answer, recipients);
  });

  test('the worker SIGKILLed during sends: the next worker, on another host (an empty DATA_DIR), sends the stored workbook without building it again; extra copies only of what was in flight, one Message-ID each', async () => {
    await ensureWorker();
    smtp.setDelay(4000);
    const key = await brokerWithInvoices();
    const recipients = addresses('killsend', 2);
    const answer = report(api.url!, key, recipients);
    await waitUntil(() => recipients.every((r) => smtp.receivedTo(r).length === 1), 20_000, 'the messages at the SMTP server');
    await worker.kill('SIGKILL');
    smtp.setDelay(0);
    const [built] = await query<{ id: string; workbook_build: string; workbook_sha256: string }>(
      "SELECT id, workbook_build::text, workbook_sha256 FROM report_runs WHERE status = 'sending' ORDER BY created_at DESC LIMIT 1",
    );
    assert.ok(built?.workbook_build, 'the run recorded its stored workbook before the kill');
    const otherHost = tmpDir('capi-faults-host-b-');
    try {
      await restartWorker({ DATA_DIR: otherHost.dir });
      const settled = await settlesDeliveredOnce(answer, recipients);
      assert.equal(settled.body.data!.report_id, built.id);
      for (const r of recipients) assert.ok(smtp.receivedTo(r).length <= 2, `${r}: the copy in flight and one more at most`);
      const [after] = await query<{ workbook_build: string }>('SELECT workbook_build::text FROM report_runs WHERE id = $1', [built.id]);
      assert.equal(after!.workbook_build, built.workbook_build, 'the run kept the workbook built before the kill');
      assert.equal(worker.logs.records().filter((r) => r.msg === 'report workbook built').length, 0, 'the new worker built nothing');
      for (const r of recipients) {
        for (const copy of smtp.receivedTo(r)) assert.equal(copy.attachmentSha256, built.workbook_sha256, `${r}: the stored workbook, byte for byte`);
      }
    } finally {
      otherHost.remove();
    }
  });

  test('API SIGTERM under keep-alive load, a report among the requests: clients following /readyz and clients ignoring it see no reset, the report is answered', async () => {
    await ensureWorker();
    smtp.setDelay(2000);
    const key = await brokerWithInvoices();
    const draining = await startRole('api', { ...env, SHUTDOWN_DELAY_MS: '1500' });
    children.push(draining);
    const url = new URL(draining.url!);
    const recipients = addresses('sigterm', 2);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const failures: string[] = [];
    let ok = 0;
    let stopped = false;
    const balancer = (async () => {
      for (let i = 0; i < 600 && !stopped; i++) {
        const res = await fetch(`${url.origin}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
        if (res?.status === 503) stopped = true;
        await sleep(100);
      }
    })();
    // Issue 21 row 11: a refused connection (the listener closed) is fine for a client that
    // ignores /readyz, and ends it; a reset of a request that was sent never is.
    let refused = 0;
    const once = (ignoring: boolean) =>
      new Promise<boolean>((resolve) => {
        const req = http.request({ host: url.hostname, port: url.port, path: '/api/v1/auth-check', agent, headers: { Authorization: `Bearer ${key}` } }, (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) ok++;
            else failures.push(`status ${res.statusCode}`);
            resolve(true);
          });
        });
        req.on('error', (err: NodeJS.ErrnoException) => {
          if (ignoring && err.code === 'ECONNREFUSED') refused++;
          else failures.push(err.code ?? err.message);
          resolve(false);
        });
        req.end();
      });
    const following = Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 5000 && !stopped; i++) await once(false);
    });
    const ignoring = Array.from({ length: 4 }, async () => {
      for (const until = Date.now() + 60_000; Date.now() < until; ) if (!(await once(true))) return;
    });
    const loops = [...following, ...ignoring];
    const answer = report(draining.url!, key, recipients);
    await sleep(700);
    draining.proc.kill('SIGTERM');
    await Promise.all([...loops, balancer]);
    agent.destroy();
    assert.equal(await draining.exited, 0, draining.stderr());
    assert.deepEqual(failures, [], 'requests that were sent and got no answer');
    assert.equal(refused, 4, 'each client ignoring /readyz ends on a refused connection');
    assert.ok(ok > 0);
    await settlesDeliveredOnce(answer, recipients);
  });
});
