/**
 * Invoices report benchmark: `npm run bench:report` (= `tsx bench/report.ts`).
 *
 * 1. Imports N invoices (default 100,000; `BENCH_INVOICES`) into a fresh data directory with the
 *    admin CLI (`invoices import`, a CSV file), as an operator would.
 * 2. Starts the server in each layout of `BENCH_LAYOUTS` (default `one,split`), with SMTP_URL
 *    pointing at an SMTP sink that runs in a process of its own (its work is not counted):
 *    - `one`: as `npm start` (API + job worker in one process, its private Redis);
 *    - `split`: as `npm run start:api` + `npm run start:worker`, sharing a redis-server the bench
 *      starts (REDIS_URL) and the database (DATABASE_URL; on PGlite the worker reaches the
 *      database process that start:api forks through its socket).
 *    The database is embedded PGlite in the data directory unless DATABASE_URL is set; then the
 *    bench creates a database of its own on that server (dropped at the end).
 * 3. POSTs /api/v1/reports/invoices for the whole range to 10 recipients (`BENCH_RUNS` times,
 *    default 3) and measures each answer end to end, and each server process's memory: the
 *    kernel's high-water mark VmHWM (the true peak RSS, reset before each run through
 *    /proc/<pid>/clear_refs so it is the peak of that run), plus RSS sampled every 10 ms.
 *
 * Goal: under 5 s (median) and under 250 MB peak RSS for 100,000 invoices to 10 recipients. The
 * RSS compared with 250 MB is the highest per-process peak during the report runs among the
 * processes doing report work: the one server (`one`); the worker and the API process (`split`;
 * the API process counts because it answers the request).
 * On the embedded default the database process that the server forks (src/db/process.ts) is
 * measured and compared too (`db`): it runs the report's queries.
 * The peak at start-up (VmHWM before the first run) is printed too but is not the report's.
 * Results are printed and written to bench/results/report-<timestamp>.json.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { runAdminSql } from '../src/db/client.ts';

const N = Number(process.env.BENCH_INVOICES ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const RECIPIENTS = Array.from({ length: 10 }, (_, i) => `finance${i + 1}@broker.example`);
const ROOT = path.resolve(import.meta.dirname, '..');
const GOAL_MS = 5000;
const GOAL_RSS_MB = 250;

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-'));
const children: ChildProcess[] = [];

function cli(args: string[]): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args, '--json'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`cli ${args.join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function procStatus(pid: number): { rssMb: number; hwmMb: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
}

/** The database process (`…/main/database.js`) forked by server `pid`, if any. */
function databaseChildOf(pid: number): number | undefined {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return undefined;
  }
  return children.find((c) => {
    try {
      return readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('main/database.');
    } catch {
      return false;
    }
  });
}

/** Resets the process's VmHWM to its current RSS (Linux `clear_refs` 5), so the next VmHWM is the peak from now on. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** An SMTP server that accepts everything and throws the data away, in its own process. */
async function startSmtpSink(port: number): Promise<ChildProcess> {
  const code = `
    const { SMTPServer } = require('smtp-server');
    let messages = 0;
    const server = new SMTPServer({ secure: false, authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false, size: 200 * 1024 * 1024,
      onData(stream, _s, cb) { stream.on('data', () => {}); stream.on('end', () => { messages++; cb(); }); } });
    server.listen(${port}, '127.0.0.1', () => process.send && process.send('ready'));
    process.on('message', (m) => { if (m === 'count') process.send({ messages }); });
  `;
  const child = spawn(process.execPath, ['-e', code], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (c) => reject(new Error(`smtp sink exited ${c}`)));
  });
  return child;
}

