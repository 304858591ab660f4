/**
 * The range and buckets of the stats operations (`getRequestStats`, `getWebhookEndpointStats`):
 * whole UTC hours or days, at most STATS_MAX_DAYS (the time request logs and deliveries are kept).
 */
import { InvalidValueError } from './errors.ts';

export type StatsInterval = 'hour' | 'day';

export interface StatsRange {
  interval: StatsInterval;
  /** Inclusive. */
  gte: Date;
  /** Exclusive. */
  lt: Date;
}

export const STATS_MAX_DAYS = 30;

const DAY_MS = 86_400_000;
export const INTERVAL_MS: Record<StatsInterval, number> = { hour: 3_600_000, day: DAY_MS };
/** The range a missing end spans: a day of hours, or the whole 30 days of days. */
const DEFAULT_SPAN_MS: Record<StatsInterval, number> = { hour: DAY_MS, day: STATS_MAX_DAYS * DAY_MS };
/** What PostgreSQL stores (src/shared/dates.ts): a default end or start never leaves it. */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

const clamp = (ms: number): Date => new Date(Math.min(LATEST, Math.max(EARLIEST, ms)));

/**
 * The range asked for: a missing end is `now` (or the start plus the interval's default span when
 * the start is given, so a fixed date stays a valid question), a missing start the end less that
 * span. Empty or longer than STATS_MAX_DAYS is `400 invalid_parameter` naming `created_gte`.
 */
export function statsRange(interval: StatsInterval, gte: Date | undefined, lt: Date | undefined, now: Date): StatsRange {
  const span = DEFAULT_SPAN_MS[interval];
  const end = lt ?? (gte !== undefined ? clamp(gte.getTime() + span) : now);
  const start = gte ?? clamp(end.getTime() - span);
  if (start >= end) {
    throw new InvalidValueError('created_gte', 'query', 'range', `must be before created_lt (${end.toISOString()})`);
  }
  if (end.getTime() - start.getTime() > STATS_MAX_DAYS * DAY_MS) {
    const earliest = new Date(end.getTime() - STATS_MAX_DAYS * DAY_MS).toISOString();
    throw new InvalidValueError('created_gte', 'query', 'max_range', `must be at most ${STATS_MAX_DAYS} days before created_lt (${end.toISOString()}), at or after ${earliest}`);
  }
  return { interval, gte: start, lt: end };
}

/** The start of the bucket holding `at`. */
export function bucketOf(at: Date, interval: StatsInterval): number {
  const step = INTERVAL_MS[interval];
  return Math.floor(at.getTime() / step) * step;
}

/** The start of every bucket the range touches, oldest first. */
export function bucketStarts(range: StatsRange): number[] {
  const step = INTERVAL_MS[range.interval];
  const starts: number[] = [];
  for (let at = bucketOf(range.gte, range.interval); at < range.lt.getTime(); at += step) starts.push(at);
  return starts;
}

/** `date_bin`'s argument for the interval (buckets from the Unix epoch, UTC, as bucketOf). */
export const sqlInterval = (interval: StatsInterval): string => (interval === 'hour' ? '1 hour' : '1 day');

/** A bucket's percentiles as answers show them: `null` where the bucket had no durations. */
export function percentiles(values: number[] | null | undefined): { p50: number | null; p95: number | null } {
  return { p50: values?.[0] ?? null, p95: values?.[1] ?? null };
}
