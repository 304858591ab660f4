/**
 * `getRequestStats`: one broker's requests in one mode, per hour or day. Whole hours come from the
 * hourly roll-up the insert trigger keeps (`api_log_hour_counts`, `api_log_hours`: migration
 * 20261202130000_stats), at most 720 rows each for 30 days whatever the traffic; only a range's
 * partial first and last hours are counted from the API log itself. Durations are a histogram
 * (STATS_DURATION_BOUNDS), so p50/p95 are a bin's lower bound. 1 M entries: bench/README.md,
 * "Request stats".
 */
import type { components } from '../../generated/api.ts';
import { bucketOf, bucketStarts, histogramPercentiles, sqlInterval, STATS_DURATION_BOUNDS, type StatsRange } from '../shared/stats-range.ts';
import type { RequestLogScope } from './store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export type RequestStatsData = components['schemas']['RequestStats'];
type Bucket = RequestStatsData['buckets'][number];
type StatusClass = keyof Bucket['status_classes'];

const CLASSES: readonly StatusClass[] = ['1xx', '2xx', '3xx', '4xx', '5xx'];
/** Buckets start at whole UTC hours or days from this origin (the Unix epoch, as bucketOf). */
const ORIGIN = new Date(0);
const HOUR = 3_600_000;

/** One bucket's counts: [status class, operation ('' for none), requests] triples, as JSON: a row per count cost more to read than the query (bench/README.md). */
interface CountRow {
  start: Date;
  counts: Array<[number, string, number]>;
}
interface HistogramRow {
  start: Date;
  /** 1-based bin (width_bucket). */
  bin: number;
  n: number;
}

/** Counts and duration bins of the API log's own entries in [gte, lt), by bucket. */
function fromLog(prisma: ReadClient, scope: RequestLogScope, step: string, gte: Date, lt: Date): Array<Promise<CountRow[] | HistogramRow[]>> {
  const where = { ...scope };
  return [
    prisma.$queryRaw<CountRow[]>`
      SELECT c."start", jsonb_agg(jsonb_build_array(c."class", c."operation", c."n")) AS "counts"
        FROM (SELECT date_bin(${step}::interval, "at", ${ORIGIN}::timestamptz) AS "start", ("status" / 100)::int AS "class", COALESCE("operation", '') AS "operation", count(*)::int AS "n"
                FROM "api_logs"
               WHERE "broker_id" = ${where.brokerId} AND "mode" = ${where.mode}::"key_mode" AND "at" >= ${gte} AND "at" < ${lt}
               GROUP BY 1, 2, 3) AS c
       GROUP BY 1`,
    prisma.$queryRaw<HistogramRow[]>`
      SELECT date_bin(${step}::interval, "at", ${ORIGIN}::timestamptz) AS "start",
             GREATEST(1, width_bucket("duration_ms", ${[...STATS_DURATION_BOUNDS]}::int[]))::int AS "bin", count(*)::int AS "n"
        FROM "api_logs"
       WHERE "broker_id" = ${where.brokerId} AND "mode" = ${where.mode}::"key_mode" AND "at" >= ${gte} AND "at" < ${lt}
       GROUP BY 1, 2`,
  ];
}

export async function requestStats(prisma: ReadClient, scope: RequestLogScope, range: StatsRange): Promise<RequestStatsData> {
  const step = sqlInterval(range.interval);
  // Whole hours [from, to) from the roll-up; what is left at either end from the log.
  const from = Math.ceil(range.gte.getTime() / HOUR) * HOUR;
  const to = Math.floor(range.lt.getTime() / HOUR) * HOUR;
  const reads: Array<Promise<CountRow[] | HistogramRow[] | Array<{ start: Date; durations: number[] }>>> = [];
  if (from >= to) {
    reads.push(...fromLog(prisma, scope, step, range.gte, range.lt));
  } else {
    if (range.gte.getTime() < from) reads.push(...fromLog(prisma, scope, step, range.gte, new Date(from)));
    if (to < range.lt.getTime()) reads.push(...fromLog(prisma, scope, step, new Date(to), range.lt));
    reads.push(
      prisma.$queryRaw<CountRow[]>`
        SELECT c."start", jsonb_agg(jsonb_build_array(c."class", c."operation", c."n")) AS "counts"
          FROM (SELECT date_bin(${step}::interval, "hour", ${ORIGIN}::timestamptz) AS "start", "status_class" AS "class", "operation", sum("requests")::int AS "n"
                  FROM "api_log_hour_counts"
                 WHERE "broker_id" = ${scope.brokerId} AND "mode" = ${scope.mode}::"key_mode" AND "hour" >= ${new Date(from)} AND "hour" < ${new Date(to)}
                 GROUP BY 1, 2, 3) AS c
         GROUP BY 1`,
      prisma.$queryRaw<Array<{ start: Date; durations: number[] }>>`
        SELECT "hour" AS "start", "durations" FROM "api_log_hours"
         WHERE "broker_id" = ${scope.brokerId} AND "mode" = ${scope.mode}::"key_mode" AND "hour" >= ${new Date(from)} AND "hour" < ${new Date(to)}`,
    );
  }
  const buckets = new Map<number, { bucket: Bucket; histogram: number[] }>(
    bucketStarts(range).map((start) => [
      start,
      {
        bucket: { start: new Date(start).toISOString(), requests: 0, status_classes: { '1xx': 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 }, operations: [], duration_ms: histogramPercentiles([]) },
        histogram: STATS_DURATION_BOUNDS.map(() => 0),
      },
    ]),
  );
  for (const rows of await Promise.all(reads)) {
    for (const row of rows) {
      const entry = buckets.get(bucketOf(row.start, range.interval));
      if (!entry) continue;
      if ('durations' in row) row.durations.forEach((n, i) => (entry.histogram[i]! += n));
      else if ('bin' in row) entry.histogram[row.bin - 1]! += row.n;
      else for (const [cls, operation, n] of row.counts) addCount(entry.bucket, cls, operation, n);
    }
  }
  const name = (o: { operation: string | null }) => o.operation ?? '\uffff';
  const data = [...buckets.values()].map(({ bucket, histogram }) => {
    // The most frequent first, then by name (an unknown path's `null` last among equals).
    bucket.operations.sort((x, y) => y.requests - x.requests || (name(x) < name(y) ? -1 : name(x) > name(y) ? 1 : 0));
    return { ...bucket, duration_ms: histogramPercentiles(histogram) };
  });
  return {
    object: 'request_stats',
    mode: scope.mode,
    interval: range.interval,
    created_gte: range.gte.toISOString(),
    created_lt: range.lt.toISOString(),
    buckets: data,
  };
}

function addCount(bucket: Bucket, statusClass: number, name: string, n: number): void {
  bucket.requests += n;
  const cls = CLASSES[statusClass - 1];
  if (cls !== undefined) bucket.status_classes[cls] += n;
  const operation = name === '' ? null : name;
  const op = bucket.operations.find((o) => o.operation === operation);
  if (op) op.requests += n;
  else bucket.operations.push({ operation, requests: n });
}
