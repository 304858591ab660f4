/**
 * `npm run bench:stages`: where an API request's CPU goes, by stage (issue 49 item 1). Runs
 * `npm run bench` with a CPU profile of the API (BENCH_PROFILE=1, routes of BENCH_ONLY, default
 * bare,auth,list,304) BENCH_STAGE_RUNS times (3), then folds each route's part of each profile into
 * the stages of bench/README.md ("Where a request's time goes") and prints their shares and µs a
 * request. `npm run bench:stages -- FILE.cpuprofile …` folds profiles already made (their windows
 * files beside them) without running the bench.
 *
 * A sample goes to the stage of the innermost frame that names one (a file of src/ or a library),
 * so time in Node's crypto under `entityTag` is the ETag's and pino under the request log is
 * logging's. Database and Redis clients are named only when no frame of src/ above them is.
 * Only the samples of a route's timed run count: bench/http.ts writes each run's start and end
 * (the same monotonic clock as V8's profile) to `windows-<pid>.json` in the profile directory.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PROFILE_DIR = path.join(ROOT, 'var', 'bench-profile');

export const STAGES = [
  'HTTP parsing and Express',
  'request id and input hygiene',
  'key look-up and gate',
  'rate limit',
  'validation',
  'handler and store',
  'serialisation and ETag',
  'request-log record',
  'redaction',
  'metrics',
  'logging',
  'garbage collection',
  'V8 and native, unattributed',
  'other',
] as const;
export type Stage = (typeof STAGES)[number];

interface CallFrame {
  functionName: string;
  url: string;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}
/** One timed run of a route, as bench/http.ts's `measure` writes it. */
export interface Window {
  pid: number;
  route: string;
  startUs: number;
  endUs: number;
  requests: number;
  cpuUs: number;
}

