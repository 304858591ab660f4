/**
 * `npm run bench`: HTTP throughput and latency of the API against the ceiling of this machine.
 *
 * Measures, one after the other and each in a server process of its own (so the load generator,
 * autocannon in this process, never shares a thread with the server under test):
 *
 *   a. bare     a bare Express 5 JSON route, no middleware (the ceiling), on Express's own
 *               server (app.listen) and, for comparison, on the API's server (listen())
 *   b. auth     GET /api/v1/auth-check with a live key
 *   c. list     GET /api/v1/services?limit=25 with a live key, over 10,000 services
 *   d. 304      the same with the page's ETag in If-None-Match: a conditional read answered 304
 *   e. page     GET /api/v1/services?limit=100, the page the Conditional requests guide polls, then
 *               the same with its ETag in If-None-Match (304)
 *
 * The API runs as production does: the compiled server (dist/, built first) with `npm start`'s node
 * flags, startRuntime('all') (API and job worker in one process, private
 * Redis), NODE_ENV=production (response validation off), production's LOG_LEVEL (info: a line per
 * request, written to a file under var/ as production's goes to its collector). The database is PGlite
 * by default; with DATABASE_URL set (a PostgreSQL server) a database capi_bench_<pid> is created
 * there and dropped at the end.
 *
 * Settings (env): BENCH_CONNECTIONS (32), BENCH_DURATION seconds per route (6), BENCH_WARMUP
 * seconds (1), BENCH_PROFILE=1 (or api, bare, both) writes a V8 CPU profile of the API process (the
 * bare server, both) to var/bench-profile/. BENCH_BASE=<git rev>: an A/B of this checkout's API
 * against that commit's, in alternating rounds (BENCH_ROUNDS, 4). BENCH_NODE_FLAGS: node flags added
 * to `npm start`'s for the API process (e.g. `--max-semi-space-size=32`), to try a setting;
 * BENCH_B_NODE_FLAGS: added to side B's only in an A/B (BENCH_BASE=HEAD compares the flags alone).
 * BENCH_BUILT=1 skips the build (dist/ is current). With a profile, each timed run's span goes to
 * var/bench-profile/windows-<pid>.json for `npm run bench:stages` (bench/profile-stages.ts).
 * Goal: authenticated routes at >= 50% of the bare route's throughput, p99 < 20 ms.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import express from 'express';
import { runAdminSql } from '../src/db/client.ts';
import { buildBase } from './base.ts';
import { startScript } from './start-script.ts';
import type { Window } from './profile-stages.ts';
import { writingClient } from '../test/helpers/db.ts';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const DURATION = Number(process.env.BENCH_DURATION ?? 6);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const SERVICES = 10_000;
const READY = 'BENCH_READY ';
/** Comma-separated subset of bare,auth,list,304,page (e.g. to profile one route); default all. */
const ONLY = new Set((process.env.BENCH_ONLY ?? 'bare,auth,list,304,page').split(',').map((s) => s.trim()));
/** Extra diagnostic rows: auth-check without the service count. */
const DIAG = process.env.BENCH_DIAG === '1';

interface Ready {
  url: string;
  key?: string;
  plainKey?: string;
}

// ------------------------------------------------------------------ server processes

/** Tells the bench the server is up, over the IPC channel (stdout is the server's log). */
function announce(ready: Ready): void {
  process.send!(READY + JSON.stringify(ready));
}

/**
 * (a) The ceiling: Express 5, one JSON route of about the size of an auth-check answer, on
 * Express's own server (app.listen), as the issue defines it. With `onApiServer`, the same route
 * on the API's server (src/main/server.ts listen(), compiled), whose requests and responses are
 * born with Express's prototypes: the ceiling for the API's own server, shown beside it.
 */
