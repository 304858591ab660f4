/**
 * The one code path that applies `prisma/migrations` (server, CLI, tests), with Prisma's own schema
 * engine, as `prisma migrate deploy` does; its advisory lock keeps two starting processes from both migrating.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { MigrationList, SchemaFilter } from '@prisma/schema-engine-wasm/schema_engine_bg';
import { ROOT_DIR } from '../root.ts';
import { openSchemaEngine, type MigrationTarget } from './schema-engine.ts';

export type { MigrationTarget };

export const SCHEMA_PATH = path.join(ROOT_DIR, 'prisma', 'schema.prisma');
export const MIGRATIONS_DIR = path.join(ROOT_DIR, 'prisma', 'migrations');

export const NO_FILTERS: SchemaFilter = { externalTables: [], externalEnums: [] };

/** Reads `prisma/migrations` into the shape the schema engine expects. */
export async function readMigrationsList(migrationsDir: string = MIGRATIONS_DIR): Promise<MigrationList> {
  let entries: string[] = [];
  try {
    const dirents = await readdir(migrationsDir, { withFileTypes: true });
    entries = dirents.filter((d) => d.isDirectory()).map((d) => d.name).sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const migrationDirectories: MigrationList['migrationDirectories'] = [];
  for (const dir of entries) {
    let sql: string;
    try {
      sql = await readFile(path.join(migrationsDir, dir, 'migration.sql'), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // not a migration folder
      throw e;
    }
    migrationDirectories.push({
      path: dir,
      migrationFile: { path: 'migration.sql', content: { tag: 'ok', value: sql } },
    });
  }
  let lockContent: string | null = null;
  try {
    lockContent = await readFile(path.join(migrationsDir, 'migration_lock.toml'), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  return {
    baseDir: migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: lockContent },
    shadowDbInitScript: '',
    migrationDirectories,
  };
}

export interface ApplyMigrationsOptions {
  migrationsDir?: string;
  /** Receives the engine's log lines (JSON strings); silent by default. */
  log?: (message: string) => void;
}

/** The names of the migrations applied now (empty when already up to date). */
export async function applyMigrations(
  target: MigrationTarget,
  options: ApplyMigrationsOptions = {},
): Promise<string[]> {
  const migrationsList = await readMigrationsList(options.migrationsDir);
  if (migrationsList.migrationDirectories.length === 0) {
    throw new Error(`no migrations found in ${migrationsList.baseDir}`);
  }
  if (await upToDate(target, migrationsList)) return [];
  const schema = await readFile(SCHEMA_PATH, 'utf8');
  const handle = await openSchemaEngine(target, [[SCHEMA_PATH, schema]], options.log);
  try {
    const out = await handle.engine.applyMigrations({ migrationsList, filters: NO_FILTERS });
    return out.appliedMigrationNames;
  } catch (e) {
    throw new Error(`applying migrations failed: ${describeEngineError(e)}`, { cause: e });
  } finally {
    await handle.close();
  }
}

/**
 * Every migration recorded as applied and unchanged (Prisma's checksum is the SHA-256 of
 * migration.sql): then the engine, whose memory the process never gets back, is not loaded at all.
 * Anything else goes to the engine, which reports it as `prisma migrate deploy` would.
 */
async function upToDate(target: MigrationTarget, list: MigrationList): Promise<boolean> {
  const sql = `SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS rolled_back
               FROM _prisma_migrations`;
  type Row = { migration_name: string; checksum: string; finished: boolean; rolled_back: boolean };
  let rows: Row[];
  try {
    if (target.kind === 'pglite') {
      rows = (await target.pglite.query<Row>(sql)).rows;
    } else if ('pool' in target) {
      rows = (await target.pool.query<Row>(sql)).rows;
    } else {
      const { default: pgModule } = await import('pg');
      const client = new pgModule.Client({ connectionString: target.connectionString });
      client.on('error', () => {});
      try {
        await client.connect();
        rows = (await client.query<Row>(sql)).rows;
      } finally {
        await client.end().catch(() => undefined);
      }
    }
  } catch {
    return false;
  }
  const recorded = rows.filter((r) => !r.rolled_back);
  if (recorded.length !== list.migrationDirectories.length || recorded.length !== rows.length) return false;
  const byName = new Map(recorded.map((r) => [r.migration_name, r]));
  return list.migrationDirectories.every((dir) => {
    const row = byName.get(dir.path);
    const content = dir.migrationFile.content;
    return (
      row !== undefined &&
      row.finished &&
      content.tag === 'ok' &&
      row.checksum === createHash('sha256').update(content.value).digest('hex')
    );
  });
}

/** Engine errors arrive as plain objects or JSON strings; make them readable. */
export function describeEngineError(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  try {
    const obj = e as { message?: unknown; error?: unknown };
    if (typeof obj?.message === 'string') return obj.message;
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}
