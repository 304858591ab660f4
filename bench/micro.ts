/**
 * `npm run bench:micro`: the request path's small functions one by one, in ns a call (issue 49
 * item 3), as ratios that hold on a loaded host: every case runs in the same process, in
 * alternating rounds, and each is shown beside the same work done the way it was done at
 * BENCH_MICRO_BASE (default 9febe78, before issue 49), whose src/ops/redact.ts is loaded from git.
 * Many short rounds (BENCH_MICRO_ROUNDS, 201, of BENCH_MICRO_CALLS, 2,000 calls) and their
 * medians: at a load of 20-40 a long round is cut by other processes, a short one mostly is not.
 */
import { spawnSync } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { entityTag } from '../src/http/conditional.ts';
import { requestIdOf } from '../src/http/request-id.ts';
import * as redact from '../src/ops/redact.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BASE = process.env.BENCH_MICRO_BASE ?? '9febe78';
const ROUNDS = Number(process.env.BENCH_MICRO_ROUNDS ?? 201);
const CALLS = Number(process.env.BENCH_MICRO_CALLS ?? 2_000);

/** The base's redact.ts (it imports nothing), as a module of its own. */
async function baseRedact(): Promise<typeof redact> {
  const source = spawnSync('git', ['show', `${BASE}:src/ops/redact.ts`], { cwd: ROOT, encoding: 'utf8' });
  if (source.status !== 0) throw new Error(`git show ${BASE}:src/ops/redact.ts failed`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-micro-'));
  const file = path.join(dir, 'redact.ts');
  writeFileSync(file, source.stdout);
  try {
    return (await import(pathToFileURL(file).href)) as typeof redact;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const old = await baseRedact();
const tagKey = randomBytes(32);
/** The base's entityTag: an HMAC of every 200's body. */
const oldEntityTag = (body: string | Buffer): string => `"${createHmac('sha256', tagKey).update(body).digest().toString('base64url', 0, 20)}"`;

/** The base's new request id: a UUID without its dashes. */
function oldRequestId(): string {
  const u = randomUUID();
  return `req_${u.slice(0, 8)}${u.slice(9, 13)}${u.slice(14, 18)}${u.slice(19, 23)}${u.slice(24)}`;
}

const authCheckBody = JSON.stringify({
  success: true,
  data: { object: 'auth_check', key_id: 'key_0123456789ab', key_name: 'Bench key', mode: 'live', scopes: ['admin:full'], broker_id: 'brk_0123456789ab', broker_name: 'Bench', service_count: 10000 },
});
const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e';
const known = new Set(['limit', 'cursor', 'status']);
const errorMessage = 'limit must be <= 100';
const userAgent = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';

/** [name, after (this checkout), before (the base's way)] */
const cases: Array<[string, () => unknown, () => unknown]> = [
  ['scrubPath, a services path', () => redact.scrubPath('/api/v1/services/100000123'), () => old.scrubPath('/api/v1/services/100000123')],
  ['scrubUrl, services?limit=25', () => redact.scrubUrl('/api/v1/services?limit=25', known), () => old.scrubUrl('/api/v1/services?limit=25', known)],
  ['scrubUrl, a service by its number', () => redact.scrubUrl('/api/v1/services/100000123', known), () => old.scrubUrl('/api/v1/services/100000123', known)],
  ['scrubSecrets, an error message', () => redact.scrubSecrets(errorMessage), () => old.scrubSecrets(errorMessage)],
  ['scrubSecrets, a browser User-Agent', () => redact.scrubSecrets(userAgent), () => old.scrubSecrets(userAgent)],
  ['holdsKey, a UUID', () => redact.holdsKey(uuid), () => old.holdsKey(uuid)],
  ['requestIdOf, no id sent', () => requestIdOf(undefined), oldRequestId],
  ['entityTag, an auth-check body', () => entityTag(authCheckBody), () => oldEntityTag(authCheckBody)],
];

let sink: unknown;
function time(fn: () => unknown): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) sink = fn();
  return Number(process.hrtime.bigint() - start) / CALLS;
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const figures = cases.map(() => ({ after: [] as number[], before: [] as number[] }));
for (let round = 0; round < ROUNDS; round++) {
  cases.forEach(([, after, before], i) => {
    // Each goes first in every other round.
    if (round % 2 === 0) {
      figures[i]!.after.push(time(after));
      figures[i]!.before.push(time(before));
    } else {
      figures[i]!.before.push(time(before));
      figures[i]!.after.push(time(after));
    }
  });
}
void sink;
console.log(`request path micro-benchmarks: ${ROUNDS} rounds of ${CALLS} calls, medians, ns a call; before = ${BASE}'s way, load ${os.loadavg()[0]!.toFixed(1)}`);
console.table(
  cases.map(([name], i) => {
    const before = median(figures[i]!.before);
    const after = median(figures[i]!.after);
    return { case: name, 'before ns': before.toFixed(0), 'after ns': after.toFixed(0), 'after/before': (after / before).toFixed(3) };
  }),
);
