/**
 * PGlite allows ONE process per data directory: the one that opens it serves it on a
 * PostgreSQL-protocol unix socket for the others, and a pid file (`$DATA_DIR/db.lock`) makes a
 * second direct open fail loudly instead of corrupting data.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../../generated/prisma/client.ts';
import type { ReadClient } from '../shared/db-errors.ts';
import { CONNECT_TIMEOUT_MS } from './connect-timeout.ts';
import { OneQueryAtATimeClient } from './one-at-a-time.ts';
import { applyMigrations } from './migrate.ts';
import { SOCKET_FILE, servePGliteSocket, socketAnswers, type PGliteSocketServerHandle } from './pglite-socket.ts';


/** PGlite is one session, so transactions queue; Prisma's default wait to start one is too short for that. */
export const PGLITE_TRANSACTION_OPTIONS = { maxWait: 15_000, timeout: 20_000 } as const;
export type DatabaseKind = 'pglite' | 'postgres';

/**
 * PostgreSQL: how long a query waits for a pooled connection, and a transaction to start. A pool
 * exhausted or a server that is gone then fails within it and the API answers `503` with
 * `Retry-After` within 2 s (src/shared/db-outage.ts), where Prisma's 2 s `maxWait` and a 5 s connect
 * wait answered later, or `500`.
 */
export const POOL_WAIT_MS = 1500;

/**
 * PGlite's WASM memory never shrinks and PostgreSQL touches all of `shared_buffers` at start, so the
 * pool is kept small: its files sit in the OS page cache anyway (bench/README.md). One session: 10 connections is plenty.
 */
export const PGLITE_SETTINGS: Record<string, string> = { shared_buffers: '16MB', max_connections: '10' };

function pgliteStartParams(): string[] {
  const defaults = (PGlite as unknown as { defaultStartParams?: string[] }).defaultStartParams ?? [];
  return [...defaults, ...Object.entries(PGLITE_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
}

export interface Database {
  /** Reads only, for services, requests and endpoints: their writes go through src/events/writes.ts. */
  prisma: ReadClient;
  /** What the data lives in. A CLI reaching PGlite through the server's socket is 'pglite'. */
  kind: DatabaseKind;
  /** 'direct': this process opened it; 'socket': through the server's PGlite socket. */
  via: 'direct' | 'socket';
  /** The PGlite instance when this process opened it. */
  pglite?: PGlite;
  /** The socket this process serves its PGlite on (server only). */
  socket?: PGliteSocketServerHandle;
  /** PostgreSQL URL, or the URL of the PGlite socket (this process's own, or the one reached via 'socket'). */
  databaseUrl?: string;
  /** Migrations applied by this open (empty when already up to date or not migrated here). */
  appliedMigrations: string[];
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** DATABASE_URL; when set, PostgreSQL through @prisma/adapter-pg. */
  databaseUrl?: string | undefined;
  /** $DATA_DIR (PGlite lives in `$DATA_DIR/db`, the socket and lock file beside it). */
  dataDir: string;
  /** Override the PGlite directory; `'memory://'` for an in-memory database (tests). */
  pgliteDataDir?: string;
  /** A `dumpDataDir()` tarball to start from instead of an empty cluster (tests: far faster than initdb). */
  pgliteTemplate?: Blob;
  /** Serve PGlite on the unix socket. Default: true on disk, false in memory. */
  serveSocket?: boolean;
  /** Apply pending migrations on open (default true). */
  migrate?: boolean;
  /** PostgreSQL only: a database that hangs rather than refusing fails the request in bounded time. Unset: no limit (CLI imports). */
  statementTimeoutMs?: number;
  /** node-postgres pool size for PostgreSQL (default 10). */
  poolMax?: number;
  /** Schema engine log lines. */
  log?: (message: string) => void;
}

/** Directory holding the socket for `dataDir` (a short path under /tmp if `dataDir` is too long for a unix socket). */
export function socketDirFor(dataDir: string): string {
  const abs = path.resolve(dataDir);
  if (Buffer.byteLength(path.join(abs, SOCKET_FILE)) <= 100) return abs;
  const hash = createHash('sha256').update(abs).digest('hex').slice(0, 16);
  return path.join(os.tmpdir(), `capi-${hash}`);
}

/** node-postgres / Prisma URL that reaches the PGlite served for `dataDir`. */
export function pgliteSocketUrl(dataDir: string): string {
  return `postgresql://postgres@localhost:5432/postgres?host=${encodeURIComponent(socketDirFor(dataDir))}`;
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options);
  return openPGlite(options);
}

async function openPostgres(databaseUrl: string, options: OpenDatabaseOptions): Promise<Database> {
  const appliedMigrations =
    options.migrate === false
      ? []
      : await applyMigrations({ kind: 'postgres', connectionString: databaseUrl }, { log: options.log });
  const pool = new pg.Pool({
    Client: OneQueryAtATimeClient,
    connectionString: databaseUrl,
    max: options.poolMax ?? 10,
    // A server that accepts connections but never completes the start-up is an error, not a hang;
    // pg-pool bounds a wait for a free connection by the same setting.
    connectionTimeoutMillis: POOL_WAIT_MS,
    ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
  });
  pool.on('error', () => {}); // an idle client dropped by the server; the next query reconnects
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool), transactionOptions: { maxWait: POOL_WAIT_MS } });
  return {
    prisma,
    kind: 'postgres',
    via: 'direct',
    databaseUrl,
    appliedMigrations,
    close: once(async () => {
      await prisma.$disconnect();
      await pool.end();
    }),
  };
}

