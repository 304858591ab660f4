/**
 * `getWebhookEndpointStats`: one endpoint's deliveries per hour or day of their making, how they
 * stand (a failed one `recovered` when a later delivery of its event to the endpoint succeeded, as
 * `superseded_by` says in the deliveries list) and their attempts' latency percentiles. The
 * endpoint is looked up in the key's scope first, so another broker's or mode's is not found.
 */
import type { components } from '../../generated/api.ts';
import { bucketStarts, percentiles, sqlInterval, type StatsRange } from '../shared/stats-range.ts';
import { findEndpoint, type EndpointScope } from './endpoint-store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export type EndpointStatsData = components['schemas']['WebhookEndpointStats'];
type Bucket = EndpointStatsData['buckets'][number];

const ORIGIN = new Date(0);

interface CountRow {
  start: Date;
  deliveries: number;
  succeeded: number;
  failed: number;
  recovered: number;
  pending: number;
  attempts: number;
}

export async function endpointStats(prisma: ReadClient, scope: EndpointScope, endpointId: string, range: StatsRange): Promise<EndpointStatsData> {
  await findEndpoint(prisma, scope, endpointId);
  const step = sqlInterval(range.interval);
  const [counts, latencies] = await Promise.all([
    prisma.$queryRaw<CountRow[]>`
      SELECT date_bin(${step}::interval, d."created_at", ${ORIGIN}::timestamptz) AS "start",
             count(*)::int AS "deliveries",
             (count(*) FILTER (WHERE d."status" = 'delivered'))::int AS "succeeded",
             (count(*) FILTER (WHERE d."status" = 'failed'))::int AS "failed",
             (count(*) FILTER (WHERE d."status" = 'failed' AND EXISTS (
               SELECT 1 FROM "webhook_deliveries" n
                WHERE n."event_id" = d."event_id" AND n."endpoint_id" = d."endpoint_id" AND n."id" > d."id" AND n."status" = 'delivered')))::int AS "recovered",
             (count(*) FILTER (WHERE d."status" = 'pending'))::int AS "pending",
             COALESCE(sum(d."attempts"), 0)::int AS "attempts"
        FROM "webhook_deliveries" d
       WHERE d."endpoint_id" = ${endpointId} AND d."created_at" >= ${range.gte} AND d."created_at" < ${range.lt}
       GROUP BY 1`,
    prisma.$queryRaw<Array<{ start: Date; p: number[] }>>`
      SELECT date_bin(${step}::interval, d."created_at", ${ORIGIN}::timestamptz) AS "start",
             percentile_disc(ARRAY[0.5, 0.95]::float8[]) WITHIN GROUP (ORDER BY a."duration_ms") AS "p"
        FROM "webhook_deliveries" d JOIN "webhook_attempts" a ON a."delivery_id" = d."id"
       WHERE d."endpoint_id" = ${endpointId} AND d."created_at" >= ${range.gte} AND d."created_at" < ${range.lt}
       GROUP BY 1`,
  ]);
  const buckets = new Map<number, Bucket>(
    bucketStarts(range).map((start) => [
      start,
      { start: new Date(start).toISOString(), deliveries: 0, succeeded: 0, failed: 0, recovered: 0, pending: 0, attempts: 0, latency_ms: percentiles(null) },
    ]),
  );
  for (const { start, ...row } of counts) {
    const bucket = buckets.get(start.getTime());
    if (bucket) Object.assign(bucket, row);
  }
  for (const row of latencies) {
    const bucket = buckets.get(row.start.getTime());
    if (bucket) bucket.latency_ms = percentiles(row.p);
  }
  return {
    object: 'webhook_endpoint_stats',
    endpoint_id: endpointId,
    interval: range.interval,
    created_gte: range.gte.toISOString(),
    created_lt: range.lt.toISOString(),
    buckets: [...buckets.values()],
  };
}