/** src/ files by stage (dist/src/… in the bench, which runs the build), without the extension. */
const SRC_STAGES: Array<[RegExp, Stage]> = [
  [/^ops\/redact$/, 'redaction'],
  [/^ops\/metrics$/, 'metrics'],
  [/^(logger|http\/request-log)$/, 'logging'],
  [/^auth\/api-log$/, 'request-log record'],
  [/^auth\/rate-limit$/, 'rate limit'],
  [/^auth\/(gate|key-store|keys|console-sessions|ip-whitelist|auth-failures)$/, 'key look-up and gate'],
  [/^http\/(request-id|input-hygiene)$/, 'request id and input hygiene'],
  [/^http\/validation$/, 'validation'],
  [/^http\/conditional$/, 'serialisation and ETag'],
  [/^(app|routes|main\/server|http\/(contract|security-headers|error-middleware|errors))$/, 'HTTP parsing and Express'],
  [/^(services|requests|reports|events|webhooks|request-logs|idempotency|shared|db)\//, 'handler and store'],
  [/^auth\/(adapter|use-cases)$/, 'handler and store'],
  [/^http\/(operation|idempotency|params|scenario|json-body)$/, 'handler and store'],
];

/** Functions of src/http/fast-path.ts: writing an answer, or the chain that carries the request. */
const FAST_PATH_ANSWER = new Set(['sendAnswer', 'serialized', 'answerOf', 'envelope']);

/** Libraries by stage (a package name in node_modules). */
const PACKAGE_STAGES: Array<[RegExp, Stage]> = [
  [/^(express|router|finalhandler|on-finished|send|proxy-addr|forwarded|parseurl|content-type|accepts|type-is|statuses|encodeurl|etag|fresh|range-parser|cookie|vary|qs|helmet)$/, 'HTTP parsing and Express'],
  [/^(express-openapi-validator|ajv|ajv-formats|ajv-draft-04|path-to-regexp|media-typer)$/, 'validation'],
  [/^(pino|sonic-boom|fast-redact|pino-std-serializers|@pinojs\/.*|quick-format-unescaped|thread-stream|atomic-sleep|on-exit-leak-free|safe-stable-stringify)$/, 'logging'],
  [/^(prom-client|tdigest|bintrees)$/, 'metrics'],
];
/** Clients named only when no src/ frame is above them (their replies arrive on a stack of their own). */
const CLIENT_PACKAGES = /^(@prisma\/.*|pg|pg-.*|@electric-sql\/.*|ioredis|redis-parser|denque|bullmq)$/;

/** node: modules that are HTTP's own work (parsing, writing, the socket). */
const NODE_HTTP = /^node:(_http_\w+|http|net|stream|internal\/(streams|http|stream_base_commons|js_stream_socket)|internal\/timers)/;

function packageOf(url: string): string | undefined {
  const at = url.lastIndexOf('/node_modules/');
  if (at === -1) return undefined;
  const rest = url.slice(at + '/node_modules/'.length).split('/');
  return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
}

/** The stage a frame names, `client` for a database or Redis client, or undefined. */
export function stageOfFrame(frame: CallFrame): Stage | 'client' | undefined {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(program)') return 'V8 and native, unattributed';
  const src = /\/src\/(.+)\.[cm]?[jt]s$/.exec(url);
  if (src && !url.includes('/node_modules/')) {
    const file = src[1]!;
    if (file === 'http/fast-path') return FAST_PATH_ANSWER.has(functionName) ? 'serialisation and ETag' : 'HTTP parsing and Express';
    if (file === 'http/known-headers') return undefined; // its caller's
    for (const [pattern, stage] of SRC_STAGES) if (pattern.test(file)) return stage;
    return undefined;
  }
  const pkg = packageOf(url);
  if (pkg !== undefined) {
    if (CLIENT_PACKAGES.test(pkg)) return 'client';
    for (const [pattern, stage] of PACKAGE_STAGES) if (pattern.test(pkg)) return stage;
    return undefined;
  }
  if (NODE_HTTP.test(url)) return 'HTTP parsing and Express';
  return undefined;
}

/** Samples a stage, of the samples in [startUs, endUs] (idle ones left out). */
export function foldProfile(profile: CpuProfile, startUs = -Infinity, endUs = Infinity): Map<Stage, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOfNode = new Map<number, Stage | null>();
  const stageOf = (id: number): Stage | null => {
    const known = stageOfNode.get(id);
    if (known !== undefined) return known;
    let client: Stage | undefined;
    let socket = false;
    let found: Stage | null = null;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame;
      const stage = stageOfFrame(frame);
      if (stage === undefined) continue;
      if (stage === 'client') {
        // Redis is the gate's limiter's unless a src/ frame above says otherwise; a database client the store's.
        client ??= /ioredis|redis-parser|denque/.test(frame.url) ? 'rate limit' : 'handler and store';
      } else if (stage === 'HTTP parsing and Express' && frame.url.startsWith('node:')) {
        // Node's own I/O: the answer's socket, unless a database or Redis client is above it.
        socket = true;
      } else {
        found = client !== undefined || !socket ? stage : 'HTTP parsing and Express';
        break;
      }
    }
    found ??= client ?? (socket ? 'HTTP parsing and Express' : null);
    stageOfNode.set(id, found);
    return found;
  };
  const counts = new Map<Stage, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (t < startUs || t > endUs) continue;
    const node = byId.get(profile.samples[i]!)!;
    if (node.callFrame.functionName === '(idle)') continue;
    const stage = stageOf(node.id) ?? 'other';
    counts.set(stage, (counts.get(stage) ?? 0) + 1);
  }
  return counts;
}

/** The process id in a `--cpu-prof` file's name (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile). */
const pidOf = (file: string): number => Number(path.basename(file).split('.')[3]);
/** Whether a profile is a process's main thread's (thread 0): worker threads and children are left out. */
const mainThread = (file: string): boolean => path.basename(file).split('.')[4] === '0';

