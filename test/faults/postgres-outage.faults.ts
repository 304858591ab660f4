/**
 * PostgreSQL out (issue 45 items 2 and 3; `npm run test:faults`), with two APIs and a worker as
 * processes apart on a private PostgreSQL cluster and redis-server. While the cluster is stopped,
 * 4 concurrent clients get only `503 service_unavailable` with `Retry-After`, each within 2 s; once it
 * is started again, each API answers `2xx` within 5 s. Then three bursts of 40 live reports at
 * REPORTS_CONCURRENT_PER_BROKER=64: `200` or `429` with `Retry-After`, never `500`. The figures
 * (answers by status, latency p50/p99) are printed for bench/README.md.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { apiKey } from '../helpers/factories.ts';
import { sleep, type RoleProcess } from '../ops/helpers.ts';
import { concurrentClients, faultsAvailable, percentile, startTwoApisAndWorker, startFaultServers, type FaultServers, withDatabaseAt, type PgCluster } from './harness.ts';
import { writingClient } from '../helpers/db.ts';

const skip = faultsAvailable();
const OUTAGE_MS = 10_000;
const ANSWER_BOUND_MS = 2000;
const BACK_BOUND_MS = 5000;

let cluster: PgCluster;
const apis: RoleProcess[] = [];
const children: RoleProcess[] = [];
let servers: FaultServers | undefined;
let dataDir: string;
let key: string;
let reportKey: string;

before(async () => {
  if (skip) return;
  servers = await startFaultServers('capi-faults-pg-outage-');
  ({ cluster, dataDir } = servers);
  const env: NodeJS.ProcessEnv = {
    ...servers.env,
    REPORT_WAIT_MS: '2000',
    REPORTS_CONCURRENT_PER_BROKER: '64',
    REPORTS_PER_HOUR_PER_BROKER: '1000',
    CREDENTIALS_KEY: randomBytes(32).toString('hex'),
  };
  apis.push(...(await startTwoApisAndWorker(env, children)));
  await withDatabaseAt(cluster.url, dataDir, async (db) => {
    const k = await apiKey(writingClient(db.prisma), { rateLimit: 1_000_000 });
    key = k.key;
    const r = await apiKey(writingClient(db.prisma), { scopes: ['reports:generate'], rateLimit: 1_000_000 });
    reportKey = r.key;
    await db.prisma.$executeRaw`
      INSERT INTO "invoices" ("broker_id", "number", "service_number", "amount", "currency", "status", "date")
      SELECT ${r.brokerId}, 'F-' || n, 100000000 + n, 10.00, 'EUR', 'paid'::"invoice_status", DATE '2025-09-15'
      FROM generate_series(1, 3) AS n`;
  });
});

after(async () => {
  await servers?.stop(children);
});

interface Answer {
  api: number;
  status: number;
  code: string | undefined;
  retryAfter: string | null;
  ms: number;
  at: number;
}

/** One request of the mix (reads and a write of PostgreSQL-only operations) to API `i`. */
async function call(i: number, n: number): Promise<Answer> {
  const base = apis[i % apis.length]!.url!;
  const started = performance.now();
  const init: RequestInit =
    n % 3 === 2
      ? {
          method: 'POST',
          headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ plan: 'Basic VPS', hostname: `h${n}-${i}.example.com`, customer_email: `c${n}@example.com` }),
        }
      : { headers: { Authorization: `Bearer ${key}` } };
  const path = init.method === 'POST' ? '/api/v1/service-create' : n % 3 === 0 ? '/api/v1/requests' : '/api/v1/events';
  try {
    const res = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
    const body = (await res.json().catch(() => ({}))) as { error?: { code?: string } };
    return { api: i % apis.length, status: res.status, code: body.error?.code, retryAfter: res.headers.get('retry-after'), ms: performance.now() - started, at: Date.now() };
  } catch {
    return { api: i % apis.length, status: 0, code: 'no answer', retryAfter: null, ms: performance.now() - started, at: Date.now() };
  }
}

/** 4 clients, each calling one request after another until `stop()`; the answers so far. */
const clients = () => concurrentClients(4, (i, n) => call(i, n));

