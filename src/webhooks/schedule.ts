/**
 * When a webhook is attempted again, and when an endpoint that keeps failing is disabled.
 * A schedule is the delay in seconds before each attempt, counted from the one before (the
 * first from when the event happened): `WEBHOOK_RETRY_SCHEDULE`.
 */
import { DEFAULT_DISABLE_AFTER_HOURS, type RetrySchedule } from '../config.ts';

/** Jitter: each delay is moved by up to this share of itself, either way. */
const JITTER = 0.1;

/**
 * The delay in milliseconds before attempt `attemptsMade + 1`, or null when the schedule has
 * no more attempts. A delay is moved at random by up to ±10 % of itself (a 0 stays 0), so the
 * retries of many deliveries that failed together do not all arrive together. `random` returns
 * a number in [0, 1) (Math.random: jitter needs spread, not secrecy).
 */
export function nextAttemptDelayMs(schedule: RetrySchedule, attemptsMade: number, random: () => number = Math.random): number | null {
  const seconds = schedule[attemptsMade];
  if (seconds === undefined) return null;
  const delayMs = seconds * 1000;
  return Math.round(delayMs * (1 + JITTER * (2 * random() - 1)));
}

/**
 * True when an endpoint has failed without a success since `failingSince` (null: it is not
 * failing) for at least `disableAfterHours` (`WEBHOOK_DISABLE_AFTER_HOURS`), and is to be disabled.
 */
export function shouldDisable({
  failingSince,
  now,
  disableAfterHours = DEFAULT_DISABLE_AFTER_HOURS,
}: {
  failingSince: Date | null;
  now: Date;
  disableAfterHours?: number;
}): boolean {
  return failingSince !== null && now.getTime() - failingSince.getTime() >= disableAfterHours * 3_600_000;
}
