/**
 * getRequestStats over a busy broker's 30 days: `npm run bench:request-stats`. A PostgreSQL
 * database of its own (on BENCH_PG_URL or DATABASE_URL's server, else 127.0.0.1:5432), migrated,
 * is filled by `generate_series` with BENCH_ROWS (default 1,000,000) API log rows: 90 % one
 * broker's live requests spread over the last 30 days (statuses, 25 operations, durations as a
 * gate writes them), the rest its sandbox's and another broker's, in one INSERT (so the roll-up
 * trigger of migration 20261202130000_stats runs as it does for a flush, once, on all of them).
 * After VACUUM ANALYZE, getRequestStats' store (src/request-logs/stats.ts: whole hours from the
 * roll-up, the partial last hour from the log) runs for the 30 days up to now by day and by hour:
 * one warm-up, then BENCH_RUNS (default 5) timed runs each, median and slowest. For the ratio in one
 * run, the same figures straight from the log (grouped counts and percentile_disc over every
 * entry, as without the roll-up) are timed the same way. Prints a table; the database is dropped.
 */
import { randomBytes } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.ts';
import { runAdminSql } from '../src/db/client.ts';
import { applyMigrations } from '../src/db/migrate.ts';
import { requestStats } from '../src/request-logs/stats.ts';
import { sqlInterval, statsRange, type StatsInterval } from '../src/shared/stats-range.ts';

const ADMIN_URL = process.env.BENCH_PG_URL?.trim() || process.env.DATABASE_URL?.trim() || 'postgresql://postgres@127.0.0.1:5432/postgres';
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const BUSY = 'brk_bench_busy';
const OTHER = 'brk_bench_other';

const name = `capi_bench_stats_${randomBytes(4).toString('hex')}`;
const url = new URL(ADMIN_URL);
url.pathname = `/${name}`;

const FILL = `
  INSERT INTO "api_logs" ("at", "api_key_id", "broker_id", "mode", "method", "path", "status", "ip", "duration_ms", "request_id", "operation")
  SELECT now() - (random() * interval '30 days'),
         'key_bench_' || (i % 3),
         CASE WHEN i % 20 = 0 THEN '${OTHER}' ELSE '${BUSY}' END,
         (CASE WHEN i % 20 = 1 THEN 'test' ELSE 'live' END)::"key_mode",
         'GET', '/api/v1/services',
         (ARRAY[200, 200, 200, 200, 200, 200, 200, 201, 202, 304, 400, 404, 409, 429, 500, 503])[1 + (i % 16)],
         '203.0.113.10',
         (random() * random() * 400)::int,
         'req_' || md5(i::text),
         CASE WHEN i % 97 = 0 THEN NULL ELSE 'operation' || (i % 25) END
    FROM generate_series(1, $1::int) AS i`;

/** The figures straight from the log: what getRequestStats would cost without the roll-up. */
async function fromLogOnly(prisma: PrismaClient, interval: StatsInterval, gte: Date, lt: Date): Promise<{ buckets: Array<{ requests: number }> }> {
  const step = sqlInterval(interval);
  // Both reads run, as getRequestStats' would; the counts are enough to check the answer.
  const [counts] = await Promise.all([
    prisma.$queryRaw<Array<{ start: Date; n: number }>>`
      SELECT date_bin(${step}::interval, "at", ${new Date(0)}::timestamptz) AS "start", ("status" / 100)::int AS "class", "operation", count(*)::int AS "n"
        FROM "api_logs" WHERE "broker_id" = ${BUSY} AND "mode" = 'live' AND "at" >= ${gte} AND "at" < ${lt} GROUP BY 1, 2, 3`,
    prisma.$queryRaw<unknown[]>`
      SELECT date_bin(${step}::interval, "at", ${new Date(0)}::timestamptz) AS "start", percentile_disc(ARRAY[0.5, 0.95]::float8[]) WITHIN GROUP (ORDER BY "duration_ms") AS "p"
        FROM "api_logs" WHERE "broker_id" = ${BUSY} AND "mode" = 'live' AND "at" >= ${gte} AND "at" < ${lt} GROUP BY 1`,
  ]);
  const byStart = new Map<number, number>();
  for (const c of counts) byStart.set(c.start.getTime(), (byStart.get(c.start.getTime()) ?? 0) + c.n);
  return { buckets: [...byStart.values()].map((requests) => ({ requests })) };
}

async function timed(prisma: PrismaClient, interval: StatsInterval, rollUp: boolean): Promise<{ median: number; slowest: number; buckets: number; requests: number }> {
  const now = new Date();
  const range = statsRange(interval, new Date(now.getTime() - 30 * 86_400_000), now, now);
  const run = () => (rollUp ? requestStats(prisma, { brokerId: BUSY, mode: 'live' }, range) : fromLogOnly(prisma, interval, range.gte, range.lt));
  const first = await run();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await run();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)]!, slowest: ms.at(-1)!, buckets: first.buckets.length, requests: first.buckets.reduce((n, b) => n + b.requests, 0) };
}

await runAdminSql(ADMIN_URL, `CREATE DATABASE "${name}"`);
const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url.toString(), max: 4 }) });
try {
  await applyMigrations({ kind: 'postgres', connectionString: url.toString() });
  const started = performance.now();
  await prisma.$executeRawUnsafe(FILL, ROWS);
  await prisma.$executeRawUnsafe('VACUUM ANALYZE "api_logs"');
  const fillSeconds = (performance.now() - started) / 1000;
  const results: Array<Record<string, string | number>> = [];
  for (const rollUp of [true, false]) {
    for (const interval of ['day', 'hour'] as const) {
      const r = await timed(prisma, interval, rollUp);
      const read = rollUp ? 'getRequestStats (roll-up + log for the last partial hour)' : 'straight from the log (no roll-up)';
      results.push({ read, interval, buckets: r.buckets, 'requests counted': r.requests, 'median ms': r.median.toFixed(0), 'slowest ms': r.slowest.toFixed(0) });
    }
  }
  const [version] = await prisma.$queryRawUnsafe<Array<{ server_version: string }>>('SHOW server_version');
  const [rolled] = await prisma.$queryRawUnsafe<Array<{ n: number }>>('SELECT (SELECT count(*) FROM "api_log_hour_counts") + (SELECT count(*) FROM "api_log_hours") AS "n"');
  console.log(`${ROWS.toLocaleString('en')} rows filled (and rolled up: ${Number(rolled!.n)} rows) in ${fillSeconds.toFixed(1)} s; PostgreSQL ${version!.server_version}`);
  console.table(results);
} finally {
  await prisma.$disconnect();
  await runAdminSql(ADMIN_URL, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
