/**
 * `npm run bench:hostile-bodies`: what hostile request bodies cost everybody else (issue 21, row 1).
 *
 * One API server as `npm start` runs it (compiled, NODE_ENV=production, LOG_LEVEL info to a file,
 * PGlite unless DATABASE_URL names a PostgreSQL server), with a victim broker (1,000 services) and
 * an attacking broker. In order:
 *
 *   1. each candidate body, 30 times one after the other with a spare key: the server's CPU time
 *      per body, the answer time and code. The costliest body the server reads (any answer but
 *      `invalid_request`) is "the worst accepted body";
 *   2. the victim's `GET /api/v1/services?limit=25` at a fixed rate, alone;
 *   3. the same while two attacking keys each send the worst accepted body at their default rate
 *      limit (120 a minute: one every 500 ms, without waiting for answers);
 *   4. twenty hostile bodies at once, five times (every candidate in turn); the server's RSS
 *      before, at its peak, right after and after 10 s idle.
 *
 * Settings (env): BENCH_DURATION seconds per victim phase (20, at most 55 so the attackers stay
 * within their window), BENCH_VICTIM_RATE requests per second (50), BENCH_BASE=<git rev> to
 * measure that commit's server instead of this checkout's (the "before" of a change).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { runAdminSql } from '../src/db/client.ts';
import { buildBase } from './base.ts';
import { writingClient } from '../test/helpers/db.ts';

const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');
const DURATION = Math.min(55, Number(process.env.BENCH_DURATION ?? 20));
const VICTIM_RATE = Number(process.env.BENCH_VICTIM_RATE ?? 50);
const READY = 'BENCH_READY ';
const SERVICES = 1000;
/** Bodies of each kind in phase 1: CPU time is counted in clock ticks (10 ms), so many. */
const REPEATS = 30;

interface Ready {
  url: string;
  victim: string;
  attackers: [string, string];
  spare: string;
  serviceNumber: number;
}

// ------------------------------------------------------------------ the server process

async function serve(): Promise<void> {
  const root = process.env.BENCH_SERVE_ROOT ?? ROOT;
  const dist = (module: string) => pathToFileURL(path.join(root, 'dist', 'src', `${module}.js`)).href;
  const { startRuntime } = (await import(dist('main/runtime'))) as typeof import('../src/main/runtime.ts');
  const { generateApiKey } = (await import(dist('auth/keys'))) as typeof import('../src/auth/keys.ts');
  const { openCredentials } = (await import(dist('db/credentials'))) as typeof import('../src/db/credentials.ts');
  const runtime = await startRuntime('all');
  const prisma = runtime.database.prisma;
  const broker = async (name: string) => {
    const id = `brk_${randomBytes(6).toString('hex')}`;
    await prisma.broker.create({ data: { id, slug: `bench-${id}`, name, email: 'bench@example.com', approval: 'automatic' } });
    return id;
  };
  const key = async (brokerId: string, rateLimit: number) => {
    const k = generateApiKey('live');
    await prisma.apiKey.create({
      data: {
        id: `key_${randomBytes(6).toString('hex')}`, brokerId, name: 'Bench key', mode: 'live', keyHash: k.hash, prefix: k.prefix,
        last4: k.last4, scopes: ['admin:full'], ipRestricted: false, ipWhitelist: [], rateLimit, active: true,
      },
    });
    return k.key;
  };
  const victimBroker = await broker('Victim broker');
  const attackerBroker = await broker('Attacking broker');
  const plans = await prisma.plan.findMany({ orderBy: { tier: 'asc' } });
  const passwordEnc = (await openCredentials({ envKey: runtime.config.credentialsKey, dataDir: runtime.config.dataDir })).encrypt('Bench-Passw0rd-123');
  for (const [brokerId, first] of [[victimBroker, 100_000_000], [attackerBroker, 200_000_000]] as const) {
    await prisma.$executeRaw`
      INSERT INTO "services" ("service_number", "broker_id", "plan_id", "status", "hostname", "customer_email",
                              "customer_name", "billing_cycle", "username", "password_enc", "created_at", "updated_at")
      SELECT ${first}::int + i, ${brokerId}, (${plans.map((p) => p.id)}::int[])[1 + i % ${plans.length}], 'active'::"service_status",
             'vps' || i || '.bench.example', 'customer' || i || '@bench.example', 'Customer ' || i, 'monthly'::"billing_cycle",
             'root', ${passwordEnc}, TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '1 minute', now()
        FROM generate_series(0, ${SERVICES - 1}) AS i`;
  }
  await writingClient(prisma).$executeRawUnsafe('VACUUM ANALYZE services');
  const ready: Ready = {
    url: runtime.url!,
    victim: await key(victimBroker, 1_000_000_000),
    // The default rate limit (120 a minute), as any key has unless its operator chose another.
    attackers: [await key(attackerBroker, 120), await key(attackerBroker, 120)],
    spare: await key(attackerBroker, 1_000_000_000),
    serviceNumber: 200_000_000,
  };
  process.send!(READY + JSON.stringify(ready));
  process.on('SIGTERM', () => void runtime.shutdown('bench done').finally(() => process.exit(0)));
}

