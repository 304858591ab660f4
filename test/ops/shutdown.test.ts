/**
 * Graceful shutdown of `npm start` (API and worker in one process, on the defaults: the embedded
 * PGlite under DATA_DIR, or DATABASE_URL's PostgreSQL when set; a private redis-server): a
 * SIGTERM while a report runs stops new connections at once, and still answers the report
 * with its counts, completes its run record, writes the API log and exits 0.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { connectForCli } from '../../src/db/client.ts';
import { apiKey } from '../helpers/factories.ts';
import { createPgDatabase, sleep, startHoldingSmtp, startRole, tmpDir, waitUntil, type HoldingSmtp, type PgDatabase, type RoleProcess } from './helpers.ts';
import { writingClient } from '../helpers/db.ts';

const data = tmpDir('capi-ops-shutdown-');
let pgdb: PgDatabase | undefined;
let smtp: HoldingSmtp;
let child: RoleProcess | undefined;
const SMTP_DELAY_MS = 1500;

before(async () => {
  smtp = await startHoldingSmtp({ delayMs: SMTP_DELAY_MS });
  if (process.env.DATABASE_URL) pgdb = await createPgDatabase();
});

after(async () => {
  await child?.kill('SIGKILL');
  await smtp?.stop();
  await pgdb?.drop();
  data.remove();
});

const database = () => connectForCli({ dataDir: data.dir, databaseUrl: pgdb?.url });

const PRE_STOP_MS = 2000;

test('SIGTERM during a report: readiness withdrawn while still serving, then no new connections; the client still gets its 200 with counts, the run is complete', async (ctx) => {
  child = await startRole('all', { DATA_DIR: data.dir, SMTP_URL: smtp.url, SHUTDOWN_DELAY_MS: String(PRE_STOP_MS), ...(pgdb ? { DATABASE_URL: pgdb.url } : {}) });
  const url = child.url!;

  let key: string;
  {
    const db = await database(); // through the server's PGlite socket (or PostgreSQL)
    try {
      const k = await apiKey(writingClient(db.prisma), { scopes: ['reports:generate'] });
      key = k.key;
      await db.prisma.invoice.createMany({
        data: [
          { brokerId: k.brokerId, number: 'S-1', serviceNumber: 100000001, amount: '10.00', currency: 'EUR', status: 'paid', date: new Date('2025-08-02T00:00:00Z') },
          { brokerId: k.brokerId, number: 'S-2', serviceNumber: 100000002, amount: '20.00', currency: 'EUR', status: 'pending', date: new Date('2025-08-03T00:00:00Z') },
        ],
      });
    } finally {
      await db.close();
    }
  }

  const pending = fetch(`${url}/api/v1/reports/invoices`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'X-Request-Id': 'shutdown-report-1' },
    body: JSON.stringify({ recipients: ['one@example.com', 'two@example.com'], start_date: '2025-08-01', end_date: '2025-08-31' }),
    signal: AbortSignal.timeout(60_000),
  });
  // The worker is sending: the SMTP server has the messages and answers in SMTP_DELAY_MS.
  await waitUntil(() => (smtp.received.get('one@example.com') ?? 0) + (smtp.received.get('two@example.com') ?? 0) >= 1, 20_000, 'the report e-mails to be in flight');
  const signalled = Date.now();
  child.proc.kill('SIGTERM');

  await sleep(200);
  // The pre-stop delay: /readyz says 503 so a load balancer stops sending, but new connections are
  // still served and kept alive (closing them would only make clients reconnect, here).
  const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
  assert.equal(ready.status, 503);
  assert.equal(((await ready.json()) as { error: { details: { reason: string } } }).error.details.reason, 'shutting_down');
  assert.notEqual(ready.headers.get('connection'), 'close');
  const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
  assert.equal(health.status, 200, 'still serving during the pre-stop delay');
  assert.notEqual(health.headers.get('connection'), 'close');
  // After the delay the server stops accepting: polled, as a loaded machine runs its timer late.
  await sleep(PRE_STOP_MS - (Date.now() - signalled));
  const refused = async (): Promise<boolean> => {
    const agent = new http.Agent({ keepAlive: false });
    try {
      await new Promise<void>((resolve, reject) => {
        http.get(`${url}/healthz`, { agent, timeout: 2000 }, (r) => r.resume().on('end', resolve)).on('error', reject).on('timeout', () => reject(new Error('timeout')));
      });
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ECONNREFUSED' || (err as NodeJS.ErrnoException).code === 'ECONNRESET';
    } finally {
      agent.destroy();
    }
  };
  const refusedAfterMs = await waitUntil(refused, 10_000, 'a new connection after the pre-stop delay to be refused');
  ctx.diagnostic(`new connections refused ${PRE_STOP_MS + refusedAfterMs} ms after SIGTERM (pre-stop delay ${PRE_STOP_MS} ms)`);

  const res = await pending;
  const answeredMs = Date.now() - signalled;
  assert.equal(res.status, 200);
  const body = (await res.json()) as { data: Record<string, unknown> };
  assert.equal(body.data.total_invoices, 2);
  assert.equal(body.data.recipients_sent, 2);
  assert.equal(body.data.recipients_failed, 0);
  const code = await child.exited;
  const exitedMs = Date.now() - signalled;
  assert.equal(code, 0, child.stderr());
  ctx.diagnostic(`report answered ${answeredMs} ms after SIGTERM; process exited 0 after ${exitedMs} ms`);
  const messages = child.logs.records().map((r) => r.msg);
  for (const m of ['shutting down', 'http server drained', 'stopped']) assert.ok(messages.includes(m), `log "${m}"`);
  assert.ok(messages.indexOf('http server drained') < messages.indexOf('stopped'));

  // The process is gone: the database is ours to open, and it holds the complete outcome.
  const db = await database();
  try {
    const run = await db.prisma.reportRun.findFirstOrThrow({ include: { recipients: true } });
    assert.equal(run.status, 'completed');
    assert.equal(run.recipientsSent, 2);
    assert.equal(run.recipientsFailed, 0);
    assert.ok(run.completedAt);
    assert.ok(run.recipients.every((r) => r.status === 'sent' && r.messageId));
    // The API log entry of the request answered during the shutdown was flushed before exit.
    const logged = await db.prisma.apiLog.findFirst({ where: { requestId: 'shutdown-report-1' } });
    assert.equal(logged?.status, 200);
  } finally {
    await db.close();
  }
});

/**
 * The load tests start their servers on the DATA_DIR the first test set up (its database is there
 * already): setting up a fresh one, the embedded database's longest start, is
 * test/ops/database-process.test.ts's subject, not theirs.
 */