function figures(answers: Answer[]): string {
  const byStatus = new Map<string, number>();
  for (const a of answers) byStatus.set(`${a.status}${a.code ? ` ${a.code}` : ''}`, (byStatus.get(`${a.status}${a.code ? ` ${a.code}` : ''}`) ?? 0) + 1);
  const ms = answers.map((a) => a.ms);
  return `${answers.length} answers: ${[...byStatus].map(([s, n]) => `${s} × ${n}`).join(', ')}; p50 ${percentile(ms, 50).toFixed(0)} ms, p99 ${percentile(ms, 99).toFixed(0)} ms, max ${Math.max(...ms).toFixed(0)} ms`;
}

describe('PostgreSQL stopped under 4 concurrent clients', { skip }, () => {
  test('only 503 with Retry-After, each within 2 s; 2xx again within 5 s of its return', async (t) => {
    const healthy = clients();
    await sleep(2000);
    await healthy.stop();
    assert.ok(healthy.answers.every((a) => a.status >= 200 && a.status < 300), figures(healthy.answers));
    t.diagnostic(`before: ${figures(healthy.answers)}`);

    // pg_ctl runs synchronously in this process: the clients wait while it stops and starts the
    // cluster, so no answer's latency includes this process's own pause.
    cluster.stop();
    const during = clients();
    await sleep(OUTAGE_MS);
    await during.stop();
    t.diagnostic(`stopped: ${figures(during.answers)}`);
    for (const a of during.answers) {
      assert.equal(a.status, 503, JSON.stringify(a));
      assert.equal(a.code, 'service_unavailable', JSON.stringify(a));
      assert.match(a.retryAfter ?? '', /^[1-9]\d*$/, JSON.stringify(a));
      assert.ok(a.ms <= ANSWER_BOUND_MS, `answered after ${a.ms.toFixed(0)} ms: ${JSON.stringify(a)}`);
    }
    assert.ok(during.answers.length >= 40, figures(during.answers));

    cluster.start();
    const backAt = Date.now();
    const again = clients();
    const firstOk = new Map<number, number>();
    while (firstOk.size < apis.length && Date.now() - backAt < 30_000) {
      for (const a of again.answers) if (a.status >= 200 && a.status < 300 && !firstOk.has(a.api)) firstOk.set(a.api, a.at);
      await sleep(50);
    }
    await sleep(1000);
    await again.stop();
    t.diagnostic(`after: ${figures(again.answers)}; first 2xx per API after ${[...firstOk.values()].map((at) => at - backAt).join(', ')} ms`);
    assert.equal(firstOk.size, apis.length, figures(again.answers));
    for (const at of firstOk.values()) assert.ok(at - backAt <= BACK_BOUND_MS, `first 2xx ${at - backAt} ms after the return`);
    for (const a of again.answers) assert.ok(a.status !== 500 && a.status !== 0, JSON.stringify(a));
  });
});

describe('report bursts at REPORTS_CONCURRENT_PER_BROKER=64', { skip }, () => {
  test('three bursts of 40: 200 or 429 with Retry-After, never 500', async (t) => {
    for (let burst = 0; burst < 3; burst++) {
      const answers = await Promise.all(
        Array.from({ length: 40 }, async (_, i) => {
          const started = performance.now();
          const res = await fetch(`${apis[i % apis.length]!.url}/api/v1/reports/invoices`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${reportKey}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ recipients: [`r${burst}-${i}@broker.example`], start_date: '2025-09-01', end_date: '2025-09-30' }),
            signal: AbortSignal.timeout(120_000),
          });
          const body = (await res.json()) as { error?: { code?: string } };
          return { api: i % apis.length, status: res.status, code: body.error?.code, retryAfter: res.headers.get('retry-after'), ms: performance.now() - started, at: Date.now() };
        }),
      );
      t.diagnostic(`burst ${burst + 1}: ${figures(answers)}`);
      // Admitted, or refused with a time to retry: the bound (429), or at worst a pool that had no
      // connection free in time (503); never a 500.
      for (const a of answers) {
        assert.ok(a.status === 200 || a.status === 429 || a.status === 503, JSON.stringify(a));
        if (a.status !== 200) assert.match(a.retryAfter ?? '', /^[1-9]\d*$/, JSON.stringify(a));
      }
    }
  });
});
