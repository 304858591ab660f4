/**
 * `npm run bench:request-path -- METHOD PATH [JSON body]`: the files of src/ one request passes
 * through. Starts the app in this process (as the tests build it: a database and a Redis of its
 * own, job workers in-process, response validation off as in production) on the API's own server,
 * seeds a broker, an `admin:full` live key, one active Standard VPS and a few January 2025
 * invoices, then sends the one request and prints every src/ file in which any function ran
 * between just before the request and its answer (V8 precise coverage, counted per function).
 *
 * `{n}` or `{service_number}` in PATH stands for the seeded service's number. Examples:
 *   npm run bench:request-path -- POST /api/v1/services/{n}/upgrade '{"plan":"Professional VPS"}'
 *   npm run bench:request-path -- POST /api/v1/reports/invoices \
 *     '{"recipients":["finance@example.com"],"start_date":"2025-01-01","end_date":"2025-01-31"}'
 *
 * The threads the request starts (a report's build thread, the mail thread) are listed apart:
 * the bench runs itself again with NODE_V8_COVERAGE, which has each thread write its coverage as
 * it ends, and counts only threads other than the main one. On a fresh app those threads are
 * started by this request, so all they ran belongs to it. Timers of the app (read cache, API log,
 * job upkeep) that fire during the request would show too.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session } from 'node:inspector/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = pathToFileURL(path.join(ROOT, 'src')).href + '/';

interface FunctionCoverage {
  functionName: string;
  ranges: Array<{ startOffset: number; endOffset: number; count: number }>;
}
interface ScriptCoverage {
  url: string;
  functions: FunctionCoverage[];
}

/** The src/ files of `scripts` in which a function ran, relative to the repository. */
function ranIn(scripts: ScriptCoverage[]): string[] {
  return scripts
    .filter((script) => script.url.startsWith(SRC) && script.functions.some((f) => f.ranges[0]!.count > 0))
    .map((script) => path.relative(ROOT, fileURLToPath(script.url)))
    .sort();
}

const [method, rawPath, body] = process.argv.slice(2);
if (!method || !rawPath) {
  console.error('usage: npm run bench:request-path -- METHOD PATH [JSON body]');
  process.exit(2);
}

if (!process.env.NODE_V8_COVERAGE) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'request-path-'));
  const mainList = path.join(os.tmpdir(), `${path.basename(dir)}-main.json`);
  const run = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, NODE_V8_COVERAGE: dir, REQUEST_PATH_MAIN: mainList },
  });
  // coverage-<pid>-<time>-<threadId>.json; thread 0 is the main thread, measured by its own session.
  const read = (f: string) => ranIn((JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { result: ScriptCoverage[] }).result);
  const threads = readdirSync(dir).filter((f) => !f.endsWith('-0.json')).map(read).filter((files) => files.length > 0);
  const files = [...new Set(threads.flat())].sort();
  console.log(`${files.length} files of src/ ran in the ${threads.length} thread(s) of src/ the request started:`);
  for (const file of files) console.log(`  ${file}`);
  const main = JSON.parse(readFileSync(mainList, 'utf8')) as string[];
  console.log(`${new Set([...main, ...files]).size} files of src/ in all, main thread and threads together.`);
  rmSync(dir, { recursive: true, force: true });
  rmSync(mainList, { force: true });
  process.exit(run.status ?? 1);
}

// Coverage starts before the app's modules load, so every function of src/ keeps its counts.
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

const { createTestApp } = await import('../test/helpers/app.ts');
const { apiKey, broker } = await import('../test/helpers/factories.ts');
const { service } = await import('../test/helpers/service-factories.ts');
const { listen } = await import('../src/main/server.ts');

const t = await createTestApp({ validateResponses: false });
const brokerId = (await broker(t.prisma)).id;
const key = (await apiKey(t.prisma, { brokerId, scopes: ['admin:full'] })).key;
const seeded = await service(t, { brokerId });
await t.prisma.invoice.createMany({
  data: ['paid', 'pending', 'paid', 'overdue'].map((status, i) => ({
    brokerId,
    number: `INV-BENCH-${i + 1}`,
    serviceNumber: seeded.serviceNumber,
    amount: '10.00',
    currency: 'EUR',
    status: status as 'paid' | 'pending' | 'overdue',
    date: new Date(`2025-01-${String(10 + i).padStart(2, '0')}T00:00:00Z`),
  })),
});
const server = await listen(t.app, { port: 0, host: '127.0.0.1', tlsCertFile: undefined, tlsKeyFile: undefined });
const url = server.url + rawPath.replace(/\{(n|service_number)\}/g, String(seeded.serviceNumber));

// Taking the coverage resets its counts: what the next take shows ran after this point.
await session.post('Profiler.takePreciseCoverage');
const res = await fetch(url, {
  method,
  headers: { Authorization: `Bearer ${key}`, ...(body !== undefined && { 'Content-Type': 'application/json' }) },
  ...(body !== undefined && { body }),
});
const answer = await res.text();
const { result } = (await session.post('Profiler.takePreciseCoverage')) as { result: ScriptCoverage[] };
await session.post('Profiler.stopPreciseCoverage');

const files = ranIn(result);
writeFileSync(process.env.REQUEST_PATH_MAIN!, JSON.stringify(files));

console.error(`${method} ${rawPath} → ${res.status} ${answer.slice(0, 300)}`);
console.log(`${files.length} files of src/ ran on the main thread during ${method} ${rawPath}:`);
for (const file of files) console.log(`  ${file}`);

await server.close(1000);
await t.close();
process.exit(0);
