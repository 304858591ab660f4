/**
 * Report benchmark: `npm run bench:report` (= `tsx bench/report.ts`).
 *
 * 1. Imports N rows into a fresh data directory with the admin CLI, as an operator would:
 *    `BENCH_REPORT=invoices` (default) imports `BENCH_INVOICES` invoices (default 100,000; CSV,
 *    `invoices import`); `BENCH_REPORT=services` imports `BENCH_SERVICES` services (default
 *    100,000; `services import`). The CSV is written fast; the import is timed and printed.
 * 2. Starts the server in each layout of `BENCH_LAYOUTS` (default `one,split`), with SMTP_URL
 *    pointing at an SMTP sink in a process of its own (bench/smtp-sink.ts; its work is not counted):
 *    - `one`: as `npm start` (API + job worker in one process, its private Redis);
 *    - `split`: as `npm run start:api` + `npm run start:worker`, sharing a redis-server the bench
 *      starts (REDIS_URL) and the database (DATABASE_URL: processes apart refuse the embedded
 *      one, so without it the default is `one` alone).
 *    The database is embedded PGlite in the data directory unless DATABASE_URL is set; then the
 *    bench creates a database of its own on that server (dropped at the end). One import serves
 *    every layout.
 * 3. POSTs /api/v1/reports/invoices for the whole range (or /api/v1/reports/services, all
 *    services) to 10 recipients, `BENCH_RUNS` times (default 3), and measures per run:
 *    - `answer_ms`: until the HTTP answer (the server's REPORT_WAIT_MS applies; `BENCH_REPORT_WAIT_MS`
 *      sets it, otherwise the server's default);
 *    - `final_ms`: from the request until every recipient is final: after the answer the bench
 *      polls `GET /api/v1/reports/{report_id}` every 100 ms until `recipients_pending` is 0 and
 *      the run is completed, and takes the run's `finished_at` (same host clock), or the moment
 *      the poll saw it when there is none;
 *    - each server process's peak RSS: the kernel's VmHWM, reset through /proc/<pid>/clear_refs
 *      at the start of the run and read once it is final, plus RSS sampled every 10 ms; on the
 *      embedded default the database process the server forks (`db`) too;
 *    - what the SMTP sink received: the largest message in bytes, how many messages carried an
 *      attachment and how many a download link (read from the mail, so it works whatever the
 *      server does), and the workbook's size (the attachment decoded, or the body of one link
 *      downloaded after the run).
 *    `REPORT_ATTACHMENT_MAX_BYTES` and `PUBLIC_BASE_URL`, when set, pass through to the server
 *    (a server that does not know them ignores them).
 * 4. `BENCH_SAVE_WORKBOOK=<path>` keeps the first run's workbook; `BENCH_READ_BACK=1` reads it
 *    back with python3-openpyxl (not the library that wrote it; `BENCH_PYTHON`, default
 *    /usr/bin/python3 where it exists) and prints each sheet's rows.
 *
 * Goal (issue 20): every recipient final in under 1.5 s for 100,000 rows or fewer and under 10 s
 * above (`BENCH_GOAL_MS` overrides), median over the runs, and under 250 MB peak RSS in every
 * process measured. The peak at start-up (VmHWM before the first run) is printed but is not the
 * report's. Results are printed and written to bench/results/report-<timestamp>.json.
 */
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  build,
  children,
  cli,
  commandOf,
  createBenchDatabase,
  databaseChildOf,
  dropBenchDatabase,
  freePort,
  procStatus,
  RECIPIENTS,
  resetPeak,
  ROOT,
  startProcess,
  startSmtpSink,
  stopChildren,
  stopProcess,
  waitForHttp,
  waitUntilFinal,
  writeInvoicesCsv,
  writeServicesCsv,
  type BenchDatabase,
  type Sink,
} from './report-kit.ts';

