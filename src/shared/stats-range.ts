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

/**
 * The lower bounds of getRequestStats' duration bins, in ms (the hourly roll-up's histogram,
 * migration 20261202130000_stats, holds the same list): one a millisecond up to 10 ms, then wider
 * bins, about three to each doubling.
 */
export const STATS_DURATION_BOUNDS: readonly number[] = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 25, 30, 40, 50, 60, 70, 80, 100, 120, 150, 200, 250, 300, 400, 500, 600, 700, 800, 1000, 1200, 1500,
  2000, 2500, 3000, 4000, 5000, 6000, 7000, 8000, 10000, 12000, 15000, 20000, 25000, 30000, 40000, 50000, 60000,
];

/**
 * p50 and p95 of a histogram over STATS_DURATION_BOUNDS, as percentile_disc would take them (the
 * first value at or past the rank), each the lower bound of the bin holding it; `null` when empty.
 */
export function histogramPercentiles(counts: readonly number[]): { p50: number | null; p95: number | null } {
  const total = counts.reduce((n, c) => n + c, 0);
  if (total === 0) return percentiles(null);
  const at = (p: number): number => {
    const rank = Math.ceil(p * total);
    let seen = 0;
    for (let i = 0; i < counts.length; i++) {
      seen += counts[i]!;
      if (seen >= rank) return STATS_DURATION_BOUNDS[i]!;
    }
    return STATS_DURATION_BOUNDS.at(-1)!;
  };
  return { p50: at(0.5), p95: at(0.95) };
}
