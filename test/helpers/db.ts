/**
 * A fresh, migrated database per call, for tests.
 *
 * - Default: an in-memory PGlite. The first call in a process migrates one and keeps its
 *   data directory as a template; later calls start from that template (~0.5 s instead of a
 *   2–5 s initdb) and still run the migrations (a no-op) through the same code path. The template
 *   is also kept in the temporary directory, named by a hash of the migrations and of PGlite's
 *   version, so the suite's other test files (processes of their own) start from it too. It is
 *   compacted first (compactTemplate): every file loads it, and its size is most of that load.
 * - With DATABASE_URL set: CREATE DATABASE capi_test_<pid>_<random> on that server as a copy of a
 *   migrated template database (TEMPLATE capi_template_<hash>, named like the PGlite template and
 *   made by the first test file that needs it), run the migrations (a no-op) through the same code
 *   path, and DROP it (WITH (FORCE)) in drop(). A copy takes ~0.2 s, migrating an empty one 1–2 s.
 *
 *   const db = await createTestDatabase();
 *   after(() => db.drop());
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { openDatabase, pgliteSocketUrl, processIsAlive, runAdminSql, socketDirFor, type Database } from '../../src/db/client.ts';
import { applyMigrations, readMigrationsList, type MigrationTarget } from '../../src/db/migrate.ts';
import { servePGliteSocket } from '../../src/db/pglite-socket.ts';
import { ROOT_DIR } from '../../src/root.ts';

/**
 * Tests build their data with the whole client: src/ holds only a ReadClient, whose writes of
 * services, requests and endpoints go through src/events/writes.ts; a test's own rows need no events.
 */
export const writingClient = (prisma: Database['prisma']): PrismaClient => prisma as unknown as PrismaClient;

/**
 * Where applyMigrations reaches a database the test holds (a TestDatabase, or an app's Database): its
 * PGlite instance first, since an app's PGlite also has a URL (its socket's).
 */
export function migrationTargetOf(db: { pglite?: PGlite | undefined; databaseUrl?: string | undefined }): MigrationTarget {
  if (db.pglite) return { kind: 'pglite', pglite: db.pglite };
  if (db.databaseUrl) return { kind: 'postgres', connectionString: db.databaseUrl };
  throw new Error('migrationTargetOf: neither a PGlite instance nor a database URL');
}

export interface TestDatabase {
  prisma: PrismaClient;
  kind: Database['kind'];
  /** The PGlite instance (PGlite runs only). */
  pglite?: PGlite;
  /** URL of the created PostgreSQL database (PostgreSQL runs only). */
  databaseUrl?: string;
  /** The opened database (for code that takes a `Database`). */
  db: Database;
  /** Closes the client and removes the database. Safe to call twice. */
  drop(): Promise<void>;
}

let template: Promise<Blob> | undefined;

/**
 * Where the template of these migrations, made by these versions of PGlite and of the schema engine
 * that applies them, is kept between test processes.
 */
async function templateFile(): Promise<string> {
  return path.join(os.tmpdir(), `capi-pglite-template-${await migrationsHash()}-${TEMPLATE_LAYOUT}.tar`);
}

/** Names how compactTemplate leaves a template, so a change to it does not load an older file. */
const TEMPLATE_LAYOUT = 'compact1';

/**
 * Shrinks the template's data directory before it is dumped (bench/README.md, "Test suite time"):
 * without the cluster's template0 and template1 (no test creates a database on PGlite), and with
 * a checkpoint in a fresh WAL segment cut after its last written page, so a load neither copies the
 * zeroes of a whole segment nor replays the migrations' WAL. The recycled segment is removed, not kept.
 */
async function compactTemplate(pglite: PGlite): Promise<void> {
  await pglite.exec(`UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')`);
  await pglite.exec('DROP DATABASE template0');
  await pglite.exec('DROP DATABASE template1');
  await pglite.query('SELECT pg_switch_wal()');
  await pglite.exec('CHECKPOINT');
  const fs = pglite.Module.FS;
  const walDir = `${(await pglite.query<{ dir: string }>("SELECT current_setting('data_directory') AS dir")).rows[0]!.dir}/pg_wal`;
  for (const name of fs.readdir(walDir).filter((n: string) => /^[0-9A-F]{24}$/.test(n))) {
    const file = `${walDir}/${name}`;
    const bytes = fs.readFile(file) as Uint8Array;
    let end = bytes.length;
    while (end > 0 && bytes[end - 1] === 0) end--;
    // Whole WAL pages: a read past the end is the end of the WAL, as after the last record.
    fs.truncate(file, Math.ceil(end / WAL_PAGE) * WAL_PAGE);
  }
}

const WAL_PAGE = 8192;

async function migrationsHash(): Promise<string> {
  const hash = createHash('sha256');
  for (const pkg of ['@electric-sql/pglite', '@prisma/schema-engine-wasm']) {
    hash.update(readFileSync(path.join(ROOT_DIR, 'node_modules', pkg, 'package.json')));
  }
  const migrations = await readMigrationsList();
  hash.update(JSON.stringify([migrations.lockfile.content, migrations.migrationDirectories]));
  return hash.digest('hex').slice(0, 16);
}

