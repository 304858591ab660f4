/**
 * `getRequestStats`: one broker's requests in one mode, per hour or day, from the API log. Two
 * grouped reads of the range, both from the (broker, mode, at, …) index alone (it carries status,
 * duration and operation: migration 20261202120000_stats_indexes): the counts by status class and
 * operation, and each bucket's duration percentiles (one sort per bucket). A 30-day range of 1 M
 * entries: bench/README.md, "Request stats".
 */
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { components } from '../../generated/api.ts';
import { bucketStarts, percentiles, sqlInterval, type StatsRange } from '../shared/stats-range.ts';
import type { RequestLogScope } from './store.ts';

export type RequestStatsData = components['schemas']['RequestStats'];
type Bucket = RequestStatsData['buckets'][number];
type StatusClass = keyof Bucket['status_classes'];

const CLASSES: readonly StatusClass[] = ['1xx', '2xx', '3xx', '4xx', '5xx'];
/** Buckets start at whole UTC hours or days from this origin (the Unix epoch, as bucketOf). */
const ORIGIN = new Date(0);

export async function requestStats(prisma: PrismaClient, scope: RequestLogScope, range: StatsRange): Promise<RequestStatsData> {
  const step = sqlInterval(range.interval);
  const [counts, durations] = await Promise.all([
    prisma.$queryRaw<Array<{ start: Date; class: number; operation: string | null; n: number }>>`
      SELECT date_bin(${step}::interval, "at", ${ORIGIN}::timestamptz) AS "start", ("status" / 100)::int AS "class", "operation", count(*)::int AS "n"
        FROM "api_logs"
       WHERE "broker_id" = ${scope.brokerId} AND "mode" = ${scope.mode}::"key_mode" AND "at" >= ${range.gte} AND "at" < ${range.lt}
       GROUP BY 1, 2, 3`,
    prisma.$queryRaw<Array<{ start: Date; p: number[] }>>`
      SELECT date_bin(${step}::interval, "at", ${ORIGIN}::timestamptz) AS "start",
             percentile_disc(ARRAY[0.5, 0.95]::float8[]) WITHIN GROUP (ORDER BY "duration_ms") AS "p"
        FROM "api_logs"
       WHERE "broker_id" = ${scope.brokerId} AND "mode" = ${scope.mode}::"key_mode" AND "at" >= ${range.gte} AND "at" < ${range.lt}
       GROUP BY 1`,
  ]);
  const buckets = new Map<number, Bucket>(
    bucketStarts(range).map((start) => [
      start,
      { start: new Date(start).toISOString(), requests: 0, status_classes: { '1xx': 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 }, operations: [], duration_ms: percentiles(null) },
    ]),
  );
  for (const row of counts) {
    const bucket = buckets.get(row.start.getTime());
    if (!bucket) continue;
    bucket.requests += row.n;
    const cls = CLASSES[row.class - 1];
    if (cls !== undefined) bucket.status_classes[cls] += row.n;
    const op = bucket.operations.find((o) => o.operation === row.operation);
    if (op) op.requests += row.n;
    else bucket.operations.push({ operation: row.operation, requests: row.n });
  }
  for (const row of durations) {
    const bucket = buckets.get(row.start.getTime());
    if (bucket) bucket.duration_ms = percentiles(row.p);
  }
  const data = [...buckets.values()];
  // The most frequent first, then by name (an unknown path's `null` last among equals).
  const name = (o: { operation: string | null }) => o.operation ?? '\uffff';
  for (const b of data) b.operations.sort((x, y) => y.requests - x.requests || (name(x) < name(y) ? -1 : name(x) > name(y) ? 1 : 0));
  return {
    object: 'request_stats',
    mode: scope.mode,
    interval: range.interval,
    created_gte: range.gte.toISOString(),
    created_lt: range.lt.toISOString(),
    buckets: data,
  };
}