async function startOnData(): Promise<RoleProcess> {
  await child?.kill('SIGKILL'); // the first test's server, should that test have failed before it exited
  child = await startRole('all', { DATA_DIR: data.dir, SHUTDOWN_DELAY_MS: '1500', ...(pgdb ? { DATABASE_URL: pgdb.url } : {}) });
  return child;
}

test('SIGTERM under keep-alive load: clients that follow /readyz see no reset; the requests in flight are answered', async () => {
  let server: RoleProcess | undefined;
  try {
    server = await startOnData();
    const url = new URL(server.url!);
    let key: string;
    {
      const db = await database();
      try {
        key = (await apiKey(writingClient(db.prisma), { scopes: ['admin:full'], rateLimit: 100_000 })).key;
      } finally {
        await db.close();
      }
    }
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const outcomes = { ok: 0, afterDraining: 0, failures: [] as string[] };
    // A load balancer: it polls /readyz and stops sending new requests once it answers 503.
    let draining = false;
    let readyzClose: string | undefined;
    const balancer = (async () => {
      for (let i = 0; i < 600 && !draining; i++) {
        const res = await fetch(`${url.origin}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
        if (res?.status === 503) {
          draining = true;
          readyzClose = res.headers.get('connection') ?? undefined;
        }
        await sleep(100);
      }
    })();
    const once = () =>
      new Promise<void>((resolve) => {
        const req = http.request(
          { host: url.hostname, port: url.port, path: '/api/v1/auth-check', agent, headers: { Authorization: `Bearer ${key}` } },
          (res) => {
            res.resume();
            res.on('end', () => {
              if (res.statusCode === 200) outcomes.ok++;
              else outcomes.failures.push(`status ${res.statusCode}`);
              if (draining) outcomes.afterDraining++;
              resolve();
            });
          },
        );
        req.on('error', (err: NodeJS.ErrnoException) => {
          outcomes.failures.push(err.code ?? err.message);
          resolve();
        });
        req.end();
      });
    const loop = async () => {
      for (let i = 0; i < 5000 && !draining; i++) await once();
    };
    const loops = Array.from({ length: 8 }, loop);
    await sleep(500);
    server.proc.kill('SIGTERM');
    await Promise.all([...loops, balancer]);
    agent.destroy();
    assert.equal(await server.exited, 0, server.stderr());
    assert.ok(draining, 'the balancer saw /readyz 503 before the listener closed');
    assert.notEqual(readyzClose, 'close', 'connections are kept alive during the pre-stop delay');
    assert.deepEqual(outcomes.failures, [], 'every request that was sent got its answer: no reset, no refusal');
    assert.ok(outcomes.ok > 0, 'requests were served');
  } finally {
    await server?.kill('SIGKILL');
  }
});

/**
 * Issue 21 row 11: clients that ignore /readyz and keep sending on keep-alive connections. During
 * the pre-stop delay their connections stay open; once the listener closes, each gets its next
 * answer with `Connection: close` and reconnects, which is refused (ECONNREFUSED, fine: nothing was
 * sent). No request that was sent is reset.
 */
test('SIGTERM under keep-alive load, clients ignoring /readyz: every request sent is answered, no reset; then ECONNREFUSED', async () => {
  let server: RoleProcess | undefined;
  try {
    server = await startOnData();
    const url = new URL(server.url!);
    const db = await database();
    const key = await apiKey(writingClient(db.prisma), { scopes: ['admin:full'], rateLimit: 1_000_000 }).finally(() => db.close());
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const outcomes = { ok: 0, closeAnswers: 0, refused: 0, failures: [] as string[] };
    const once = () =>
      new Promise<boolean>((resolve) => {
        const req = http.request({ host: url.hostname, port: url.port, path: '/api/v1/auth-check', agent, headers: { Authorization: `Bearer ${key.key}` } }, (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) outcomes.ok++;
            else outcomes.failures.push(`status ${res.statusCode}`);
            if (res.headers.connection === 'close') outcomes.closeAnswers++;
            resolve(true);
          });
        });
        req.on('error', (err: NodeJS.ErrnoException) => {
          if (err.code === 'ECONNREFUSED') outcomes.refused++;
          else outcomes.failures.push(err.code ?? err.message);
          resolve(false);
        });
        req.end();
      });
    // Each client sends until the server refuses its connection (or 20 s pass).
    const loop = async () => {
      for (const until = Date.now() + 20_000; Date.now() < until; ) if (!(await once())) return;
    };
    const loops = Array.from({ length: 8 }, loop);
    await sleep(500);
    server.proc.kill('SIGTERM');
    await Promise.all(loops);
    agent.destroy();
    assert.equal(await server.exited, 0, server.stderr());
    assert.deepEqual(outcomes.failures, [], 'requests that were sent and got no answer (a reset) or an error status');
    assert.equal(outcomes.refused, 8, 'each client ends on a refused connection');
    assert.ok(outcomes.closeAnswers > 0, 'answers after the listener closed said Connection: close');
    assert.ok(outcomes.ok > 0);
  } finally {
    await server?.kill('SIGKILL');
  }
});