async function openPGlite(options: OpenDatabaseOptions): Promise<Database> {
  const dataDir = path.resolve(options.dataDir);
  const dir = options.pgliteDataDir ?? path.join(dataDir, 'db');
  const inMemory = dir.startsWith('memory://');
  let unlock = () => {};
  if (!inMemory) {
    mkdirSync(dataDir, { recursive: true });
    unlock = lockDataDir(path.join(dataDir, 'db.lock'), dir);
  }
  let pglite: PGlite | undefined;
  let socket: PGliteSocketServerHandle | undefined;
  try {
    pglite = await PGlite.create({
      dataDir: dir,
      ...(options.pgliteTemplate ? { loadDataDir: options.pgliteTemplate } : {}),
      startParams: pgliteStartParams(),
    });
    const appliedMigrations =
      options.migrate === false ? [] : await applyMigrations({ kind: 'pglite', pglite }, { log: options.log });
    const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite), transactionOptions: PGLITE_TRANSACTION_OPTIONS });
    if (options.serveSocket ?? !inMemory) {
      const socketDir = socketDirFor(dataDir);
      mkdirSync(socketDir, { recursive: true, mode: 0o700 });
      socket = await servePGliteSocket(pglite, socketDir);
    }
    const db = pglite;
    const served = socket;
    return {
      prisma,
      kind: 'pglite',
      via: 'direct',
      pglite: db,
      ...(served ? { socket: served, databaseUrl: pgliteSocketUrl(dataDir) } : {}),
      appliedMigrations,
      close: closePGlite({ socket: served, prisma, pglite: db }, unlock),
    };
  } catch (e) {
    await abandonPGlite(socket, pglite, unlock);
    throw e;
  }
}

/** The embedded database as served by its own process (src/db/process.ts): PGlite and its socket, no Prisma. */
export interface EmbeddedDatabaseServer {
  pglite: PGlite;
  socket: PGliteSocketServerHandle;
  appliedMigrations: string[];
  close(): Promise<void>;
}

/** What the database process runs: open, migrate, serve on the unix socket. */
export async function serveEmbeddedDatabase(options: {
  dataDir: string;
  log?: (message: string) => void;
  maxConnections?: number;
  /**
   * After creating the cluster or migrating, close and resolve `{ setUp }` instead of serving: that
   * memory is never returned to the OS, so a fresh process serves (bench/README.md).
   */
  reopenAfterSetUp?: boolean;
}): Promise<EmbeddedDatabaseServer | { setUp: string[] }> {
  const dataDir = path.resolve(options.dataDir);
  const dir = path.join(dataDir, 'db');
  mkdirSync(dataDir, { recursive: true });
  const unlock = lockDataDir(path.join(dataDir, 'db.lock'), dir);
  let pglite: PGlite | undefined;
  let socket: PGliteSocketServerHandle | undefined;
  try {
    const created = !existsSync(path.join(dir, 'PG_VERSION'));
    pglite = await PGlite.create({ dataDir: dir, startParams: pgliteStartParams() });
    const appliedMigrations = await applyMigrations({ kind: 'pglite', pglite }, { log: options.log });
    if (options.reopenAfterSetUp && (created || appliedMigrations.length > 0)) {
      await pglite.close();
      unlock();
      return { setUp: appliedMigrations };
    }
    const socketDir = socketDirFor(dataDir);
    mkdirSync(socketDir, { recursive: true, mode: 0o700 });
    socket = await servePGliteSocket(pglite, socketDir, { maxConnections: options.maxConnections ?? 32 });
    const db = pglite;
    const served = socket;
    return {
      pglite: db,
      socket: served,
      appliedMigrations,
      close: closePGlite({ socket: served, pglite: db }, unlock),
    };
  } catch (e) {
    await abandonPGlite(socket, pglite, unlock);
    throw e;
  }
}

