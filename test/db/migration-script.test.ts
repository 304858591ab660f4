/**
 * Migrations that run outside a transaction (src/db/migration-script.ts): the marker is read from
 * the first line only, statements are split where PostgreSQL would end them, and such a migration
 * builds an index CONCURRENTLY, which a default (one-transaction) migration cannot, without leaving
 * its SETs on the database's sessions. On PGlite, or on PostgreSQL when DATABASE_URL is set.
 */
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MIGRATIONS_DIR, applyMigrations } from '../../src/db/migrate.ts';
import { NO_TRANSACTION_MARKER, runsOutsideTransaction, splitStatements } from '../../src/db/migration-script.ts';
import { createTestDatabase, migrationTargetOf, type TestDatabase } from '../helpers/db.ts';

describe('splitting a script into statements', () => {
  it('splits at semicolons outside quotes, dollar quotes and comments', () => {
    const script = [
      "-- a comment; with a semicolon",
      "SET lock_timeout = '1s';",
      "INSERT INTO t VALUES ('a;b', E'c\\';d', \"x;y\");",
      '/* block; /* nested; */ still; */',
      'DO $body$ BEGIN PERFORM 1; PERFORM 2; END $body$;',
      'CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;',
      'SELECT $1;',
      '-- only a comment at the end;',
    ].join('\n');
    assert.deepEqual(splitStatements(script), [
      "-- a comment; with a semicolon\nSET lock_timeout = '1s'",
      "INSERT INTO t VALUES ('a;b', E'c\\';d', \"x;y\")",
      '/* block; /* nested; */ still; */\nDO $body$ BEGIN PERFORM 1; PERFORM 2; END $body$',
      'CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql',
      'SELECT $1',
    ]);
    assert.deepEqual(splitStatements("SELECT 'it''s; fine'"), ["SELECT 'it''s; fine'"]);
  });

  it('reads the marker from the first line only', () => {
    assert.equal(runsOutsideTransaction(`${NO_TRANSACTION_MARKER}\nCREATE INDEX CONCURRENTLY i ON t (a);`), true);
    assert.equal(runsOutsideTransaction(`\uFEFF${NO_TRANSACTION_MARKER}  \r\nSELECT 1;`), true);
    assert.equal(runsOutsideTransaction(`SELECT 1;\n${NO_TRANSACTION_MARKER}\n`), false);
    assert.equal(runsOutsideTransaction('-- migrate:no-transactions\nSELECT 1;'), false);
  });
});

describe(`a migration outside a transaction (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let dir: string;
  let t: TestDatabase;
  const index = 'webhook_deliveries_bench_probe_idx';
  before(async () => {
    t = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'capi-migrations-'));
    await cp(MIGRATIONS_DIR, dir, { recursive: true });
  });
  after(async () => {
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function addMigration(name: string, sql: string): Promise<void> {
    await mkdir(path.join(dir, name));
    await writeFile(path.join(dir, name, 'migration.sql'), sql);
  }

  it('builds an index CONCURRENTLY, statement by statement, and leaves no setting behind', async () => {
    await addMigration(
      '29991231000000_concurrent_index',
      `${NO_TRANSACTION_MARKER}\nSET lock_timeout = '2s';\nSET statement_timeout = '5min';\n` +
        `CREATE INDEX CONCURRENTLY IF NOT EXISTS "${index}" ON "webhook_deliveries" ("created_at");\n` +
        `DO $$ BEGIN IF current_setting('lock_timeout') <> '2s' THEN RAISE EXCEPTION 'lost the session: %', current_setting('lock_timeout'); END IF; END $$;\n` +
        // A backfill in batches commits each one, which only a statement outside a transaction may.
        `DO $$ BEGIN FOR i IN 1..3 LOOP UPDATE "webhook_deliveries" SET "attempts" = "attempts" WHERE false; COMMIT; END LOOP; END $$;\n`,
    );
    assert.deepEqual(await applyMigrations(migrationTargetOf(t), { migrationsDir: dir }), ['29991231000000_concurrent_index']);
    const rows = await t.prisma.$queryRawUnsafe<Array<{ valid: boolean }>>(
      `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`,
      index,
    );
    assert.deepEqual(rows, [{ valid: true }]);
    const [setting] = await t.prisma.$queryRawUnsafe<Array<{ lock_timeout: string }>>('SHOW lock_timeout');
    assert.equal(setting?.lock_timeout, '0', "the migration's SET ended with its session");
    assert.deepEqual(await applyMigrations(migrationTargetOf(t), { migrationsDir: dir }), [], 'recorded as applied');
  });

  it('a default migration is one transaction: CONCURRENTLY is refused there and nothing of it stays', async () => {
    await addMigration(
      '29991231000001_concurrent_in_transaction',
      `CREATE TABLE "half_done" (id int);\nCREATE INDEX CONCURRENTLY "half_done_idx" ON "webhook_deliveries" ("updated_at");\n`,
    );
    await assert.rejects(applyMigrations(migrationTargetOf(t), { migrationsDir: dir }), /transaction block|CONCURRENTLY/i);
    const [row] = await t.prisma.$queryRaw<Array<{ n: bigint | number }>>`
      SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'half_done'`;
    assert.equal(Number(row?.n), 0);
  });
});
