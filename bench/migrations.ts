/**
 * `npm run bench:migrations [-- --base NAME] [--deliveries N] [--with DIR]`: how long the
 * migrations after NAME (default 20261129033238_report_run_mode, the last one before the linter)
 * block event writes on a big database. A database of its own on PostgreSQL (BENCH_PG_URL, else
 * DATABASE_URL, else 127.0.0.1:5432) is migrated up to NAME and loaded with N webhook deliveries
 * (default 1,000,000; generate_series, in the database); then the later migrations (and those in
 * DIR, to try one before committing it) are applied while a writer records events in a loop, each
 * an event and its delivery in one transaction, as the app does. It prints the longest time an
 * event write took (before and during the migrations) and, per migration statement, how long it
 * was seen holding a lock that blocks writes. Figures in bench/README.md; nothing is asserted.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { runAdminSql } from '../src/db/client.ts';
import { applyMigrations, MIGRATIONS_DIR } from '../src/db/migrate.ts';

const { values: args } = parseArgs({
  options: {
    base: { type: 'string', default: '20261129033238_report_run_mode' },
    deliveries: { type: 'string', default: '1000000' },
    with: { type: 'string' },
  },
});
const DELIVERIES = Number(args.deliveries);
const PER_EVENT = 5;
const ADMIN_URL = process.env.BENCH_PG_URL?.trim() || process.env.DATABASE_URL?.trim() || 'postgresql://postgres@127.0.0.1:5432/postgres';
/** Lock modes that conflict with ROW EXCLUSIVE, the lock an INSERT takes: they block every write of the table. */
const BLOCKS_WRITES = ['ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock'];
const POLL_MS = 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const admin = (sql: string) => runAdminSql(ADMIN_URL, sql);

/** A copy of the migrations folder holding only those up to `last` (and migration_lock.toml). */
function migrationsUpTo(last: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-migrations-'));
  for (const entry of readdirSync(MIGRATIONS_DIR)) {
    if (entry === 'migration_lock.toml' || entry <= last) cpSync(path.join(MIGRATIONS_DIR, entry), path.join(dir, entry), { recursive: true });
  }
  return dir;
}