// ------------------------------------------------------------------ bodies

interface Candidate {
  name: string;
  path: (ready: Ready) => string;
  body: Buffer;
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const keys = (n: number, value = '1') => Buffer.from(`{${Array.from({ length: n }, (_, i) => `"k${i}":${value}`).join(',')}}`);
const cancel = (r: Ready) => `/api/v1/services/${r.serviceNumber}/cancel`;

/** The issue's body, and the worst of each kind that the bounds of src/http/json-body.ts let through. */
const CANDIDATES: Candidate[] = [
  { name: "the issue's 741 KB of 70,000 keys, service-create", path: () => '/api/v1/service-create', body: keys(70_000) },
  { name: "the issue's 741 KB of 70,000 keys, auth-check", path: () => '/api/v1/auth-check', body: keys(70_000) },
  { name: '64 keys of 1,000-character text, service-create', path: () => '/api/v1/service-create', body: keys(64, JSON.stringify('x'.repeat(1000))) },
  { name: '1,000 distinct recipients (64 KiB), services report', path: () => '/api/v1/reports/services', body: json({ recipients: Array.from({ length: 1000 }, (_, i) => `recipient-${String(i).padStart(4, '0')}-of-a-list@broker-${i}.example`) }) },
  { name: '985 items nested 16 deep, cancel', path: cancel, body: Buffer.from(`{"reason":${'['.repeat(14)}${Array.from({ length: 985 }, () => '{}').join(',')}${']'.repeat(14)}}`) },
  { name: 'a 64 KiB reason of \\u escapes, cancel', path: cancel, body: Buffer.from(`{"reason":"${'\\u00e9'.repeat(10_900)}"}`) },
];

// ------------------------------------------------------------------ orchestration

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function post(url: string, key: string, body: Buffer): Promise<{ status: number; code: string; ms: number }> {
  const started = process.hrtime.bigint();
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const code = (JSON.parse(text) as { error?: { code: string } }).error?.code ?? 'ok';
        resolve({ status: res.statusCode ?? 0, code, ms: Number(process.hrtime.bigint() - started) / 1e6 });
      });
    });
    req.on('error', (err) => resolve({ status: 0, code: err.message, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
    req.end(body);
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The process's CPU time so far (user + system, all threads), in ms, from /proc (Linux). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

function memoryMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) };
}

async function victimLoad(ready: Ready): Promise<{ p50: number; p99: number; max: number; requests: number; non2xx: number }> {
  const r = await autocannon({
    url: `${ready.url}/api/v1/services?limit=25`,
    connections: 4,
    overallRate: VICTIM_RATE,
    duration: DURATION,
    headers: { Authorization: `Bearer ${ready.victim}` },
  });
  return { p50: r.latency.p50, p99: r.latency.p99, max: r.latency.max, requests: r.requests.total, non2xx: r.non2xx };
}

/** Two keys, each one body every 500 ms (120 a minute), until `until`; the answers' codes and times. */
async function attack(ready: Ready, worst: Candidate, until: number): Promise<Array<{ code: string; ms: number }>> {
  const answers: Array<Promise<{ code: string; ms: number }>> = [];
  const url = ready.url + worst.path(ready);
  for (let t = Date.now(); t < until; t += 500) {
    for (const key of ready.attackers) answers.push(post(url, key, worst.body));
    await sleep(Math.max(0, t + 500 - Date.now()));
  }
  return Promise.all(answers);
}

