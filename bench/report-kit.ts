/**
 * What bench/report.ts and bench/report-load.ts share: the admin CLI, data files written fast,
 * the bench's own database, the server started as its npm script does, the SMTP sink
 * (bench/smtp-sink.ts) and per-process memory from /proc.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { runAdminSql } from '../src/db/client.ts';
import type { SinkStats } from './smtp-sink.ts';
import { startScript } from './start-script.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const RECIPIENTS = Array.from({ length: 10 }, (_, i) => `finance${i + 1}@broker.example`);
export const children: ChildProcess[] = [];

export function cli(dataDir: string, args: string[]): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args, '--json'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`cli ${args.join(' ')} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** Writes a CSV of `n` rows made by `row(i)`, 50,000 lines per write. */
function writeCsv(file: string, header: string, n: number, row: (i: number) => string): void {
  const fd = openSync(file, 'w');
  try {
    let lines = [header];
    for (let i = 0; i < n; i++) {
      lines.push(row(i));
      if (lines.length >= 50_000) {
        writeSync(fd, `${lines.join('\n')}\n`);
        lines = [];
      }
    }
    if (lines.length) writeSync(fd, `${lines.join('\n')}\n`);
  } finally {
    closeSync(fd);
  }
}

const DAY_MS = 86_400_000;
const YEAR_START = Date.UTC(2025, 0, 1);

/** `n` invoices dated over 2025 (a quarter pending, a tenth in USD): the range 2025-01-01..2025-12-31 holds them all. */
export function writeInvoicesCsv(file: string, n: number): void {
  writeCsv(file, 'number,service_number,amount,currency,status,date', n, (i) => {
    const date = new Date(YEAR_START + (i % 365) * DAY_MS).toISOString().slice(0, 10);
    const amount = (10 + (i % 9000) + (i % 100) / 100).toFixed(2);
    return `INV-${String(i + 1).padStart(7, '0')},${100000000 + (i % 5000)},${amount},${i % 10 === 0 ? 'USD' : 'EUR'},${i % 4 === 0 ? 'pending' : 'paid'},${date}`;
  });
}

const PLANS = ['Basic VPS', 'Standard VPS', 'Professional VPS', 'Enterprise VPS'];
const SERVICE_STATUSES = ['active', 'active', 'suspended', 'pending', 'cancelled'];

/** `n` services numbered from `first` (service numbers are unique across brokers), every plan and status. */
export function writeServicesCsv(file: string, n: number, first: number): void {
  writeCsv(file, 'service_number,plan,status,hostname,username,password,customer_name,billing_cycle', n, (i) => {
    const number = first + i;
    return `${number},${PLANS[i % 4]!},${SERVICE_STATUSES[i % 5]!},vps${number}.bench.example,root${i % 1000},pw-${(i * 7919).toString(36)}-x,Customer ${i % 10_000},${i % 3 === 0 ? 'annually' : 'monthly'}`;
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export function procStatus(pid: number): { rssMb: number; hwmMb: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
}

/** The database process (`…/main/database.js`) forked by server `pid`, if any. */
export function databaseChildOf(pid: number): number | undefined {
  let kids: number[] = [];
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return undefined;
  }
  return kids.find((c) => {
    try {
      return readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('main/database.');
    } catch {
      return false;
    }
  });
}

/** Resets the process's VmHWM to its current RSS (Linux `clear_refs` 5), so the next VmHWM is the peak from now on. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export interface Sink {
  port: number;
  process: ChildProcess;
  reset(): void;
  /** Saves the next attachment received to `file`. */
  saveNextAttachment(file: string): void;
  stats(): Promise<SinkStats>;
}

/** Starts bench/smtp-sink.ts in a process of its own. */
export async function startSmtpSink(): Promise<Sink> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'smtp-sink.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { ready: number }).ready));
    child.once('exit', (c) => reject(new Error(`smtp sink exited ${c}`)));
  });
  return {
    port,
    process: child,
    reset: () => child.send('reset'),
    saveNextAttachment: (file) => child.send({ save: file }),
    stats: () =>
      new Promise((resolve) => {
        const on = (m: unknown) => {
          if (m && typeof m === 'object' && 'stats' in m) {
            child.off('message', on);
            resolve((m as { stats: SinkStats }).stats);
          }
        };
        child.on('message', on);
        child.send('stats');
      }),
  };
}

export async function waitForHttp(url: string, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && (child.exitCode !== null || child.signalCode !== null)) throw new Error('the server exited at start');
    try {
      const r = await fetch(`${url}/healthz`);
      await r.arrayBuffer();
      if (r.ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error('server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** With DATABASE_URL: a database of the bench's own on that server, so runs never see each other's data. */
export interface BenchDatabase {
  adminUrl: string;
  name: string;
}

export async function createBenchDatabase(prefix: string): Promise<BenchDatabase | undefined> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) return undefined;
  const name = `${prefix}_${process.pid}`;
  await runAdminSql(adminUrl, `CREATE DATABASE ${name}`);
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  process.env.DATABASE_URL = u.toString();
  return { adminUrl, name };
}

export async function dropBenchDatabase(db: BenchDatabase | undefined): Promise<void> {
  if (!db) return;
  await runAdminSql(db.adminUrl, `DROP DATABASE IF EXISTS ${db.name} WITH (FORCE)`);
}

/**
 * The Node command line of an npm start script (bench/start-script.ts). `BENCH_NODE_FLAGS`
 * overrides the flags (`BENCH_NODE_FLAGS=` for none).
 */
export function commandOf(script: string): string[] {
  const { flags, entry } = startScript(script);
  return [...(process.env.BENCH_NODE_FLAGS !== undefined ? process.env.BENCH_NODE_FLAGS.split(/\s+/).filter(Boolean) : flags), ...entry];
}

/** The servers' compile step of `npm run build`, once, up front (the start scripts compile nothing). */
export function build(): void {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build failed');
}

export function startProcess(script: string, env: NodeJS.ProcessEnv): ChildProcess {
  // The script's own settings (allocator tuning) unless the caller's environment sets them.
  const child = spawn(process.execPath, commandOf(script), { cwd: ROOT, env: { ...startScript(script).env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  children.push(child);
  return child;
}

export async function stopProcess(child: ChildProcess): Promise<void> {
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

export async function stopChildren(): Promise<void> {
  for (const child of children.reverse()) await stopProcess(child);
}

export interface RunRecord {
  status: string;
  recipients_sent: number;
  recipients_failed: number;
  recipients_pending: number;
  finished_at: string | null;
  recipients?: Array<Record<string, unknown>>;
}

/**
 * Polls `GET /api/v1/reports/{id}` every `everyMs` until no recipient is pending; returns the
 * run and when the poll saw it final (epoch ms).
 */
export async function waitUntilFinal(url: string, key: string, reportId: string, timeoutMs: number, everyMs = 100): Promise<{ run: RunRecord; seenAt: number }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${url}/api/v1/reports/${reportId}`, { headers: { Authorization: `Bearer ${key}` } });
    const body = (await res.json()) as { data?: RunRecord };
    if (res.status !== 200 || !body.data) throw new Error(`GET /api/v1/reports/${reportId} answered ${res.status}: ${JSON.stringify(body)}`);
    const run = body.data;
    if (run.recipients_pending === 0 && (run.status === 'completed' || run.status === 'failed')) return { run, seenAt: Date.now() };
    if (Date.now() > deadline) throw new Error(`report ${reportId} not final after ${timeoutMs} ms: ${JSON.stringify(run).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
