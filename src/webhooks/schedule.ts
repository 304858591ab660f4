/**
 * When a webhook is attempted again, and when an endpoint that keeps failing is disabled.
 * A schedule is the delay in seconds before each attempt, counted from the one before (the
 * first from when the event happened): `WEBHOOK_RETRY_SCHEDULE`.
 */

export type RetrySchedule = readonly number[];

/**
 * The Standard Webhooks spec's example schedule: immediately, then 5 seconds, 5 minutes,
 * 30 minutes, 2 hours, 5 hours, 10 hours and 10 hours (8 attempts over about 27.6 hours).
 */
export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = [0, 5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600];

/** `WEBHOOK_DISABLE_AFTER_HOURS`'s default: 5 days of nothing but failures. */
export const DEFAULT_DISABLE_AFTER_HOURS = 120;

/** Jitter: each delay is moved by up to this share of itself, either way. */
const JITTER = 0.1;

/** A decimal number of seconds: `0`, `5`, `0.5`; no sign, exponent, hex or `Infinity`. */
const SECONDS = /^\d+(\.\d+)?$/;

/**
 * Reads `WEBHOOK_RETRY_SCHEDULE`: comma-separated seconds (`0,5,300`; spaces around the commas
 * allowed), one per attempt. Throws an Error naming the setting and the bad item otherwise.
 */
export function parseRetrySchedule(text: string, name = 'WEBHOOK_RETRY_SCHEDULE'): RetrySchedule {
  if (text.trim() === '') throw new Error(`${name} must list at least one delay in seconds (such as 0,5,300), got "${text}"`);
  return text.split(',').map((item, index) => {
    const seconds = item.trim();
    if (!SECONDS.test(seconds)) {
      throw new Error(`${name} must be a comma-separated list of seconds (non-negative numbers, such as 0,5,300): item ${index + 1} is "${seconds}"`);
    }
    return Number(seconds);
  });
}

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