function startServer(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; ready: Ready; logFile: string }> {
  mkdirSync(path.join(ROOT, 'var'), { recursive: true });
  const logFile = path.join(ROOT, 'var', `bench-hostile-${process.pid}.log`);
  const log = openSync(logFile, 'w');
  const child = spawn(process.execPath, ['--import', 'tsx', SELF, '--serve'], { cwd: ROOT, env, stdio: ['ignore', log, 'inherit', 'ipc'] });
  closeSync(log);
  return new Promise((resolve, reject) => {
    child.on('message', (m) => {
      if (typeof m === 'string' && m.startsWith(READY)) resolve({ child, ready: JSON.parse(m.slice(READY.length)) as Ready, logFile });
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before it was ready; its log: ${logFile}`)));
  });
}

async function run(ready: Ready, pid: number): Promise<void> {
  console.log(`1. each body ${REPEATS} times in a row (spare key): the server's CPU time per body, the median answer time, the answer`);
  let worst: { candidate: Candidate; cpuMs: number } | undefined;
  for (const candidate of CANDIDATES) {
    const answers = [];
    const cpuBefore = cpuMs(pid);
    for (let i = 0; i < REPEATS; i++) answers.push(await post(ready.url + candidate.path(ready), ready.spare, candidate.body));
    const perBody = (cpuMs(pid) - cpuBefore) / REPEATS;
    const code = answers[0]!.code;
    console.log(`   ${candidate.name} (${candidate.body.length} bytes): ${perBody.toFixed(2)} ms CPU, ${median(answers.map((a) => a.ms)).toFixed(2)} ms answer, ${answers[0]!.status} ${code}`);
    if (code !== 'invalid_request' && (!worst || perBody > worst.cpuMs)) worst = { candidate, cpuMs: perBody };
  }
  if (!worst) throw new Error('no candidate body was accepted');
  console.log(`   worst accepted body: ${worst.candidate.name}`);

  const rssBefore = memoryMb(pid);
  const alone = await victimLoad(ready);
  console.log(`2. victim alone, ${VICTIM_RATE} req/s for ${DURATION} s: p50 ${alone.p50} ms, p99 ${alone.p99} ms, max ${alone.max} ms (${alone.requests} requests, ${alone.non2xx} non-2xx)`);
  const [attacked, answers] = await Promise.all([victimLoad(ready), attack(ready, worst.candidate, Date.now() + DURATION * 1000)]);
  const codes = [...new Set(answers.map((a) => a.code))].join(', ');
  console.log(`3. victim while two keys send it at 2 req/s each: p50 ${attacked.p50} ms, p99 ${attacked.p99} ms, max ${attacked.max} ms (${attacked.requests} requests, ${attacked.non2xx} non-2xx)`);
  console.log(`   attackers: ${answers.length} bodies, answers ${codes}, median ${median(answers.map((a) => a.ms)).toFixed(2)} ms`);

  // Twenty at once, as the probe sent its 1 MiB bodies (the spare key has no practical limit).
  for (let round = 0; round < 5; round++) {
    await Promise.all(Array.from({ length: 20 }, (_, i) => {
      const c = CANDIDATES[(round * 20 + i) % CANDIDATES.length]!;
      return post(ready.url + c.path(ready), ready.spare, c.body);
    }));
  }
  const rssAfter = memoryMb(pid);
  await sleep(10_000);
  const rssIdle = memoryMb(pid);
  console.log(`4. server RSS: ${rssBefore.rss} MB before the load, peak ${rssAfter.peak} MB, ${rssAfter.rss} MB right after 100 bodies 20 at a time, ${rssIdle.rss} MB after 10 s idle`);
}

async function main(): Promise<void> {
  const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('npm run build failed');
  const base = process.env.BENCH_BASE;
  const serveRoot = base ? buildBase(ROOT, base) : ROOT;
  const serverUrl = process.env.DATABASE_URL?.trim() || undefined;
  const dbName = `capi_bench_hostile_${process.pid}`;
  let dbUrl = '';
  if (serverUrl) {
    await runAdminSql(serverUrl, `CREATE DATABASE "${dbName}"`);
    const u = new URL(serverUrl);
    u.pathname = `/${dbName}`;
    dbUrl = u.toString();
  }
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-'));
  const env = {
    ...process.env, NODE_ENV: 'production', VALIDATE_RESPONSES: 'false', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, DATABASE_URL: dbUrl, BENCH_SERVE_ROOT: serveRoot,
  };
  console.log(`bench:hostile-bodies: ${base ? `commit ${base}` : 'this checkout'}, ${dbUrl ? 'PostgreSQL' : 'PGlite'}, ${os.cpus().length} CPUs, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, Node ${process.version}`);
  const { child, ready, logFile } = await startServer(env);
  try {
    await run(ready, child.pid!);
  } finally {
    child.removeAllListeners('exit');
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
    agent.destroy();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(logFile, { force: true });
    if (serverUrl) await runAdminSql(serverUrl, `DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  }
}

if (process.argv[2] === '--serve') await serve();
else await main();