interface RouteFold {
  route: string;
  samples: Map<Stage, number>;
  /** The API's CPU a request of each run, in µs. */
  cpuUs: number[];
  /** Each run's stages by share, largest first (to see whether the order holds). */
  orders: Stage[][];
}

function fold(files: string[], windows: Window[]): RouteFold[] {
  const routes = new Map<string, RouteFold>();
  for (const file of files.filter(mainThread)) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    for (const w of windows.filter((x) => x.pid === pidOf(file))) {
      const samples = foldProfile(profile, w.startUs, w.endUs);
      const r: RouteFold = routes.get(w.route) ?? { route: w.route, samples: new Map(), cpuUs: [], orders: [] };
      for (const [stage, n] of samples) r.samples.set(stage, (r.samples.get(stage) ?? 0) + n);
      r.cpuUs.push(w.cpuUs);
      r.orders.push([...samples].sort((a, b) => b[1] - a[1]).map(([s]) => s));
      routes.set(w.route, r);
    }
  }
  return [...routes.values()];
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function print(routes: RouteFold[], bare: Window[]): void {
  // The least of its runs: a bench's first run of the bare route comes before the JIT has warmed it.
  const bareOf = (name: string) => Math.min(...bare.filter((w) => w.route.startsWith(name)).map((w) => w.cpuUs));
  const bareExpress = bareOf('bare Express');
  const bareOurs = bareOf('same, on the API');
  console.log(`bare route, API CPU a request (least of its runs): ${bareExpress.toFixed(0)} µs on app.listen, ${bareOurs.toFixed(0)} µs on the API's server`);
  const table: Record<string, Record<string, string>> = {};
  for (const stage of STAGES) table[stage] = {};
  table.total = {};
  for (const r of routes) {
    const all = [...r.samples.values()].reduce((a, b) => a + b, 0);
    const cpu = median(r.cpuUs);
    for (const stage of STAGES) {
      const n = r.samples.get(stage) ?? 0;
      table[stage]![r.route] = `${((100 * n) / all).toFixed(1)}% ${((cpu * n) / all).toFixed(1)} µs`;
    }
    table.total![r.route] = `${all} samples, ${cpu.toFixed(0)} µs (${(cpu / bareOurs).toFixed(2)}× bare on our server)`;
  }
  console.log(`\nAPI CPU a request by stage (share of the main thread's non-idle samples; µs = share × the process's CPU a request, median of ${routes[0]?.cpuUs.length ?? 0} run(s))`);
  console.table(table);
  for (const r of routes) {
    console.log(`order of the top five stages, run by run, ${r.route}:`);
    for (const order of r.orders) console.log(`  ${order.slice(0, 5).join(' > ')}`);
  }
}

function newest(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir).filter((f) => pattern.test(f)).map((f) => path.join(dir, f));
}

async function main(): Promise<void> {
  let files = process.argv.slice(2);
  if (files.length === 0) {
    rmSync(PROFILE_DIR, { recursive: true, force: true });
    const runs = Number(process.env.BENCH_STAGE_RUNS ?? 3);
    for (let i = 0; i < runs; i++) {
      const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'http.ts')], {
        cwd: ROOT,
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { BENCH_ONLY: 'bare,auth,list,304', BENCH_DURATION: '3', ...process.env, BENCH_PROFILE: '1', BENCH_BASE: '', ...(i > 0 && { BENCH_BUILT: '1' }) },
      });
      if (run.status !== 0) throw new Error(`npm run bench exited ${run.status}`);
    }
    files = newest(PROFILE_DIR, /\.cpuprofile$/);
  }
  const dirs = [...new Set(files.map((f) => path.dirname(path.resolve(f))))];
  const windows = dirs.flatMap((d) => newest(d, /^windows-\d+\.json$/).flatMap((f) => JSON.parse(readFileSync(f, 'utf8')) as Window[]));
  const pids = new Set(files.map(pidOf));
  print(fold(files, windows), windows.filter((w) => !pids.has(w.pid)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