async function serveBare(onApiServer: boolean): Promise<void> {
  const app = express();
  const data = { key_id: 'key_0123456789ab', key_name: 'Bench key', mode: 'live', scopes: ['admin:full'], broker_id: 'brk_0123456789ab', broker_name: 'Bench', service_count: SERVICES };
  app.get('/bare', (_req, res) => {
    res.json({ success: true, data });
  });
  if (onApiServer) {
    const { listen } = (await import(pathToFileURL(path.join(ROOT, 'dist', 'src', 'main', 'server.js')).href)) as typeof import('../src/main/server.ts');
    const listening = await listen(app, { port: 0, host: '127.0.0.1', tlsCertFile: undefined, tlsKeyFile: undefined });
    announce({ url: listening.url });
    process.on('SIGTERM', () => void listening.close(1000).then(() => process.exit(0)));
    return;
  }
  const server = app.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    announce({ url: `http://127.0.0.1:${port}` });
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

/** (b, c) The API as `npm start` runs it, with one broker, a live key and 10,000 services. */
async function serveApi(): Promise<void> {
  // The compiled server, as `npm start` runs it (main() built it first), not the TypeScript sources.
  // BENCH_SERVE_ROOT: another checkout's build, for an A/B against an earlier commit (BENCH_BASE).
  const root = process.env.BENCH_SERVE_ROOT ?? ROOT;
  const dist = (module: string) => pathToFileURL(path.join(root, 'dist', 'src', `${module}.js`)).href;
  const { startRuntime } = (await import(dist('main/runtime'))) as typeof import('../src/main/runtime.ts');
  const { generateApiKey } = (await import(dist('auth/keys'))) as typeof import('../src/auth/keys.ts');
  const { openCredentials } = (await import(dist('db/credentials'))) as typeof import('../src/db/credentials.ts');
  const runtime = await startRuntime('all');
  const prisma = runtime.database.prisma;
  const brokerId = `brk_${randomBytes(6).toString('hex')}`;
  await prisma.broker.create({ data: { id: brokerId, slug: `bench-${brokerId}`, name: 'Bench broker', email: 'bench@example.com', approval: 'automatic' } });
  const key = generateApiKey('live');
  await prisma.apiKey.create({
    data: {
      id: `key_${randomBytes(6).toString('hex')}`,
      brokerId,
      name: 'Bench key',
      mode: 'live',
      keyHash: key.hash,
      prefix: key.prefix,
      last4: key.last4,
      scopes: ['admin:full'],
      ipRestricted: false,
      ipWhitelist: [],
      rateLimit: 1_000_000_000,
      active: true,
    },
  });
  const plans = await prisma.plan.findMany({ orderBy: { tier: 'asc' } });
  const passwordEnc = (await openCredentials({ envKey: runtime.config.credentialsKey, dataDir: runtime.config.dataDir })).encrypt('Bench-Passw0rd-123');
  const started = Date.now();
  // One INSERT … SELECT over generate_series, not createMany: 10,000 rows through Prisma's
  // createMany left ~80 MB of heap live in this process (RSS 170 -> 315 MB after a full GC), so
  // the measured server's memory would have been the seeding's. Same rows as before: plans and
  // statuses in turn, one minute apart from 2024-01-01.
  await prisma.$executeRaw`
    INSERT INTO "services" ("service_number", "broker_id", "plan_id", "status", "hostname", "customer_email",
                            "customer_name", "billing_cycle", "username", "password_enc", "created_at", "updated_at")
    SELECT 100000000 + i, ${brokerId}, (${plans.map((p) => p.id)}::int[])[1 + i % ${plans.length}],
           (ARRAY['active', 'active', 'active', 'suspended', 'pending', 'cancelled'])[1 + i % 6]::"service_status",
           'vps' || i || '.bench.example', 'customer' || i || '@bench.example', 'Customer ' || i,
           'monthly'::"billing_cycle", 'root', ${passwordEnc},
           TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '1 minute', TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '1 minute'
      FROM generate_series(0, ${SERVICES - 1}) AS i`;
  // What autovacuum does on PostgreSQL a little after a bulk import (PGlite has no autovacuum):
  // fresh statistics and a visibility map, so runs do not depend on when it happened to run.
  await writingClient(prisma).$executeRawUnsafe('VACUUM ANALYZE services');
  console.error(`bench: ${SERVICES} services inserted and vacuumed in ${Date.now() - started} ms (${runtime.database.kind})`);
  // A second key without services:read: its auth-check skips the service count (BENCH_DIAG=1).
  const plain = generateApiKey('live');
  await prisma.apiKey.create({
    data: {
      id: `key_${randomBytes(6).toString('hex')}`,
      brokerId,
      name: 'Bench key without services:read',
      mode: 'live',
      keyHash: plain.hash,
      prefix: plain.prefix,
      last4: plain.last4,
      scopes: ['reports:generate'],
      ipRestricted: false,
      ipWhitelist: [],
      rateLimit: 1_000_000_000,
      active: true,
    },
  });
  announce({ url: runtime.url!, key: key.key, plainKey: plain.key });
  let stopping = false;
  process.on('SIGTERM', () => {
    if (stopping) return;
    stopping = true;
    void runtime.shutdown('bench done').finally(() => process.exit(0));
  });
}

// ------------------------------------------------------------------ orchestration

const words = (text: string | undefined): string[] => text?.split(/\s+/).filter((w) => w !== '') ?? [];

/** The node flags of `npm start` (package.json), so the API is measured with production's heap settings. */
function startFlags(): string[] {
  return [...startScript('start').flags, ...words(process.env.BENCH_NODE_FLAGS)];
}

/** The servers' log files (var/bench-*.log), removed at the end unless BENCH_KEEP_LOGS=1. */
const logFiles: string[] = [];

function startServer(mode: 'bare' | 'bare-listen' | 'api', env: NodeJS.ProcessEnv, extraFlags: string[] = []): Promise<{ child: ChildProcess; ready: Ready }> {
  const flags = [...(mode === 'api' ? startFlags() : []), ...extraFlags, '--import', 'tsx'];
  const profile = process.env.BENCH_PROFILE;
  if ((profile === '1' && mode === 'api') || profile === mode || profile === 'both') {
    flags.push('--cpu-prof', `--cpu-prof-dir=${path.join(ROOT, 'var', 'bench-profile')}`);
  }
  // The server's log goes to a file, as production's goes to its collector: read through a pipe
  // by this process, which is also the load generator, each line would cost the measurement.
  mkdirSync(path.join(ROOT, 'var'), { recursive: true });
  const logFile = path.join(ROOT, 'var', `bench-${mode}-${process.pid}-${logFiles.length + 1}.log`);
  logFiles.push(logFile);
  const log = openSync(logFile, 'w');
  // `npm start`'s environment settings (allocator tuning), unless the caller's set them, for the
  // bare routes as well: the ratio compares the API with Express on equal terms.
  const childEnv = { ...startScript('start').env, ...env };
  const child = spawn(process.execPath, [...flags, SELF, `--serve-${mode}`], { cwd: ROOT, env: childEnv, stdio: ['ignore', log, 'inherit', 'ipc'] });
  closeSync(log);
  return new Promise((resolve, reject) => {
    let ready = false;
    child.on('message', (message) => {
      if (typeof message === 'string' && message.startsWith(READY)) {
        ready = true;
        resolve({ child, ready: JSON.parse(message.slice(READY.length)) as Ready });
      }
    });
    child.once('exit', (code) => {
      if (ready) return;
      process.stderr.write(readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n'));
      reject(new Error(`${mode} server exited (${code}) before it was ready; its log: ${path.relative(ROOT, logFile)}`));
    });
  });
}

function stopServer(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

interface Figures {
  name: string;
  /** A ceiling row: the bare route on Express's server, or on the API's. */
  ceiling?: 'bare' | 'bare-listen';
  path: string;
  rps: number;
  /** CPU time (user + system) of the server process per request answered, in µs. */
  cpuUs: number;
  /**
   * The CPU a request of the API's child processes (PGlite's database process), in µs: the API
   * waits for it, and on a 2-core host it competes with the API for a core.
   */
  dbCpuUs: number;
  /**
   * The load generator's (this process's) CPU a request, in µs. On a 2-core host a client near a
   * whole core caps req/s whatever the server does: then CPU a request is the server's figure.
   */
  clientCpuUs: number;
  /** Bytes a response (status line, headers and body) as autocannon read them. */
  bytesPerAnswer: number;
  /** The server process's resident memory when the route's run ended, and its peak so far (MB). */
  rssMb: number;
  peakRssMb: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** Of the non-2xx answers, the 3xx ones (the 304 route's are all 304s). */
  redirects: number;
  errors: number;
}

/**
 * The server process's CPU time so far (user + system), in µs, from /proc (Linux). Throughput
 * on a shared host moves with the host's load; CPU time per request moves much less, so it is
 * what an A/B of a code change compares.
 */
function cpuTimeUs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    return (ticks * 1e6) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** The child processes of `pid` (the API's embedded database runs in one), from /proc (Linux). */
function childrenOf(pid: number | undefined): number[] {
  if (pid === undefined) return [];
  const found = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' });
  return found.stdout.split('\n').filter(Boolean).map(Number);
}

/** The CPU time of a process's children so far, in µs (`cpuTimeUs` of each). */
function childrenCpuTimeUs(children: number[]): number {
  return children.reduce((sum, child) => sum + cpuTimeUs(child), 0);
}

/** VmRSS and VmHWM (the peak) of a process, in MB, from /proc (Linux). */
function memoryMb(pid: number | undefined): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return { rss: Number.NaN, peak: Number.NaN };
  }
}

/** CLOCK_MONOTONIC in µs: the clock of V8's CPU profiles, in every process of the host. */
const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** Each timed run's span, for bench/profile-stages.ts (written beside the profiles). */
const windows: Window[] = [];

function writeWindows(): void {
  if (!process.env.BENCH_PROFILE || windows.length === 0) return;
  const dir = path.join(ROOT, 'var', 'bench-profile');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `windows-${process.pid}.json`), JSON.stringify(windows));
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

async function measure(
  name: string,
  url: string,
  headers: Record<string, string>,
  pid: number | undefined,
  ceiling?: Figures['ceiling'],
): Promise<Figures> {
  const run = (duration: number) => autocannon({ url, connections: CONNECTIONS, duration, headers });
  if (WARMUP > 0) await run(WARMUP);
  const children = childrenOf(pid);
  const cpuBefore = cpuTimeUs(pid);
  const dbBefore = childrenCpuTimeUs(children);
  const clientBefore = process.cpuUsage();
  const startUs = monotonicUs();
  const r = await run(DURATION);
  const endUs = monotonicUs();
  const answered = Math.max(1, r.requests.total);
  const cpuUs = (cpuTimeUs(pid) - cpuBefore) / answered;
  if (pid !== undefined) windows.push({ pid, route: name, startUs, endUs, requests: answered, cpuUs });
  const dbCpuUs = (childrenCpuTimeUs(children) - dbBefore) / answered;
  const client = process.cpuUsage(clientBefore);
  const clientCpuUs = (client.user + client.system) / answered;
  const memory = memoryMb(pid);
  return {
    name,
    ceiling,
    path: new URL(url).pathname + new URL(url).search,
    rps: r.requests.average,
    cpuUs,
    dbCpuUs,
    clientCpuUs,
    bytesPerAnswer: r.throughput.total / answered,
    rssMb: memory.rss,
    peakRssMb: memory.peak,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    redirects: r['3xx'],
    errors: r.errors + r.timeouts,
  };
}

/** The headers of a conditional read of `url`: the ETag of its current answer in If-None-Match (none: no ETag). */
async function conditional(url: string, headers: Record<string, string>): Promise<Record<string, string>> {
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  const etag = res.headers.get('etag');
  return etag ? { ...headers, 'If-None-Match': etag } : headers;
}

async function createBenchDatabase(serverUrl: string, suffix = ''): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `capi_bench_${process.pid}${suffix}`;
  const admin = (sql: string) => runAdminSql(serverUrl, sql);
  await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

/**
 * Each side's CPU while no request comes (timers, pollers, heartbeats, in the API process and its
 * database), over BENCH_IDLE seconds (5): a per-request figure of a timed run includes it.
 */
async function idleCost(sides: Array<{ name: string; child: ChildProcess }>): Promise<void> {
  const seconds = Number(process.env.BENCH_IDLE ?? 5);
  if (!(seconds > 0)) return;
  const before = sides.map((s) => ({ api: cpuTimeUs(s.child.pid), db: childrenCpuTimeUs(childrenOf(s.child.pid)) }));
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  sides.forEach((s, i) => {
    const api = (cpuTimeUs(s.child.pid) - before[i]!.api) / 1000 / seconds;
    const db = (childrenCpuTimeUs(childrenOf(s.child.pid)) - before[i]!.db) / 1000 / seconds;
    console.error(`bench: idle ${s.name}: API ${api.toFixed(1)} ms CPU/s, database ${db.toFixed(1)} ms CPU/s (${seconds} s, no requests)`);
  });
}

/**
 * BENCH_BASE=<rev>: the API of this checkout (B) against the API of commit <rev> (A), both up at
 * once and measured in alternating rounds (A B B A A B …), so a change in the host's load falls
 * on both alike. Prints each round and the medians of throughput and CPU per request.
 */
async function abMain(baseRev: string, env: NodeJS.ProcessEnv, serverUrl: string | undefined): Promise<void> {
  const baseDir = buildBase(ROOT, baseRev);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
  const sides = [
    { name: `A ${baseRev}`, root: baseDir, flags: [] as string[] },
    { name: 'B this checkout', root: ROOT, flags: words(process.env.BENCH_B_NODE_FLAGS) },
  ];
  const started: Array<{ name: string; child: ChildProcess; ready: Ready; drop?: () => Promise<void>; dataDir: string }> = [];
  try {
    for (const side of sides) {
      const db = serverUrl ? await createBenchDatabase(serverUrl, started.length === 0 ? 'a' : 'b') : undefined;
      const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-'));
      const api = await startServer('api', { ...env, DATA_DIR: dataDir, DATABASE_URL: db?.url ?? '', BENCH_SERVE_ROOT: side.root }, side.flags);
      started.push({ name: side.name, child: api.child, ready: api.ready, drop: db?.drop, dataDir });
    }
    const routes = [
      { name: 'auth-check', path: '/api/v1/auth-check', only: 'auth' },
      { name: `services?limit=25`, path: '/api/v1/services?limit=25', only: 'list' },
      // Side A before conditional reads sends no ETag: its row is then that build's 200 again.
      { name: `services?limit=25 If-None-Match`, path: '/api/v1/services?limit=25', only: '304', conditional: true },
      { name: `services?limit=100`, path: '/api/v1/services?limit=100', only: 'page' },
      { name: `services?limit=100 If-None-Match`, path: '/api/v1/services?limit=100', only: 'page', conditional: true },
    ].filter((r) => ONLY.has(r.only));
    await idleCost(started);
    const figures = new Map<string, Figures[]>();
    for (let round = 0; round < rounds; round++) {
      // A B, then B A: each side goes first as often as the other.
      const order = round % 2 === 0 ? started : [...started].reverse();
      for (const route of routes) {
        for (const side of order) {
          const auth = { Authorization: `Bearer ${side.ready.key}` };
          const headers = route.conditional ? await conditional(side.ready.url + route.path, auth) : auth;
          const f = await measure(`${route.name} ${side.name}`, side.ready.url + route.path, headers, side.child.pid);
          console.error(`bench: round ${round + 1} ${f.name}: ${Math.round(f.rps)} req/s, p99 ${f.p99} ms, ${Math.round(f.cpuUs)} µs CPU/req (database ${Math.round(f.dbCpuUs)}, client ${Math.round(f.clientCpuUs)}), ${Math.round(f.bytesPerAnswer)} B/answer, RSS ${Math.round(f.rssMb)} MB`);
          figures.set(f.name, [...(figures.get(f.name) ?? []), f]);
        }
      }
    }
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      const mid = Math.floor(sorted.length / 2);
      return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    };
    const rows = [];
    for (const route of routes) {
      const [a, b] = started.map((side) => figures.get(`${route.name} ${side.name}`)!);
      const medians = (fs: Figures[]) => ({
        rps: median(fs.map((f) => f.rps)),
        cpu: median(fs.map((f) => f.cpuUs)),
        client: median(fs.map((f) => f.clientCpuUs)),
        db: median(fs.map((f) => f.dbCpuUs)),
        p99: median(fs.map((f) => f.p99)),
      });
      const [ma, mb] = [medians(a!), medians(b!)];
      // Each round measures A and B back to back, so the host's drift over a sitting (seen here: both
      // sides' req/s halving from the first round to the sixth) cancels in a round's own B/A.
      const paired = (of: (f: Figures) => number) => median(a!.map((fa, i) => of(b![i]!) / of(fa)));
      rows.push({
        route: route.name,
        'A req/s': Math.round(ma.rps),
        'B req/s': Math.round(mb.rps),
        'B/A req/s': (mb.rps / ma.rps).toFixed(3),
        'A µs CPU/req': Math.round(ma.cpu),
        'B µs CPU/req': Math.round(mb.cpu),
        'B/A CPU': (mb.cpu / ma.cpu).toFixed(3),
        'paired B/A req/s': paired((f) => f.rps).toFixed(3),
        'paired B/A CPU': paired((f) => f.cpuUs).toFixed(3),
        'A db µs': Math.round(ma.db),
        'B db µs': Math.round(mb.db),
        'A client µs': Math.round(ma.client),
        'B client µs': Math.round(mb.client),
        'A bytes': Math.round(a![0]!.bytesPerAnswer),
        'B bytes': Math.round(b![0]!.bytesPerAnswer),
        'A p99': ma.p99,
        'B p99': mb.p99,
        'A peak RSS MB': Math.round(Math.max(...a!.map((f) => f.peakRssMb))),
        'B peak RSS MB': Math.round(Math.max(...b!.map((f) => f.peakRssMb))),
      });
    }
    console.log(`\nA/B, medians of ${rounds} alternating rounds (${serverUrl ? 'PostgreSQL' : 'PGlite'}, ${CONNECTIONS} connections, ${DURATION} s each): A = ${baseRev}, B = this checkout`);
    console.table(rows);
    if (process.env.BENCH_JSON) console.log(JSON.stringify({ base: baseRev, rounds, ab: rows }));
  } finally {
    for (const side of started) {
      await stopServer(side.child);
      await side.drop?.().catch((err: unknown) => console.error('bench: could not drop a bench database', err));
      rmSync(side.dataDir, { recursive: true, force: true });
    }
  }
}

async function main(): Promise<void> {
  // What `npm start` does first (prestart): bring dist/ up to date.
  // BENCH_BUILT=1: dist/ is known to be current (bench/profile-stages.ts built it for its first run).
  if (process.env.BENCH_BUILT !== '1') {
    const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }
  const serverUrl = process.env.DATABASE_URL?.trim() || undefined;
  // The API's settings in production, on a free loopback port.
  const serverEnv: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'production',
    VALIDATE_RESPONSES: 'false',
    // Production's default: one line per request, at a cost (bench/README.md).
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    PORT: '0',
    HOST: '127.0.0.1',
  };
  if (process.env.BENCH_BASE) {
    await abMain(process.env.BENCH_BASE, serverEnv, serverUrl);
    return;
  }
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-'));
  const db = serverUrl ? await createBenchDatabase(serverUrl) : undefined;
  const env: NodeJS.ProcessEnv = { ...serverEnv, DATA_DIR: dataDir, DATABASE_URL: db?.url ?? '' };
  const results: Figures[] = [];
  const children: ChildProcess[] = [];
  try {
    console.error(`bench: ${CONNECTIONS} connections, ${DURATION} s per route (+${WARMUP} s warm-up), database ${db ? 'PostgreSQL' : 'PGlite'}, ${os.cpus().length} CPUs, Node ${process.version}`);
    console.error(`bench: load average before the run ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} (other processes on this machine skew the figures)`);
    // The bare server stays up (idle, it costs nothing) and is measured before and after the API
    // routes: on a shared machine the load changes during a run, and the ceiling is their mean.
    const bare = ONLY.has('bare') ? await startServer('bare', env) : undefined;
    const bareListen = ONLY.has('bare') ? await startServer('bare-listen', env) : undefined;
    for (const b of [bare, bareListen]) if (b) children.push(b.child);
    const ceilings = async (again: string) => {
      if (bare) results.push(await measure(`bare Express 5 JSON route${again}`, `${bare.ready.url}/bare`, {}, bare.child.pid, 'bare'));
      if (bareListen) results.push(await measure(`same, on the API's server${again}`, `${bareListen.ready.url}/bare`, {}, bareListen.child.pid, 'bare-listen'));
    };
    await ceilings('');
    if (ONLY.has('auth') || ONLY.has('list') || ONLY.has('304') || ONLY.has('page') || DIAG) {
      const api = await startServer('api', env);
      children.push(api.child);
      const auth = { Authorization: `Bearer ${api.ready.key}` };
      if (ONLY.has('auth')) results.push(await measure('GET auth-check (live key)', `${api.ready.url}/api/v1/auth-check`, auth, api.child.pid));
      if (DIAG) {
        const plain = { Authorization: `Bearer ${api.ready.plainKey}` };
        results.push(await measure('GET auth-check, no service count', `${api.ready.url}/api/v1/auth-check`, plain, api.child.pid));
      }
      const list = `${api.ready.url}/api/v1/services?limit=25`;
      if (ONLY.has('list')) results.push(await measure(`GET services?limit=25 over ${SERVICES}`, list, auth, api.child.pid));
      if (ONLY.has('304')) results.push(await measure('the same, If-None-Match: its ETag (304)', list, await conditional(list, auth), api.child.pid));
      const page = `${api.ready.url}/api/v1/services?limit=100`;
      if (ONLY.has('page')) {
        results.push(await measure(`GET services?limit=100 over ${SERVICES}`, page, auth, api.child.pid));
        results.push(await measure('the same, If-None-Match: its ETag (304)', page, await conditional(page, auth), api.child.pid));
      }
      await stopServer(api.child);
    }
    await ceilings(' (again)');
    console.error(`bench: load average after the run ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  } finally {
    for (const child of children) await stopServer(child);
    await db?.drop().catch((err: unknown) => console.error('bench: could not drop the bench database', err));
    rmSync(dataDir, { recursive: true, force: true });
  }

  const mean = (rows: Figures[], of: (r: Figures) => number) => (rows.length > 0 ? rows.reduce((sum, r) => sum + of(r), 0) / rows.length : Number.NaN);
  const bares = results.filter((r) => r.ceiling === 'bare');
  const ceiling = mean(bares, (r) => r.rps);
  const bareCpu = mean(bares, (r) => r.cpuUs);
  const listenBareCpu = mean(results.filter((r) => r.ceiling === 'bare-listen'), (r) => r.cpuUs);
  const listenCeiling = mean(results.filter((r) => r.ceiling === 'bare-listen'), (r) => r.rps);
  const share = (rps: number, of: number) => `${((100 * rps) / of).toFixed(0)}%`;
  const rows = results.map((r) => ({
    route: r.name,
    'req/s': Math.round(r.rps),
    'p50 ms': r.p50,
    'p99 ms': r.p99,
    'of bare (mean)': share(r.rps, ceiling),
    "of bare on API's server": share(r.rps, listenCeiling),
    'CPU µs/req': Math.round(r.cpuUs),
    'CPU × bare': (r.cpuUs / bareCpu).toFixed(2),
    // The issue 49 ratio: a route's CPU a request against the bare route's on the same (our) server.
    "CPU × bare on API's server": (r.cpuUs / listenBareCpu).toFixed(2),
    'RSS MB (peak)': `${Math.round(r.rssMb)} (${Math.round(r.peakRssMb)})`,
    'non-2xx': r.non2xx,
    errors: r.errors,
  }));
  console.log(`\nClient API v1 HTTP bench: ${db ? 'PostgreSQL' : 'PGlite'}, ${CONNECTIONS} connections, ${DURATION} s per route`);
  console.table(rows);
  let ok = true;
  for (const r of results.filter((x) => !x.ceiling)) {
    const ratio = r.rps / ceiling;
    // The conditional read's answers are all 304s, which autocannon counts as non-2xx.
    const unexpected = r.name.includes('(304)') ? r.non2xx - r.redirects : r.non2xx;
    const verdict = ratio >= 0.5 && r.p99 < 20 && unexpected === 0 && r.errors === 0;
    ok &&= verdict;
    const onListen = Number.isNaN(listenCeiling) ? '' : ` (${share(r.rps, listenCeiling)} of the bare route on the API's server)`;
    console.log(`${verdict ? 'meets' : 'MISSES'} the goal (>= 50% of bare, p99 < 20 ms, all 2xx or all 304): ${r.name}: ${share(r.rps, ceiling)}${onListen}, p99 ${r.p99} ms${unexpected ? `, ${unexpected} unexpected non-2xx` : ''}`);
  }
  if (process.env.BENCH_JSON) console.log(JSON.stringify({ database: db ? 'postgresql' : 'pglite', connections: CONNECTIONS, duration: DURATION, results }));
  process.exitCode = ok || process.env.BENCH_STRICT !== '1' ? 0 : 1;
}

const role = process.argv[2];
if (role === '--serve-bare') await serveBare(false);
else if (role === '--serve-bare-listen') await serveBare(true);
else if (role === '--serve-api') await serveApi();
else {
  try {
    await main();
  } finally {
    writeWindows();
    if (process.env.BENCH_KEEP_LOGS !== '1') for (const file of logFiles) rmSync(file, { force: true });
  }
}
