/**
 * getRequestStats over a busy broker's 30 days: `npm run bench:request-stats`. A PostgreSQL
 * database of its own (on BENCH_PG_URL or DATABASE_URL's server, else 127.0.0.1:5432), migrated,
 * is filled by `generate_series` with BENCH_ROWS (default 1,000,000) API log rows: 90 % one
 * broker's live requests spread over the last 30 days (statuses, 25 operations, durations as a
 * gate writes them), the rest its sandbox's and another broker's. After VACUUM ANALYZE, the
 * store's query (src/request-logs/stats.ts, both of its reads) runs for the 30 days by day and by
 * hour: one warm-up, then BENCH_RUNS (default 5) timed runs each, median and slowest. The same is
 * then timed with the index before migration 20261202120000_stats_indexes, (broker_id, mode, at, id),
 * for the ratio in one run. Prints a table; the database is dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.ts';
import { runAdminSql } from '../src/db/client.ts';
import { applyMigrations } from '../src/db/migrate.ts';
import { requestStats } from '../src/request-logs/stats.ts';
import { statsRange, type StatsInterval } from '../src/shared/stats-range.ts';

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

async function timed(prisma: PrismaClient, interval: StatsInterval): Promise<{ median: number; slowest: number; buckets: number; requests: number }> {
  const range = statsRange(interval, undefined, undefined, new Date());
  const run = () => requestStats(prisma, { brokerId: BUSY, mode: 'live' }, range);
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
  let started = performance.now();
  await prisma.$executeRawUnsafe(FILL, ROWS);
  await prisma.$executeRawUnsafe('VACUUM ANALYZE "api_logs"');
  const fillSeconds = (performance.now() - started) / 1000;
  const results: Array<Record<string, string | number>> = [];
  const measure = async (indexes: string) => {
    for (const interval of ['day', 'hour'] as const) {
      const r = await timed(prisma, interval);
      results.push({ indexes, interval, buckets: r.buckets, 'requests counted': r.requests, 'median ms': r.median.toFixed(0), 'slowest ms': r.slowest.toFixed(0) });
    }
  };
  await measure('now: (broker_id, mode, at, id, status, duration_ms, operation)');
  started = performance.now();
  await prisma.$executeRawUnsafe('CREATE INDEX "api_logs_before_stats" ON "api_logs" ("broker_id", "mode", "at", "id")');
  await prisma.$executeRawUnsafe('DROP INDEX "api_logs_broker_id_mode_at_id_status_duration_ms_operation_idx"');
  await prisma.$executeRawUnsafe('VACUUM ANALYZE "api_logs"');
  await measure('before: (broker_id, mode, at, id)');
  console.log(`${ROWS.toLocaleString('en')} rows filled in ${fillSeconds.toFixed(1)} s; PostgreSQL ${(await prisma.$queryRawUnsafe<Array<{ v: string }>>('SHOW server_version'))[0]!.v}`);
  console.table(results);
} finally {
  await prisma.$disconnect();
  await runAdminSql(ADMIN_URL, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}
