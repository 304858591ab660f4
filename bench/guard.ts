/**
 * `npm run bench:guard`: a short A/B of this checkout against the last release (issue 49 item 4),
 * run by hand before a change to the request path lands, never in CI (a timing must not decide a
 * landing on a shared machine). Three alternating rounds of auth-check and the services page
 * (`npm run bench` with BENCH_BASE); exits 1 if either route's throughput, the median of each
 * round's B/A, is more than 10 % below the release's. Noise on this host is about ±10 %, so run it on a quiet machine.
 *
 * The release is the commit that added the newest `docs/released/openapi-<version>.yaml` (the
 * release commit of that version, as CHANGELOG.md says), unless BENCH_GUARD_BASE names another.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The largest loss of throughput, as a share of the release's, that passes. */
const MAX_LOSS = 0.1;

const git = (...args: string[]): string => {
  const run = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`git ${args.join(' ')}: ${run.stderr}`);
  return run.stdout.trim();
};

/** `1.10.0` after `1.9.0`: versions compared part by part as numbers. */
function byVersion(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i]! - pb[i]!;
  return 0;
}

/** The newest released contract's version and the commit that released it. */
export function lastRelease(): { version: string; commit: string } {
  const versions = readdirSync(path.join(ROOT, 'docs', 'released'))
    .map((f) => /^openapi-(\d+\.\d+\.\d+)\.yaml$/.exec(f)?.[1])
    .filter((v): v is string => v !== undefined)
    .sort(byVersion);
  const version = versions.at(-1);
  if (!version) throw new Error('no docs/released/openapi-<version>.yaml');
  const commit = git('log', '--diff-filter=A', '--format=%H', '-1', '--', `docs/released/openapi-${version}.yaml`);
  return { version, commit };
}

interface AbRow {
  route: string;
  'B/A req/s': string;
  'B/A CPU': string;
  'paired B/A req/s': string;
  'paired B/A CPU': string;
}

const base = process.env.BENCH_GUARD_BASE ?? lastRelease().commit;
console.error(`bench:guard: this checkout (B) against ${base} (A), 3 alternating rounds of auth-check and services?limit=25`);
const run = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'http.ts')], {
  cwd: ROOT,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, BENCH_BASE: base, BENCH_ROUNDS: '3', BENCH_ONLY: 'auth,list', BENCH_JSON: '1', BENCH_PROFILE: '' },
});
process.stdout.write(run.stdout);
const json = run.stdout.split('\n').find((line) => line.startsWith('{"base"'));
if (run.status !== 0 || !json) {
  console.error(`bench:guard: the bench failed (exit ${run.status})`);
  process.exit(2);
}
const rows = (JSON.parse(json) as { ab: AbRow[] }).ab;
let lost = false;
for (const row of rows) {
  // The median of each round's own B/A: a drift of the host's speed over the sitting cancels in it.
  const ratio = Number(row['paired B/A req/s']);
  const loss = ratio < 1 - MAX_LOSS;
  lost ||= loss;
  console.log(`${loss ? 'LOSS' : 'ok'}   ${row.route}: ${ratio.toFixed(3)} of ${base.slice(0, 7)}'s req/s (median of rounds; of medians ${row['B/A req/s']}; API CPU a request ${row['paired B/A CPU']}×)`);
}
process.exit(lost ? 1 : 0);
