/**
 * Report load on other clients: `npm run bench:report-load` (= `tsx bench/report-load.ts`).
 *
 * Starts the server as `npm start` does (API and job worker in one process, the compiled
 * `dist/`, embedded PGlite unless DATABASE_URL is set), imports N invoices (`BENCH_INVOICES`,
 * default 100,000) for one broker with the admin CLI, and measures another broker's
 * `GET /api/v1/auth-check` latency, one request at a time, first with the server idle and then
 * while `BENCH_PARALLEL` (default 6) invoices reports over all of them to 10 recipients each run
 * at once (REPORTS_CONCURRENT_PER_BROKER is raised to that for the bench). E-mail goes to an SMTP
 * sink in a process of its own. Prints the probe's median, p99 and worst latency in both phases
 * and each report's time; `BENCH_ROUNDS` (default 2) repeats the loaded phase.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { runAdminSql } from '../src/db/client.ts';

const N = Number(process.env.BENCH_INVOICES ?? 100_000);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const RECIPIENTS = Array.from({ length: 10 }, (_, i) => `finance${i + 1}@broker.example`);
const ROOT = path.resolve(import.meta.dirname, '..');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-load-'));
const children: ChildProcess[] = [];
let benchDatabase: { adminUrl: string; name: string } | undefined;

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

async function startSmtpSink(port: number): Promise<void> {
  const code = `
    const { SMTPServer } = require('smtp-server');
    const server = new SMTPServer({ secure: false, authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false, size: 200 * 1024 * 1024,
      onData(stream, _s, cb) { stream.on('data', () => {}); stream.on('end', () => cb()); } });
    server.listen(${port}, '127.0.0.1', () => process.send && process.send('ready'));
  `;
  const child = spawn(process.execPath, ['-e', code], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (c) => reject(new Error(`smtp sink exited ${c}`)));
  });
}

/** `node <flags of the start script> dist/src/main/all.js`, without npm in between. */
function startCommand(): string[] {
  const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const words = (scripts.start ?? '').split(/\s+/).filter(Boolean);
  if (words[0] !== 'node') throw new Error(`npm start does not start with node: ${scripts.start}`);
  return words.slice(1);
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;

/** Sequential auth-check requests until `stop` resolves; their latencies in ms. */
async function probe(url: string, key: string, stop: Promise<unknown>): Promise<number[]> {
  let done = false;
  void stop.finally(() => {
    done = true;
  });
  const times: number[] = [];
  while (!done) {
    const t = performance.now();
    const res = await fetch(`${url}/api/v1/auth-check`, { headers: { Authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`auth-check answered ${res.status}`);
    times.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return times;
}

function describe(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  return `n ${sorted.length}, median ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, worst ${(sorted.at(-1) ?? 0).toFixed(1)} ms`;
}

async function main(): Promise<void> {
  const built = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('build failed');
  if (process.env.DATABASE_URL) {
    const adminUrl = process.env.DATABASE_URL;
    const name = `capi_bench_load_${process.pid}`;
    await runAdminSql(adminUrl, `CREATE DATABASE ${name}`);
    benchDatabase = { adminUrl, name };
    const u = new URL(adminUrl);
    u.pathname = `/${name}`;
    process.env.DATABASE_URL = u.toString();
  }
  const csv = path.join(dataDir, 'invoices.csv');
  const lines = ['number,service_number,amount,currency,status,date'];
  for (let i = 0; i < N; i++) {
    const date = new Date(Date.UTC(2025, 0, 1) + (i % 365) * 86_400_000).toISOString().slice(0, 10);
    lines.push(`INV-${String(i + 1).padStart(7, '0')},${100000000 + (i % 5000)},${(10 + (i % 9000)).toFixed(2)},EUR,${i % 4 === 0 ? 'pending' : 'paid'},${date}`);
  }
  writeFileSync(csv, `${lines.join('\n')}\n`);
  cli(['brokers', 'create', '--name', 'Reporting Broker', '--email', 'r@broker.example', '--slug', 'reporting']);
  cli(['brokers', 'create', '--name', 'Other Broker', '--email', 'o@broker.example', '--slug', 'other']);
  const reportKey = cli(['keys', 'create', '--broker', 'reporting', '--mode', 'live', '--scopes', 'reports:generate', '--rate-limit', '1000']).key as string;
  const probeKey = cli(['keys', 'create', '--broker', 'other', '--mode', 'live', '--scopes', 'services:read', '--rate-limit', '10000']).key as string;
  cli(['invoices', 'import', '--broker', 'reporting', '--file', csv]);

  const smtpPort = await freePort();
  await startSmtpSink(smtpPort);
  const port = await freePort();
  const server = spawn(process.execPath, startCommand(), {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
      REPORT_WAIT_MS: '120000',
      REPORTS_CONCURRENT_PER_BROKER: String(PARALLEL),
      REPORTS_PER_HOUR_PER_BROKER: '1000',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
    },
  });
  children.push(server);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (server.exitCode !== null) throw new Error('the server exited at start');
    if (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)) break;
    if (i > 600) throw new Error('server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 1000));

  const idle = await probe(url, probeKey, new Promise((r) => setTimeout(r, 3000)));
  console.log(`idle:   ${describe(idle)}`);
  for (let round = 1; round <= ROUNDS; round++) {
    const t = performance.now();
    const reports = Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        const res = await fetch(`${url}/api/v1/reports/invoices`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${reportKey}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ recipients: RECIPIENTS, start_date: '2025-01-01', end_date: '2025-12-31' }),
        });
        const body = (await res.json()) as { data?: { recipients_sent?: number } };
        if (res.status !== 200) throw new Error(`report answered ${res.status}: ${JSON.stringify(body)}`);
        return { ms: performance.now() - t, sent: body.data?.recipients_sent };
      }),
    );
    const loaded = await probe(url, probeKey, reports);
    const done = await reports;
    console.log(
      `round ${round}, ${PARALLEL} reports of ${N} invoices: ${describe(loaded)}; reports answered in ${done.map((d) => (d.ms / 1000).toFixed(1)).join(', ')} s (sent ${done.map((d) => d.sent).join(',')})`,
    );
  }
}

try {
  await main();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
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
  if (benchDatabase) await runAdminSql(benchDatabase.adminUrl, `DROP DATABASE IF EXISTS ${benchDatabase.name} WITH (FORCE)`).catch(() => undefined);
}