function pgliteTemplate(): Promise<Blob> {
  template ??= (async () => {
    const file = await templateFile();
    try {
      return new Blob([readFileSync(file)]);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    const pglite = await PGlite.create({ dataDir: 'memory://', startParams: [...PGlite.defaultStartParams, '-c', 'wal_recycle=off'] });
    try {
      await applyMigrations({ kind: 'pglite', pglite });
      await compactTemplate(pglite);
      const dump = await pglite.dumpDataDir('none');
      // Written aside and renamed: a test file starting meanwhile reads a whole template or none.
      // Only a saving: a file that cannot be written (a full disk) leaves the next file to make its own.
      const partial = `${file}.${process.pid}`;
      try {
        writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
        renameSync(partial, file);
      } catch {
        rmSync(partial, { force: true });
      }
      return dump;
    } finally {
      await pglite.close();
    }
  })();
  return template;
}

export async function createTestDatabase(
  options: { databaseUrl?: string | undefined } = { databaseUrl: process.env.DATABASE_URL },
): Promise<TestDatabase> {
  const serverUrl = options.databaseUrl?.trim() || undefined;
  const dataDir = path.join(os.tmpdir(), 'capi-test-unused'); // nothing is written there in memory mode
  if (!serverUrl) {
    const db = await openDatabase({ dataDir, pgliteDataDir: 'memory://', pgliteTemplate: await pgliteTemplate() });
    return { prisma: writingClient(db.prisma), kind: db.kind, pglite: db.pglite!, db, drop: () => db.close() };
  }

  const name = `capi_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  sweep ??= dropLeftovers(serverUrl).catch(() => {});
  await sweep;
  await runAdminSql(serverUrl, `CREATE DATABASE "${name}" TEMPLATE "${await postgresTemplate(serverUrl)}"`);
  let db: Database;
  try {
    db = await openDatabase({ dataDir, databaseUrl, poolMax: 5 });
  } catch (e) {
    await runAdminSql(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => {});
    throw e;
  }
  let dropped: Promise<void> | undefined;
  return {
    prisma: writingClient(db.prisma),
    kind: db.kind,
    databaseUrl,
    db,
    drop: () =>
      (dropped ??= (async () => {
        try {
          await db.close();
        } finally {
          await runAdminSql(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        }
      })()),
  };
}

let pgTemplate: Promise<string> | undefined;

/**
 * The migrated template on this server: made under a name of its own, closed to connections (a
 * copy fails while anyone is connected to its source) and renamed, so a file starting meanwhile
 * sees a whole template or none; when two files make one at once, the loser drops its own.
 */
function postgresTemplate(serverUrl: string): Promise<string> {
  pgTemplate ??= (async () => {
    const name = `capi_template_${await migrationsHash()}`;
    if (await databaseExists(serverUrl, name)) return name;
    const building = `capi_tplbuild_${process.pid}_${randomBytes(4).toString('hex')}`;
    const url = new URL(serverUrl);
    url.pathname = `/${building}`;
    await runAdminSql(serverUrl, `CREATE DATABASE "${building}"`);
    try {
      await applyMigrations({ kind: 'postgres', connectionString: url.toString() });
      await runAdminSql(serverUrl, `ALTER DATABASE "${building}" WITH ALLOW_CONNECTIONS false`);
      await runAdminSql(serverUrl, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${building}'`);
      await runAdminSql(serverUrl, `ALTER DATABASE "${building}" RENAME TO "${name}"`);
    } catch (e) {
      await runAdminSql(serverUrl, `DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`).catch(() => {});
      if (!(await databaseExists(serverUrl, name))) throw e;
    }
    return name;
  })();
  pgTemplate.catch(() => (pgTemplate = undefined));
  return pgTemplate;
}

async function databaseExists(serverUrl: string, name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  } finally {
    await client.end();
  }
}

let sweep: Promise<void> | undefined;

/** Drops capi_test_<pid>_* and capi_tplbuild_<pid>_* databases whose process is gone (killed before drop()). */
async function dropLeftovers(serverUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname ~ '^capi_(test|tplbuild)_[0-9]+_[0-9a-f]+$'`,
    );
    for (const { datname } of rows) {
      const pid = Number(datname.split('_')[2]);
      if (pid === process.pid || processIsAlive(pid)) continue;
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => {});
    }
  } finally {
    await client.end();
  }
}

/**
 * A node-postgres connection string for the test database, as a server reaches its database (a
 * build thread's own connection, a reader's pool): the server's URL on PostgreSQL runs, and on PGlite
 * runs the database served on a unix socket of its own (src/db/pglite-socket.ts), as the embedded
 * default serves it.
 */
export async function connectionOf(db: TestDatabase): Promise<{ url: string; close(): Promise<void> }> {
  if (db.databaseUrl) return { url: db.databaseUrl, close: async () => undefined };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'capi-socket-'));
  const socket = await servePGliteSocket(db.pglite!, socketDirFor(dir));
  return {
    url: pgliteSocketUrl(dir),
    close: async () => {
      await socket.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
