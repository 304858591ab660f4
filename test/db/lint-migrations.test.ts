/**
 * `npm run lint:migrations` (scripts/lint-migrations.mjs): Squawk refuses a new migration that
 * would lock a big table (an index built without CONCURRENTLY, no lock_timeout), passes the safe
 * forms docs/upgrading.md shows, lints a marked migration as running outside a transaction, and
 * leaves the migrations up to 20261129033238_report_run_mode (applied already) alone.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { ROOT_DIR } from '../../src/root.ts';
import { runFile } from '../helpers/run-file.ts';

const work = mkdtempSync(path.join(os.tmpdir(), 'capi-lint-migrations-'));
after(() => rmSync(work, { recursive: true, force: true }));

function folder(migrations: Record<string, string>): string {
  const dir = mkdtempSync(path.join(work, 'm-'));
  for (const [name, sql] of Object.entries(migrations)) {
    mkdirSync(path.join(dir, name));
    writeFileSync(path.join(dir, name, 'migration.sql'), sql);
  }
  return dir;
}

const lint = (dir: string) => runFile(process.execPath, [path.join(ROOT_DIR, 'scripts', 'lint-migrations.mjs'), dir], { cwd: ROOT_DIR, timeoutMs: 60_000 });
const UNSAFE_INDEX = 'CREATE INDEX "d_created_idx" ON "webhook_deliveries" ("created_at");\n';

test('an index built under a lock that blocks writes is refused, and so is a missing lock_timeout', async () => {
  const r = await lint(folder({ '20261202100000_unsafe': UNSAFE_INDEX }));
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const out = r.stdout + r.stderr;
  for (const rule of ['require-concurrent-index-creation', 'require-lock-timeout', 'require-statement-timeout']) assert.match(out, new RegExp(rule));
  assert.match(out, /Squawk refused a migration/);
});

test('the safe forms pass: CONCURRENTLY outside a transaction, a nullable column, a new table, with timeouts', async () => {
  const r = await lint(
    folder({
      '20261202100000_process_registry':
        "SET LOCAL lock_timeout = '2s';\nSET LOCAL statement_timeout = '10s';\n" +
        'CREATE TABLE "process_registry" ("id" SERIAL NOT NULL, "role" TEXT NOT NULL, CONSTRAINT "process_registry_pkey" PRIMARY KEY ("id"));\n' +
        'CREATE INDEX "process_registry_role_idx" ON "process_registry" ("role");\n' +
        'ALTER TABLE "webhook_deliveries" ADD COLUMN "note" TEXT;\n',
      '20261202110000_deliveries_index':
        "-- migrate:no-transaction\nSET lock_timeout = '2s';\nSET statement_timeout = '30min';\n" +
        'CREATE INDEX CONCURRENTLY IF NOT EXISTS "d_created_idx" ON "webhook_deliveries" ("created_at");\n',
    }),
  );
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /2 migration\(s\) after 20261129033238_report_run_mode pass Squawk/);
});

test('CONCURRENTLY in a migration that runs as one transaction is refused', async () => {
  const r = await lint(folder({ '20261202100000_in_transaction': "SET LOCAL lock_timeout = '2s';\nSET LOCAL statement_timeout = '30min';\nCREATE INDEX CONCURRENTLY \"d_created_idx\" ON \"webhook_deliveries\" (\"created_at\");\n" }));
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout + r.stderr, /ban-concurrent-index-creation-in-transaction/);
});

test('migrations up to 20261129033238_report_run_mode are not linted (applied already)', async () => {
  const r = await lint(folder({ '20261129033238_report_run_mode': UNSAFE_INDEX, '20261129000314_endpoint_deliveries': UNSAFE_INDEX }));
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /no migration after 20261129033238_report_run_mode/);
});
