/**
 * Services import benchmark: `npm run bench:import` (= `tsx bench/import.ts`).
 *
 * Times the admin CLI's `services import` of `BENCH_SERVICES` services (default 100,000; CSV), as
 * an operator runs it, `BENCH_RUNS` times (default 3), each into a broker of its own:
 * - `no endpoint`: the broker has no webhook endpoint (every service still gets its
 *   `service.created` event);
 * - `1 endpoint`: the broker has one enabled live endpoint that takes every type, so every event
 *   also owes a delivery (written, not sent: no worker runs).
 * The database is embedded PGlite in a fresh data directory unless DATABASE_URL is set; then the
 * bench creates a database of its own on that server (dropped at the end). The endpoint row is
 * written with SQL, so the `1 endpoint` runs need DATABASE_URL.
 *
 * `BENCH_AB=<dir>`: an A/B against another checkout (its `node_modules` and `generated/` in place,
 * e.g. `git archive <commit> | tar -x -C <dir>`, a symlink to node_modules, a copy of generated/):
 * every import is made by this tree's CLI and by that one's, one after the other, the order
 * alternating from run to run, into the same database, so a busy machine weighs on both alike.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { cli, createBenchDatabase, dropBenchDatabase, ROOT, writeServicesCsv } from './report-kit.ts';

const N = Number(process.env.BENCH_SERVICES ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const TREES = process.env.BENCH_AB ? [ROOT, path.resolve(process.env.BENCH_AB)] : [ROOT];

/** `services import` with the CLI of `tree`; how many it imported. */
function importWith(tree: string, dataDir: string, slug: string, file: string): number {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', 'services', 'import', '--broker', slug, '--file', file, '--json'], {
    cwd: tree,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`services import (${tree}) failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { imported: number }).imported;
}

async function addEndpoint(slug: string): Promise<void> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO "webhook_endpoints" ("id", "broker_id", "mode", "url", "events", "secret")
       SELECT 'we_bench_' || "slug", "id", 'live', 'https://hooks.bench.example/', '{}', 'unused' FROM "brokers" WHERE "slug" = $1`,
      [slug],
    );
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-import-bench-'));
  const db = await createBenchDatabase('capi_import_bench');
  const kinds = db ? ['no endpoint', '1 endpoint'] : ['no endpoint'];
  const figures: Record<string, number[]> = {};
  try {
    let first = 100_000_000;
    const file = path.join(dataDir, 'services.csv');
    for (let run = 1; run <= RUNS; run++) {
      for (const kind of kinds) {
        const trees = run % 2 ? TREES : [...TREES].reverse();
        for (const tree of trees) {
          const label = TREES.length > 1 ? `${kind}, ${tree === ROOT ? 'this tree' : 'BENCH_AB'}` : kind;
          const slug = `bench${first}`;
          cli(dataDir, ['brokers', 'create', '--name', `Bench ${slug}`, '--email', 'bench@broker.example', '--slug', slug]);
          if (kind === '1 endpoint') await addEndpoint(slug);
          writeServicesCsv(file, N, first);
          first += N;
          const t = performance.now();
          const imported = importWith(tree, dataDir, slug, file);
          const ms = Math.round(performance.now() - t);
          if (imported !== N) throw new Error(`imported ${imported}, expected ${N}`);
          (figures[label] ??= []).push(ms);
          console.log(`run ${run}, ${label}: ${N} services imported in ${ms} ms (CLI process, start-up included)`);
        }
      }
    }
    for (const [kind, ms] of Object.entries(figures)) {
      const sorted = [...ms].sort((a, b) => a - b);
      console.log(`${kind}: median ${sorted[Math.floor(sorted.length / 2)]} ms over ${ms.length} runs (${ms.join(', ')})`);
    }
  } finally {
    await dropBenchDatabase(db);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