const REPORT = process.env.BENCH_REPORT ?? 'invoices';
if (REPORT !== 'invoices' && REPORT !== 'services') throw new Error(`BENCH_REPORT must be invoices or services, got ${REPORT}`);
const N = Number((REPORT === 'invoices' ? process.env.BENCH_INVOICES : process.env.BENCH_SERVICES) ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const GOAL_MS = Number(process.env.BENCH_GOAL_MS ?? (N <= 100_000 ? 1500 : 10_000));
const GOAL_RSS_MB = 250;
const FINAL_TIMEOUT_MS = Number(process.env.BENCH_FINAL_TIMEOUT_MS ?? 15 * 60_000);
const MB = 1024 * 1024;

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-'));
let benchDatabase: BenchDatabase | undefined;

interface ProcessFigures {
  pid: number;
  /** RSS once up and idle, before the first report. */
  idle_rss_mb: number;
  /** VmHWM before the first run: the peak of start-up (not the report's). */
  startup_vmhwm_mb: number;
  /** Highest VmHWM over the runs, each run's peak measured from a reset at its start until it was final. */
  report_vmhwm_mb: number;
  /** Highest RSS seen by the 10 ms sampler (a lower bound of the VmHWM). */
  sampled_peak_rss_mb: number;
}

interface RunFigures {
  answer_ms: number;
  final_ms: number;
  /** When the poll saw the run final (a bound above final_ms by the poll's period). */
  seen_final_ms: number;
  http_status: number;
  ok: boolean;
  total: unknown;
  answered: { sent: unknown; failed: unknown; pending: unknown };
  final: { status: string; sent: number; failed: number };
  vmhwm_mb: Record<string, number>;
  messages: number;
  delivery: 'attachment' | 'link' | 'mixed' | 'none';
  with_attachment: number;
  with_link: number;
  largest_message_bytes: number;
  workbook_bytes: number | null;
}

interface LayoutResult {
  layout: 'one' | 'split';
  runs: RunFigures[];
  median_final_ms: number;
  median_answer_ms: number;
  report_peak_rss_mb: number;
  processes: Record<string, ProcessFigures>;
  ok: boolean;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : Math.round(((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2);
}

async function importData(): Promise<{ key: string; importMs: number }> {
  cli(dataDir, ['brokers', 'create', '--name', 'Bench Broker', '--email', 'bench@broker.example', '--slug', 'bench']);
  const key = cli(dataDir, ['keys', 'create', '--broker', 'bench', '--mode', 'live', '--scopes', 'reports:generate', '--rate-limit', '100000']).key as string;
  const file = path.join(dataDir, `${REPORT}.csv`);
  let t = performance.now();
  if (REPORT === 'invoices') writeInvoicesCsv(file, N);
  else writeServicesCsv(file, N, 100_000_000);
  console.log(`wrote ${N} ${REPORT} to CSV in ${Math.round(performance.now() - t)} ms`);
  t = performance.now();
  const imported = cli(dataDir, [REPORT, 'import', '--broker', 'bench', '--file', file]);
  const importMs = Math.round(performance.now() - t);
  console.log(`imported ${String(imported.imported)} ${REPORT} with the CLI in ${importMs} ms`);
  rmSync(file, { force: true });
  return { key, importMs };
}

async function main(): Promise<void> {
  build();
  benchDatabase = await createBenchDatabase('capi_bench');
  console.log(`data dir ${dataDir}; ${N} ${REPORT}; ${RECIPIENTS.length} recipients; ${RUNS} runs`);
  const { key, importMs } = await importData();

  const sink = await startSmtpSink();
  const layouts = (process.env.BENCH_LAYOUTS ?? (process.env.DATABASE_URL ? 'one,split' : 'one')).split(',').map((l) => l.trim()).filter(Boolean);
  const results: LayoutResult[] = [];
  let workbookFile = process.env.BENCH_SAVE_WORKBOOK || (process.env.BENCH_READ_BACK === '1' ? path.join(dataDir, 'read-back.xlsx') : undefined);
  for (const layout of layouts) {
    if (layout !== 'one' && layout !== 'split') throw new Error(`unknown layout ${layout} (one, split)`);
    results.push(await benchLayout(layout, key, sink, workbookFile));
    workbookFile = undefined;
  }
  const readBack = process.env.BENCH_READ_BACK === '1' ? readWorkbookBack(process.env.BENCH_SAVE_WORKBOOK || path.join(dataDir, 'read-back.xlsx')) : undefined;

  const summary = {
    at: new Date().toISOString(),
    report: REPORT,
    rows: N,
    recipients: RECIPIENTS.length,
    cpus: os.cpus().length,
    loadavg_1m: Number(os.loadavg()[0]!.toFixed(2)),
    node: process.version,
    server_command: commandOf('start'),
    database: process.env.DATABASE_URL ? 'postgresql' : 'pglite (embedded)',
    report_wait_ms: process.env.BENCH_REPORT_WAIT_MS ?? 'server default',
    attachment_max_bytes: process.env.REPORT_ATTACHMENT_MAX_BYTES ?? 'server default',
    import_ms: importMs,
    layouts: results,
    read_back: readBack,
    goal: { final_ms: GOAL_MS, rss_mb: GOAL_RSS_MB, compared: 'median final_ms; highest per-process VmHWM during the runs' },
  };
  console.log(JSON.stringify(summary, null, 2));
  console.log('');
  for (const r of results) {
    const last = r.runs.at(-1);
    console.log(
      `${summary.database}, ${REPORT} ${N}, ${r.layout}: every recipient final in ${r.runs.map((x) => (x.final_ms / 1000).toFixed(1)).join(' · ')} s ` +
        `(median ${(r.median_final_ms / 1000).toFixed(2)} s; answers ${r.runs.map((x) => (x.answer_ms / 1000).toFixed(1)).join(' · ')} s); ` +
        `peak RSS ${Object.entries(r.processes).map(([n, p]) => `${n} ${p.report_vmhwm_mb}`).join(', ')} MB ` +
        `(idle ${Object.entries(r.processes).map(([n, p]) => `${n} ${p.idle_rss_mb}`).join(', ')}); ` +
        `workbook ${last?.workbook_bytes == null ? '?' : (last.workbook_bytes / MB).toFixed(1)} MB, largest message ${((last?.largest_message_bytes ?? 0) / MB).toFixed(1)} MB, ` +
        `delivery ${last?.delivery ?? '?'} → ${r.ok ? 'GOAL MET' : 'GOAL NOT MET'}`,
    );
  }
  if (readBack) console.log(`read back with openpyxl: ${readBack}`);
  const ok = results.every((r) => r.ok);
  console.log(ok ? 'GOAL MET' : 'GOAL NOT MET');
  const outDir = path.join(ROOT, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, `report-${summary.at.replace(/[:.]/g, '-')}.json`), `${JSON.stringify(summary, null, 2)}\n`);
  process.exitCode = ok ? 0 : 1;
}

/** Sheet names and row counts as python3-openpyxl reads them (read-only mode, every row iterated). */
function readWorkbookBack(file: string): string {
  const script = `
import sys, openpyxl
wb = openpyxl.load_workbook(sys.argv[1], read_only=True)
out = []
for ws in wb.worksheets:
    n = 0
    last = None
    for row in ws.iter_rows(values_only=True):
        n += 1
        last = row[0] if row else None
    out.append(f"{ws.title}: {n} rows (last first cell {last!r})")
print("; ".join(out))
`;
  // Debian's python3-openpyxl is in the system Python, which a pyenv shim on PATH may hide.
  const python = process.env.BENCH_PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
  const r = spawnSync(python, ['-c', script, file], { encoding: 'utf8', maxBuffer: 16 * MB });
  if (r.status !== 0) return `openpyxl failed: ${r.stderr.trim().split('\n').at(-1) ?? ''}`;
  return r.stdout.trim();
}

async function startLayout(layout: 'one' | 'split', env: NodeJS.ProcessEnv, url: string): Promise<{ procs: Record<string, ChildProcess>; redis?: ChildProcess }> {
  const procs: Record<string, ChildProcess> = {};
  if (layout === 'one') {
    procs.server = startProcess('start', env);
    await waitForHttp(url, 60_000, procs.server);
    return { procs };
  }
  if (!env.DATABASE_URL) throw new Error('the split layout runs processes apart, which need DATABASE_URL (a PostgreSQL); set it or BENCH_LAYOUTS=one');
  const redisPort = await freePort();
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'], { stdio: 'ignore' });
  children.push(redis);
  await new Promise((r) => setTimeout(r, 300));
  env.REDIS_URL = `redis://127.0.0.1:${redisPort}`;
  // Settings every process apart shares (docs/running-apart.md): the worker's links point at the API.
  env.PUBLIC_BASE_URL ??= url;
  if (env.DATABASE_URL) env.CREDENTIALS_KEY ??= randomBytes(32).toString('hex');
  procs.api = startProcess('start:api', env);
  await waitForHttp(url, 60_000, procs.api);
  procs.worker = startProcess('start:worker', env);
  // The worker has no port: give it time to connect and start its BullMQ workers.
  await new Promise((r) => setTimeout(r, 5000));
  if (procs.worker.exitCode !== null) throw new Error('the worker exited at start');
  return { procs, redis };
}

async function benchLayout(layout: 'one' | 'split', key: string, sink: Sink, saveWorkbook: string | undefined): Promise<LayoutResult> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
    REPORTS_PER_HOUR_PER_BROKER: '1000',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    NODE_ENV: 'production',
  };
  if (process.env.BENCH_REPORT_WAIT_MS) env.REPORT_WAIT_MS = process.env.BENCH_REPORT_WAIT_MS;
  const url = `http://127.0.0.1:${port}`;
  const t0 = Date.now();
  const { procs, redis } = await startLayout(layout, env, url);
  await new Promise((r) => setTimeout(r, 500));
  // The processes measured: the servers, and on the embedded default the database process that the
  // API-side server forks (src/db/process.ts), which runs the report's queries.
  const measured: Array<readonly [string, number]> = Object.entries(procs).map(([name, c]) => [name, c.pid!] as const);
  for (const c of Object.values(procs)) {
    const db = databaseChildOf(c.pid!);
    if (db !== undefined) measured.push(['db', db]);
  }
  const figures: Record<string, ProcessFigures> = {};
  for (const [name, pid] of measured) {
    const st = procStatus(pid);
    figures[name] = { pid, idle_rss_mb: Math.round(st.rssMb), startup_vmhwm_mb: Math.round(st.hwmMb), report_vmhwm_mb: 0, sampled_peak_rss_mb: 0 };
  }
  console.log(`[${layout}] up in ${Date.now() - t0} ms; idle RSS ${Object.entries(figures).map(([n, f]) => `${n} ${f.idle_rss_mb} MB (start-up peak ${f.startup_vmhwm_mb})`).join(', ')}`);

  const runs: RunFigures[] = [];
  for (let run = 1; run <= RUNS; run++) {
    const save = run === 1 ? saveWorkbook : undefined;
    runs.push(await oneRun(layout, run, { url, key, sink, measured, figures, save }));
  }
  for (const child of Object.values(procs).reverse()) await stopProcess(child);
  if (redis) await stopProcess(redis);
  const peak = Math.max(...Object.values(figures).map((f) => f.report_vmhwm_mb));
  const medianFinal = median(runs.map((r) => r.final_ms));
  return {
    layout,
    runs,
    median_final_ms: medianFinal,
    median_answer_ms: median(runs.map((r) => r.answer_ms)),
    report_peak_rss_mb: peak,
    processes: figures,
    ok: runs.every((r) => r.ok) && medianFinal < GOAL_MS && peak < GOAL_RSS_MB,
  };
}