async function load(client: pg.Client): Promise<void> {
  const events = Math.ceil(DELIVERIES / PER_EVENT);
  await client.query(`INSERT INTO brokers (id, slug, name, email) VALUES ('brk_bench', 'bench', 'Bench', 'bench@example.com')`);
  await client.query(`INSERT INTO webhook_endpoints (id, broker_id, mode, url, events, secret)
                      VALUES ('we_bench', 'brk_bench', 'live', 'https://example.com/hook', '{}', 'x')`);
  await client.query(`INSERT INTO events (id, broker_id, mode, type, data)
                      SELECT 'evt_bench_' || g, 'brk_bench', 'live', 'service.updated', '{}'::jsonb FROM generate_series(1, $1::int) g`, [events]);
  // Mostly delivered, one in fifty due: the shape of a table that has been in service a while.
  await client.query(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, status, attempts, next_attempt_at, completed_at, created_at)
     SELECT 'evt_bench_' || ((g - 1) / ${PER_EVENT} + 1), 'we_bench',
            CASE WHEN g % 50 = 0 THEN 'pending' ELSE 'delivered' END::webhook_delivery_status, 1,
            CASE WHEN g % 50 = 0 THEN now() END, CASE WHEN g % 50 = 0 THEN NULL ELSE now() END,
            now() - make_interval(secs => $1::int - g)
     FROM generate_series(1, $1::int) g`,
    [DELIVERIES],
  );
  await client.query('VACUUM ANALYZE events, webhook_deliveries');
}

interface Write {
  at: number;
  ms: number;
}

/** Records an event and its delivery in one transaction, again and again, until stopped. */
function startWriter(url: string): { writes: Write[]; pid: Promise<number>; stop(): Promise<void> } {
  const writes: Write[] = [];
  let running = true;
  let havePid: (pid: number) => void = () => {};
  const pid = new Promise<number>((resolve) => (havePid = resolve));
  const done = (async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    havePid((await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    try {
      for (let i = 0; running; i++) {
        const at = performance.now();
        await c.query('BEGIN');
        await c.query(`INSERT INTO events (id, broker_id, mode, type, data) VALUES ($1, 'brk_bench', 'live', 'service.updated', '{}')`, [`evt_w_${i}`]);
        await c.query(`INSERT INTO webhook_deliveries (event_id, endpoint_id) VALUES ($1, 'we_bench')`, [`evt_w_${i}`]);
        await c.query('COMMIT');
        writes.push({ at, ms: performance.now() - at });
        await sleep(10);
      }
    } finally {
      await c.end();
    }
  })();
  return {
    writes,
    pid,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

interface Held {
  statement: string;
  locks: Set<string>;
  first: number;
  last: number;
}

/** Polls pg_locks: each statement of another session seen holding a lock that blocks writes to a table, from first to last sighting. */
function startLockWatch(url: string, exclude: () => number[]): { held: Map<string, Held>; stop(): Promise<void> } {
  const held = new Map<string, Held>();
  let running = true;
  const done = (async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      while (running) {
        const { rows } = await c.query<{ pid: number; query: string; mode: string; relname: string }>(
          `SELECT coalesce(a.leader_pid, a.pid) AS pid, a.query, l.mode, c.relname
           FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid JOIN pg_class c ON c.oid = l.relation
           WHERE a.datname = current_database() AND l.granted AND l.locktype = 'relation' AND l.mode = ANY($1) AND c.relkind IN ('r', 'p')
             AND a.pid <> pg_backend_pid() AND a.pid <> ALL($2::int[])`,
          [BLOCKS_WRITES, exclude()],
        );
        const now = performance.now();
        for (const r of rows) {
          // A parallel index build's workers count with their leader.
          const key = `${r.pid} ${r.query}`;
          const h = held.get(key) ?? { statement: r.query.replace(/\s+/g, ' ').trim(), locks: new Set<string>(), first: now, last: now };
          h.locks.add(`${r.mode} on ${r.relname}`);
          h.last = now;
          held.set(key, h);
        }
        await sleep(POLL_MS);
      }
    } finally {
      await c.end();
    }
  })();
  return {
    held,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

const max = (xs: number[]) => xs.reduce((m, x) => Math.max(m, x), 0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function main(): Promise<void> {
  const name = `capi_bench_migrations_${process.pid}`;
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const dbUrl = url.toString();
  const before = migrationsUpTo(args.base);
  const all = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-migrations-all-'));
  cpSync(MIGRATIONS_DIR, all, { recursive: true });
  if (args.with) cpSync(path.resolve(args.with), all, { recursive: true });
  await admin(`CREATE DATABASE "${name}"`);
  try {
    let t = performance.now();
    await applyMigrations({ kind: 'postgres', connectionString: dbUrl }, { migrationsDir: before });
    const client = new pg.Client({ connectionString: dbUrl });
    await client.connect();
    await load(client);
    const [{ n }] = (await client.query<{ n: string }>('SELECT count(*) AS n FROM webhook_deliveries')).rows as [{ n: string }];
    console.log(`bench:migrations: migrated to ${args.base} and loaded ${Number(n).toLocaleString('en')} webhook deliveries in ${((performance.now() - t) / 1000).toFixed(1)} s`);

    const writer = startWriter(dbUrl);
    const exclude = [await writer.pid, (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid];
    const watch = startLockWatch(dbUrl, () => exclude);
    await sleep(2000);
    const migrationStart = performance.now();
    t = migrationStart;
    const applied = await applyMigrations({ kind: 'postgres', connectionString: dbUrl }, { migrationsDir: all });
    const migrationEnd = performance.now();
    await sleep(1000);
    await watch.stop();
    await writer.stop();
    await client.end();

    const baseline = writer.writes.filter((w) => w.at < migrationStart).map((w) => w.ms);
    const during = writer.writes.filter((w) => w.at + w.ms >= migrationStart && w.at <= migrationEnd).map((w) => w.ms);
    console.log(`migrations applied after ${args.base}: ${applied.length === 0 ? 'none' : applied.join(', ')} (${((migrationEnd - t) / 1000).toFixed(2)} s)`);
    console.log(`event writes: ${writer.writes.length}; before the migrations median ${median(baseline).toFixed(1)} ms, longest ${max(baseline).toFixed(1)} ms; during them ${during.length} writes, longest ${max(during).toFixed(1)} ms`);
    const statements = [...watch.held.values()].sort((a, b) => b.last - b.first - (a.last - a.first));
    if (statements.length === 0) console.log('no statement was seen holding a lock that blocks writes');
    const scripts = readdirSync(all)
      .filter((d) => d > args.base && d !== 'migration_lock.toml')
      .map((d) => ({ name: d, sql: readFileSync(path.join(all, d, 'migration.sql'), 'utf8').replace(/\s+/g, ' ').trim() }));
    for (const h of statements) {
      const from = scripts.find((m) => m.sql.includes(h.statement))?.name ?? 'not a migration';
      console.log(`  held ${(h.last - h.first).toFixed(0).padStart(6)} ms (seen every ${POLL_MS} ms) by ${from}: ${[...h.locks].join(', ')}: ${h.statement.slice(0, 100)}`);
    }
  } finally {
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch((e: unknown) => console.error('bench: could not drop', name, e));
    rmSync(before, { recursive: true, force: true });
    rmSync(all, { recursive: true, force: true });
  }
}

await main();
