#!/usr/bin/env node
// `npm run lint:migrations`: Squawk (squawk-cli) on every migration newer than the last one that
// existed when the linter came (issue 47). Those older ones are applied already and changing them
// would change their checksums; what Squawk says of them, and why they stay, is in
// docs/upgrading.md. A migration is linted as one transaction unless its first line is
// `-- migrate:no-transaction` (src/db/migration-script.ts). An argument names another migrations
// folder (the tests lint one of their own).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LAST_UNLINTED = '20261129033238_report_run_mode';
// The column types of a new table are the Prisma schema's choice, not a question of locks.
const EXCLUDED = ['prefer-bigint-over-int', 'prefer-identity'];

const dir = path.resolve(process.argv[2] ?? path.join(ROOT, 'prisma', 'migrations'));
const newer = readdirSync(dir, { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name > LAST_UNLINTED)
  .map((d) => path.join(dir, d.name, 'migration.sql'))
  .sort();
if (newer.length === 0) {
  console.log(`lint:migrations: no migration after ${LAST_UNLINTED}`);
  process.exit(0);
}
const outside = (file) => readFileSync(file, 'utf8').replace(/^\uFEFF/, '').split(/\r?\n/, 1)[0].trim() === '-- migrate:no-transaction';
const squawk = path.join(ROOT, 'node_modules', '.bin', 'squawk');
let failed = false;
for (const [files, inTransaction] of [[newer.filter((f) => !outside(f)), true], [newer.filter(outside), false]]) {
  if (files.length === 0) continue;
  const args = [`--exclude=${EXCLUDED.join(',')}`, inTransaction ? '--assume-in-transaction' : '--no-assume-in-transaction', ...files.map((f) => path.relative(process.cwd(), f))];
  const run = spawnSync(squawk, args, { stdio: 'inherit' });
  if (run.error) throw run.error;
  if (run.status !== 0) failed = true;
}
if (failed) {
  console.error('lint:migrations: Squawk refused a migration (docs/upgrading.md, "Writing a migration", shows the safe forms)');
  process.exit(1);
}
console.log(`lint:migrations: ${newer.length} migration(s) after ${LAST_UNLINTED} pass Squawk`);