async function waitForHttp(url: string, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && (child.exitCode !== null || child.signalCode !== null)) throw new Error('the server exited at start');
    try {
      const r = await fetch(`${url}/openapi.json`);
      if (r.ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error('server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** With DATABASE_URL: a database of the bench's own on that server, so runs never see each other's data. */
let benchDatabase: { adminUrl: string; name: string } | undefined;
async function createBenchDatabase(): Promise<void> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) return;
  const name = `capi_bench_${process.pid}`;
  await runAdminSql(adminUrl, `CREATE DATABASE ${name}`);
  benchDatabase = { adminUrl, name };
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  process.env.DATABASE_URL = u.toString();
}

async function dropBenchDatabase(): Promise<void> {
  if (!benchDatabase) return;
  await runAdminSql(benchDatabase.adminUrl, `DROP DATABASE IF EXISTS ${benchDatabase.name} WITH (FORCE)`);
}

async function main(): Promise<void> {
  build();
  await createBenchDatabase();
  console.log(`data dir ${dataDir}; ${N} invoices; ${RECIPIENTS.length} recipients; ${RUNS} runs`);

  // 1. Data, through the admin CLI.
  const csvFile = path.join(dataDir, 'invoices.csv');
  const lines = ['number,service_number,amount,currency,status,date'];
  const start = Date.UTC(2025, 0, 1);
  for (let i = 0; i < N; i++) {
    const date = new Date(start + (i % 365) * 86_400_000).toISOString().slice(0, 10);
    const status = i % 4 === 0 ? 'pending' : 'paid';
    const amount = (10 + (i % 9000) + (i % 100) / 100).toFixed(2);
    lines.push(`INV-${String(i + 1).padStart(7, '0')},${100000000 + (i % 5000)},${amount},${i % 10 === 0 ? 'USD' : 'EUR'},${status},${date}`);
  }
  writeFileSync(csvFile, `${lines.join('\n')}\n`);
  cli(['brokers', 'create', '--name', 'Bench Broker', '--email', 'bench@broker.example', '--slug', 'bench']);
  const key = cli(['keys', 'create', '--broker', 'bench', '--mode', 'live', '--scopes', 'reports:generate', '--rate-limit', '1000']).key as string;
  const t0 = Date.now();
  const imported = cli(['invoices', 'import', '--broker', 'bench', '--file', csvFile]);
  const importMs = Date.now() - t0;
  console.log(`imported ${String(imported.imported)} invoices with the CLI in ${importMs} ms`);

  // 2. SMTP sink, then each layout in turn.
  const smtpPort = await freePort();
  const sink = await startSmtpSink(smtpPort);
  const layouts = (process.env.BENCH_LAYOUTS ?? 'one,split').split(',').map((l) => l.trim()).filter(Boolean);
  const results: LayoutResult[] = [];
  for (const layout of layouts) {
    if (layout !== 'one' && layout !== 'split') throw new Error(`unknown layout ${layout} (one, split)`);
    results.push(await benchLayout(layout, key, smtpPort));
  }
  const delivered = await new Promise<number>((resolve) => {
    sink.once('message', (m) => resolve((m as { messages: number }).messages));
    sink.send('count');
  });

  const summary = {
    at: new Date().toISOString(),
    invoices: N,
    recipients: RECIPIENTS.length,
    cpus: os.cpus().length,
    loadavg_1m: Number(os.loadavg()[0]!.toFixed(2)),
    node: process.version,
    server_command: commandOf('start'),
    database: process.env.DATABASE_URL ? 'postgresql' : 'pglite (embedded)',
    import_ms: importMs,
    layouts: results,
    messages_delivered: delivered,
    goal: { ms: GOAL_MS, rss_mb: GOAL_RSS_MB, rss_compared: 'highest per-process VmHWM during the report runs (report_peak_rss_mb)' },
  };
  console.log(JSON.stringify(summary, null, 2));
  console.log('');
  for (const r of results) {
    console.log(
      `${summary.database}, ${r.layout}: median ${r.median_ms} ms (first ${r.first_ms} ms); ` +
        `report peak RSS ${r.report_peak_rss_mb} MB (${Object.entries(r.processes).map(([n, p]) => `${n} ${p.report_vmhwm_mb}`).join(', ')}); ` +
        `idle ${Object.entries(r.processes).map(([n, p]) => `${n} ${p.idle_rss_mb}`).join(', ')} MB → ${r.ok ? 'GOAL MET' : 'GOAL NOT MET'}`,
    );
  }
  const ok = results.every((r) => r.ok);
  console.log(ok ? 'GOAL MET' : 'GOAL NOT MET');
  const outDir = path.join(ROOT, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(path.join(outDir, `report-${summary.at.replace(/[:.]/g, '-')}.json`), `${JSON.stringify(summary, null, 2)}\n`);
  process.exitCode = ok ? 0 : 1;
}

interface ProcessFigures {
  pid: number;
  /** RSS once up and idle, before the first report. */
  idle_rss_mb: number;
  /** VmHWM before the first run: the peak of start-up (not the report's). */
  startup_vmhwm_mb: number;
  /** Highest VmHWM over the runs, each run's peak measured from a reset at its start. */
  report_vmhwm_mb: number;
  /** Highest RSS seen by the 10 ms sampler (a lower bound of the VmHWM). */
  sampled_peak_rss_mb: number;
}

interface LayoutResult {
  layout: 'one' | 'split';
  runs: Array<{ ms: number; status: number; vmhwm_mb: Record<string, number> }>;
  first_ms: number;
  median_ms: number;
  report_peak_rss_mb: number;
  processes: Record<string, ProcessFigures>;
  ok: boolean;
}

/**
 * The command line of an npm start script (`node <flags> dist/src/main/<role>.js`), run here
 * without npm in between so the pid measured is the server's own, with the script's Node flags
 * (e.g. `--max-semi-space-size=2`). `BENCH_NODE_FLAGS` overrides the flags (`BENCH_NODE_FLAGS=`
 * for none). The build (`npm run build`, what the prestart scripts run) is made once, up front.
 */
function commandOf(script: string): string[] {
  const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const words = (scripts[script] ?? '').split(/\s+/).filter(Boolean);
  if (words[0] !== 'node') throw new Error(`npm script ${script} does not start with node: ${scripts[script]}`);
  const entry = words.filter((w) => !w.startsWith('--')).slice(1);
  const flags = process.env.BENCH_NODE_FLAGS !== undefined
    ? process.env.BENCH_NODE_FLAGS.split(/\s+/).filter(Boolean)
    : words.slice(1).filter((w) => w.startsWith('--'));
  return [...flags, ...entry];
}

function build(): void {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build failed');
}

function startProcess(script: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, commandOf(script), { cwd: ROOT, env, stdio: ['ignore', 'inherit', 'inherit'] });
  children.push(child);
  return child;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve();
    }, 15_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function benchLayout(layout: 'one' | 'split', key: string, smtpPort: number): Promise<LayoutResult> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    REPORT_WAIT_MS: '60000',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
  };
  const procs: Record<string, ChildProcess> = {};
  let redis: ChildProcess | undefined;
  const url = `http://127.0.0.1:${port}`;
  const t0 = Date.now();
  if (layout === 'one') {
    procs.server = startProcess('start', env);
    await waitForHttp(url, 60_000, procs.server);
  } else {
    const redisPort = await freePort();
    redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'], { stdio: 'ignore' });
    children.push(redis);
    await new Promise((r) => setTimeout(r, 300));
    env.REDIS_URL = `redis://127.0.0.1:${redisPort}`;
    procs.api = startProcess('start:api', env);
    await waitForHttp(url, 60_000, procs.api);
    procs.worker = startProcess('start:worker', env);
    // The worker has no port: give it time to connect and start its BullMQ workers.
    await new Promise((r) => setTimeout(r, 5000));
    if (procs.worker.exitCode !== null) throw new Error('the worker exited at start');
  }
  await new Promise((r) => setTimeout(r, 500));
  // The processes measured: the servers, and on the embedded default the database process that the
  // API-side server forks (src/db/process.ts), which runs the report's queries.
  const measured: Array<readonly [string, number]> = Object.entries(procs).map(([name, c]) => [name, c.pid!] as const);
  for (const [, c] of Object.entries(procs)) {
    const db = databaseChildOf(c.pid!);
    if (db !== undefined) measured.push(['db', db]);
  }
  const figures: Record<string, ProcessFigures> = {};
  for (const [name, pid] of measured) {
    const st = procStatus(pid);
    figures[name] = { pid, idle_rss_mb: Math.round(st.rssMb), startup_vmhwm_mb: Math.round(st.hwmMb), report_vmhwm_mb: 0, sampled_peak_rss_mb: 0 };
  }
  console.log(`[${layout}] up in ${Date.now() - t0} ms; idle RSS ${Object.entries(figures).map(([n, f]) => `${n} ${f.idle_rss_mb} MB (start-up peak ${f.startup_vmhwm_mb})`).join(', ')}`);

  const runs: LayoutResult['runs'] = [];
  for (let run = 1; run <= RUNS; run++) {
    const pids = measured;
    for (const [, pid] of pids) if (!resetPeak(pid)) console.warn('cannot reset VmHWM (clear_refs): the peaks include start-up');
    const sampled = new Map<string, number>();
    const sampler = setInterval(() => {
      for (const [name, pid] of pids) sampled.set(name, Math.max(sampled.get(name) ?? 0, procStatus(pid).rssMb));
    }, 10);
    const t = performance.now();
    const res = await fetch(`${url}/api/v1/reports/invoices`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ recipients: RECIPIENTS, start_date: '2025-01-01', end_date: '2025-12-31' }),
    });
    const body = (await res.json()) as { data?: Record<string, unknown> };
    const ms = performance.now() - t;
    clearInterval(sampler);
    const vmhwm: Record<string, number> = {};
    for (const [name, pid] of pids) {
      const st = procStatus(pid);
      vmhwm[name] = Math.round(st.hwmMb);
      const f = figures[name]!;
      f.report_vmhwm_mb = Math.max(f.report_vmhwm_mb, vmhwm[name]);
      f.sampled_peak_rss_mb = Math.max(f.sampled_peak_rss_mb, Math.round(Math.max(sampled.get(name) ?? 0, st.rssMb)));
    }
    const good = res.status === 200 && body.data?.total_invoices === N && body.data?.recipients_sent === RECIPIENTS.length;
    runs.push({ ms: Math.round(ms), status: good ? res.status : -res.status, vmhwm_mb: vmhwm });
    console.log(
      `[${layout}] run ${run}: HTTP ${res.status} in ${ms.toFixed(0)} ms; peak RSS (VmHWM) ${Object.entries(vmhwm).map(([n, v]) => `${n} ${v} MB`).join(', ')}; ` +
        `total_invoices ${String(body.data?.total_invoices)}, sent ${String(body.data?.recipients_sent)}, failed ${String(body.data?.recipients_failed)}`,
    );
  }
  for (const child of Object.values(procs).reverse()) await stopProcess(child);
  if (redis) await stopProcess(redis);
  const sorted = runs.map((r) => r.ms).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  const peak = Math.max(...Object.values(figures).map((f) => f.report_vmhwm_mb));
  return {
    layout,
    runs,
    first_ms: runs[0]?.ms ?? 0,
    median_ms: median,
    report_peak_rss_mb: peak,
    processes: figures,
    ok: runs.every((r) => r.status === 200) && median < GOAL_MS && peak < GOAL_RSS_MB,
  };
}

async function stopAll(): Promise<void> {
  for (const child of children.reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    child.kill('SIGTERM');
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve();
      }, 15_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  rmSync(dataDir, { recursive: true, force: true });
  await dropBenchDatabase().catch((err: unknown) => console.error('could not drop the bench database', err));
}

try {
  await main();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await stopAll();
}