/** The migrations were applied by whoever opened the PGlite behind the socket. */
export function connectPGliteSocket(dataDir: string, poolMax: number, queryTimeoutMs?: number): Database {
  const socketDir = socketDirFor(dataDir);
  const pool = new pg.Pool({
    Client: OneQueryAtATimeClient,
    host: socketDir,
    port: 5432,
    user: 'postgres',
    database: 'postgres',
    max: poolMax,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // PGlite's single-user backend runs no statement_timeout, so a hung database process is bounded
    // here. Unset: no limit (the admin CLI's imports).
    ...(queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs }),
  });
  pool.on('error', () => {}); // a connection dropped by the database process; the next query reconnects
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool), transactionOptions: PGLITE_TRANSACTION_OPTIONS });
  return {
    prisma,
    kind: 'pglite',
    via: 'socket',
    databaseUrl: pgliteSocketUrl(dataDir),
    appliedMigrations: [],
    close: once(async () => {
      await prisma.$disconnect();
      await pool.end();
    }),
  };
}

/** DATABASE_URL; else the running server's PGlite socket; else the directory itself (the server then refuses to start). */
export async function connectForCli(options: {
  dataDir: string;
  databaseUrl?: string | undefined;
  log?: (message: string) => void;
  /** A separate worker's bound on each query through the socket (the CLI has none). */
  queryTimeoutMs?: number;
}): Promise<Database> {
  if (options.databaseUrl) return openDatabase({ databaseUrl: options.databaseUrl, dataDir: options.dataDir, poolMax: 2 });
  const socketDir = socketDirFor(options.dataDir);
  if (await socketAnswers(path.join(socketDir, SOCKET_FILE))) {
    return connectPGliteSocket(options.dataDir, 2, options.queryTimeoutMs);
  }
  return openDatabase({ dataDir: options.dataDir, serveSocket: false, log: options.log });
}

/** A pid file guarding the PGlite directory against a second process opening it. */
function lockDataDir(lockFile: string, dir: string): () => void {
  const mine = `${process.pid}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, mine, { flag: 'wx', mode: 0o600 });
      return () => {
        try {
          if (readFileSync(lockFile, 'utf8') === mine) unlinkSync(lockFile);
        } catch {
          // already gone
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number.parseInt(readFileSync(lockFile, 'utf8'), 10);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processIsAlive(pid)) {
        throw new Error(
          `the embedded database ${dir} is in use by process ${pid} (PGlite allows one process; ` +
            `connect through its socket, or stop it; remove ${lockFile} if that process is not ours)`,
        );
      }
      if (pid === process.pid) {
        throw new Error(`the embedded database ${dir} is already open in this process`);
      }
      unlinkSync(lockFile); // stale: its process is gone
    }
  }
  throw new Error(`could not lock ${lockFile}`);
}

/** Whether a process with this pid exists (EPERM: it exists but is not ours). */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs one statement on a fresh connection (CREATE/DROP DATABASE cannot run in a pool's transaction). */
export async function runAdminSql(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Closes an opened PGlite, what serves it first, and frees its data directory (once). */
function closePGlite(
  parts: { socket?: PGliteSocketServerHandle | undefined; prisma?: PrismaClient; pglite: PGlite },
  unlock: () => void,
): () => Promise<void> {
  return once(async () => {
    try {
      await parts.socket?.stop();
      await parts.prisma?.$disconnect();
      await parts.pglite.close();
    } finally {
      unlock();
    }
  });
}

/** Undoes an open that failed part way; the caller rethrows the open's own error. */
async function abandonPGlite(socket: PGliteSocketServerHandle | undefined, pglite: PGlite | undefined, unlock: () => void): Promise<void> {
  await socket?.stop().catch(() => {});
  await pglite?.close().catch(() => {});
  unlock();
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let p: Promise<void> | undefined;
  return () => (p ??= fn());
}