interface RunContext {
  url: string;
  key: string;
  sink: Sink;
  measured: Array<readonly [string, number]>;
  figures: Record<string, ProcessFigures>;
  save: string | undefined;
}

async function oneRun(layout: string, run: number, c: RunContext): Promise<RunFigures> {
  c.sink.reset();
  if (c.save) c.sink.saveNextAttachment(c.save);
  for (const [, pid] of c.measured) if (!resetPeak(pid)) console.warn('cannot reset VmHWM (clear_refs): the peaks include start-up');
  const sampled = new Map<string, number>();
  const sampler = setInterval(() => {
    for (const [name, pid] of c.measured) sampled.set(name, Math.max(sampled.get(name) ?? 0, procStatus(pid).rssMb));
  }, 10);
  const t0 = Date.now();
  const t = performance.now();
  const res = await fetch(`${c.url}/api/v1/reports/${REPORT}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${c.key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(REPORT === 'invoices' ? { recipients: RECIPIENTS, start_date: '2025-01-01', end_date: '2025-12-31' } : { recipients: RECIPIENTS }),
  });
  const body = (await res.json()) as { data?: Record<string, unknown> };
  const answerMs = Math.round(performance.now() - t);
  const reportId = body.data?.report_id;
  if (typeof reportId !== 'string') {
    clearInterval(sampler);
    throw new Error(`report answered ${res.status} without a report_id: ${JSON.stringify(body).slice(0, 500)}`);
  }
  const { run: final, seenAt } = await waitUntilFinal(c.url, c.key, reportId, FINAL_TIMEOUT_MS);
  clearInterval(sampler);
  const finishedAt = final.finished_at ? Date.parse(final.finished_at) : NaN;
  const finalMs = Number.isFinite(finishedAt) ? Math.max(answerMs, finishedAt - t0) : seenAt - t0;
  const vmhwm: Record<string, number> = {};
  for (const [name, pid] of c.measured) {
    const st = procStatus(pid);
    vmhwm[name] = Math.round(st.hwmMb);
    const f = c.figures[name]!;
    f.report_vmhwm_mb = Math.max(f.report_vmhwm_mb, vmhwm[name]);
    f.sampled_peak_rss_mb = Math.max(f.sampled_peak_rss_mb, Math.round(Math.max(sampled.get(name) ?? 0, st.rssMb)));
  }
  const mail = await c.sink.stats();
  let workbookBytes: number | null = mail.with_attachment > 0 ? mail.largest_attachment_bytes : null;
  const link = mail.links[0];
  if (workbookBytes === null && link) workbookBytes = await download(link, c.save);
  const delivery = mail.with_attachment > 0 && mail.with_link > 0 ? 'mixed' : mail.with_attachment > 0 ? 'attachment' : mail.with_link > 0 ? 'link' : 'none';
  const total = body.data?.[REPORT === 'invoices' ? 'total_invoices' : 'total_services'];
  const ok = res.status >= 200 && res.status < 300 && total === N && final.recipients_sent === RECIPIENTS.length;
  const figures: RunFigures = {
    answer_ms: answerMs,
    final_ms: finalMs,
    seen_final_ms: seenAt - t0,
    http_status: res.status,
    ok,
    total,
    answered: { sent: body.data?.recipients_sent, failed: body.data?.recipients_failed, pending: body.data?.recipients_pending },
    final: { status: final.status, sent: final.recipients_sent, failed: final.recipients_failed },
    vmhwm_mb: vmhwm,
    messages: mail.messages,
    delivery,
    with_attachment: mail.with_attachment,
    with_link: mail.with_link,
    largest_message_bytes: mail.largest_message_bytes,
    workbook_bytes: workbookBytes,
  };
  console.log(
    `[${layout}] run ${run}: HTTP ${res.status} in ${answerMs} ms (sent ${String(figures.answered.sent)}, pending ${String(figures.answered.pending)}); ` +
      `every recipient final in ${finalMs} ms (${final.status}: sent ${final.recipients_sent}, failed ${final.recipients_failed}); ` +
      `peak RSS ${Object.entries(vmhwm).map(([n, v]) => `${n} ${v}`).join(', ')} MB; ${mail.messages} messages, largest ${(mail.largest_message_bytes / MB).toFixed(1)} MB, ` +
      `${delivery}, workbook ${workbookBytes === null ? '?' : (workbookBytes / MB).toFixed(1)} MB; total ${String(total)}${ok ? '' : ' (NOT OK)'}`,
  );
  return figures;
}

/** Downloads a report link; its size in bytes (kept in `file` when given). */
async function download(link: string, file: string | undefined): Promise<number | null> {
  const res = await fetch(link);
  if (res.status !== 200 || !res.body) {
    console.warn(`download ${link} answered ${res.status}`);
    await res.arrayBuffer().catch(() => undefined);
    return null;
  }
  const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
  let bytes = 0;
  const out = file ? createWriteStream(file) : undefined;
  for await (const chunk of body) {
    bytes += (chunk as Buffer).length;
    if (out && !out.write(chunk)) await once(out, 'drain');
  }
  if (out) await new Promise<void>((resolve) => out.end(resolve));
  return bytes;
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
