/**
 * Report load on other brokers: `npm run bench:report-load` (= `tsx bench/report-load.ts`).
 *
 * Starts the server as `npm start` does (API and job worker in one process, the compiled
 * `dist/`, embedded PGlite unless DATABASE_URL is set; then a database of the bench's own on
 * that server), imports with the admin CLI N invoices (`BENCH_INVOICES`, default 100,000) for
 * one broker and `BENCH_OTHER_SERVICES` services (default 500) for another, and measures the
 * other broker's `GET /api/v1/services` (the first page, as a client lists it; the server's
 * SERVICES_CACHE_MS applies), one request at a time every 20 ms: 3 s with the server idle, then
 * while `BENCH_PARALLEL` (default 6) invoices reports over all N invoices to 10 recipients each
 * run at once, until every recipient of every report is final (`GET /api/v1/reports/{id}` polled
 * every 500 ms once a report has answered). REPORTS_CONCURRENT_PER_BROKER is raised to
 * BENCH_PARALLEL for the bench and REPORT_WAIT_MS to 120 s. E-mail goes to an SMTP sink in a
 * process of its own. `BENCH_ROUNDS` (default 2) repeats the loaded phase.
 *
 * Prints the probe's median, p99 and worst latency in each phase, each report's answer and final
 * time, and the verdict against issue 20's goal: the other broker's p99 under load below 50 ms
 * on PostgreSQL and below 100 ms on the embedded default, in every round (`BENCH_GOAL_P99_MS`
 * overrides). Results are written to bench/results/report-load-<timestamp>.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  build,
  cli,
  commandOf,
  createBenchDatabase,
  dropBenchDatabase,
  freePort,
  percentile,
  RECIPIENTS,
  ROOT,
  startProcess,
  startSmtpSink,
  stopChildren,
  waitForHttp,
  waitUntilFinal,
  writeInvoicesCsv,
  writeServicesCsv,
  type BenchDatabase,
} from './report-kit.ts';

const N = Number(process.env.BENCH_INVOICES ?? 100_000);
const OTHER_SERVICES = Number(process.env.BENCH_OTHER_SERVICES ?? 500);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const POSTGRES = Boolean(process.env.DATABASE_URL);
const GOAL_P99_MS = Number(process.env.BENCH_GOAL_P99_MS ?? (POSTGRES ? 50 : 100));
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-load-'));
let benchDatabase: BenchDatabase | undefined;

interface Latencies {
  n: number;
  median_ms: number;
  p99_ms: number;
  worst_ms: number;
}

/** Sequential GET /api/v1/services requests until `stop` resolves; their latencies in ms. */
async function probe(url: string, key: string, stop: Promise<unknown>): Promise<number[]> {
  let done = false;
  void stop.finally(() => {
    done = true;
  });
  const times: number[] = [];
  while (!done) {
    const t = performance.now();
    const res = await fetch(`${url}/api/v1/services`, { headers: { Authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /api/v1/services answered ${res.status}`);
    times.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return times;
}

function summarize(times: number[]): Latencies {
  const sorted = [...times].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 10) / 10;
  return { n: sorted.length, median_ms: r(percentile(sorted, 50)), p99_ms: r(percentile(sorted, 99)), worst_ms: r(sorted.at(-1) ?? 0) };
}

const describe = (l: Latencies) => `n ${l.n}, median ${l.median_ms} ms, p99 ${l.p99_ms} ms, worst ${l.worst_ms} ms`;

async function importData(): Promise<{ reportKey: string; probeKey: string }> {
  cli(dataDir, ['brokers', 'create', '--name', 'Reporting Broker', '--email', 'r@broker.example', '--slug', 'reporting']);
  cli(dataDir, ['brokers', 'create', '--name', 'Other Broker', '--email', 'o@broker.example', '--slug', 'other']);
  const reportKey = cli(dataDir, ['keys', 'create', '--broker', 'reporting', '--mode', 'live', '--scopes', 'reports:generate', '--rate-limit', '100000']).key as string;
  const probeKey = cli(dataDir, ['keys', 'create', '--broker', 'other', '--mode', 'live', '--scopes', 'services:read', '--rate-limit', '100000']).key as string;
  const invoices = path.join(dataDir, 'invoices.csv');
  writeInvoicesCsv(invoices, N);
  cli(dataDir, ['invoices', 'import', '--broker', 'reporting', '--file', invoices]);
  const services = path.join(dataDir, 'services.csv');
  writeServicesCsv(services, OTHER_SERVICES, 200_000_000);
  cli(dataDir, ['services', 'import', '--broker', 'other', '--file', services]);
  return { reportKey, probeKey };
}

interface ReportTimes {
  answer_ms: number;
  final_ms: number;
  sent: number;
}

/** One report of the reporting broker: answer, then polled until every recipient is final. */
async function oneReport(url: string, key: string, t: number): Promise<ReportTimes> {
  const res = await fetch(`${url}/api/v1/reports/invoices`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ recipients: RECIPIENTS, start_date: '2025-01-01', end_date: '2025-12-31' }),
  });
  const body = (await res.json()) as { data?: { report_id?: string } };
  const answerMs = performance.now() - t;
  if (res.status < 200 || res.status >= 300 || !body.data?.report_id) throw new Error(`report answered ${res.status}: ${JSON.stringify(body).slice(0, 500)}`);
  const { run } = await waitUntilFinal(url, key, body.data.report_id, 15 * 60_000, 500);
  return { answer_ms: Math.round(answerMs), final_ms: Math.round(performance.now() - t), sent: run.recipients_sent };
}

async function main(): Promise<void> {
  build();
  benchDatabase = await createBenchDatabase('capi_bench_load');
  const { reportKey, probeKey } = await importData();
  const sink = await startSmtpSink();
  const port = await freePort();
  const server = startProcess('start', {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
    REPORT_WAIT_MS: '120000',
    REPORTS_CONCURRENT_PER_BROKER: String(PARALLEL),
    REPORTS_PER_HOUR_PER_BROKER: '1000',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(url, 60_000, server);
  await new Promise((r) => setTimeout(r, 1000));

  const database = POSTGRES ? 'postgresql' : 'pglite (embedded)';
  const idle = summarize(await probe(url, probeKey, new Promise((r) => setTimeout(r, 3000))));
  console.log(`${database}, idle: ${describe(idle)}`);
  const rounds: Array<{ loaded: Latencies; reports: ReportTimes[] }> = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const t = performance.now();
    const reports = Promise.all(Array.from({ length: PARALLEL }, () => oneReport(url, reportKey, t)));
    const loaded = summarize(await probe(url, probeKey, reports));
    const done = await reports;
    rounds.push({ loaded, reports: done });
    console.log(
      `${database}, round ${round}, ${PARALLEL} reports of ${N} invoices: ${describe(loaded)}; reports answered in ` +
        `${done.map((d) => (d.answer_ms / 1000).toFixed(1)).join(', ')} s, every recipient final in ${done.map((d) => (d.final_ms / 1000).toFixed(1)).join(', ')} s (sent ${done.map((d) => d.sent).join(',')})`,
    );
  }
  const worstP99 = Math.max(...rounds.map((r) => r.loaded.p99_ms));
  const ok = worstP99 < GOAL_P99_MS;
  console.log(`${database}: the other broker's p99 under load ${rounds.map((r) => r.loaded.p99_ms).join(' / ')} ms (goal < ${GOAL_P99_MS} ms) → ${ok ? 'GOAL MET' : 'GOAL NOT MET'}`);
  const summary = {
    at: new Date().toISOString(),
    database,
    invoices: N,
    parallel: PARALLEL,
    cpus: os.cpus().length,
    loadavg_1m: Number(os.loadavg()[0]!.toFixed(2)),
    node: process.version,
    server_command: commandOf('start'),
    probe: 'GET /api/v1/services (other broker)',
    idle,
    rounds,
    goal_p99_ms: GOAL_P99_MS,
    ok,
  };
  const outDir = path.join(ROOT, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, `report-load-${summary.at.replace(/[:.]/g, '-')}.json`), `${JSON.stringify(summary, null, 2)}\n`);
  process.exitCode = ok ? 0 : 1;
}

try {
  await main();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await stopChildren();
  rmSync(dataDir, { recursive: true, force: true });
  await dropBenchDatabase(benchDatabase).catch((err: unknown) => console.error('could not drop the bench database', err));
}
