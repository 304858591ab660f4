/**
 * Admission of live reports: a broker may have at most REPORTS_CONCURRENT_PER_BROKER reports
 * running at once and start at most REPORTS_PER_HOUR_PER_BROKER in any hour. A report multiplies
 * into a workbook build and one e-mail per recipient, so the key's request rate alone bounds
 * neither the e-mail nor the load. Sandbox reports record test-mode runs that build and send
 * nothing: only live runs count, and sandbox reports are bounded only by the key's rate limit. A run counts as running until final, or until `RUNNING_MAX_AGE_MS` after its
 * creation (a dead process's run cannot block its broker forever); every run of the last hour
 * counts against the hourly bound, whatever its state.
 */
import type { Config } from '../../config.ts';
import type { Db } from '../../shared/db-errors.ts';
import { LimitReachedError } from '../../shared/errors.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { countRunningRuns, countRunsCreatedSince, nthNewestRunCreatedSince, tryLockBrokerAdmissions } from './store.ts';
import type { ReadClient, ReadTx } from '../../shared/db-errors.ts';

export interface ReportLimits {
  concurrentPerBroker: number;
  perHourPerBroker: number;
  /** Retry-After when the concurrent bound is reached: how long the API waits for a report (REPORT_WAIT_MS). */
  runningRetrySeconds: number;
}

/** A run not final this long after its creation no longer counts as running. */
export const RUNNING_MAX_AGE_MS = 3600_000;
const HOUR_MS = 3600_000;
const HOUR_SECONDS = 3600;

export function reportLimitsOf(config: Config): ReportLimits {
  return {
    concurrentPerBroker: config.reportsConcurrentPerBroker,
    perHourPerBroker: config.reportsPerHourPerBroker,
    runningRetrySeconds: Math.max(1, Math.ceil(config.reportWaitMs / 1000)),
  };
}

/** The 429 for the first bound the broker has reached, or undefined when a report may start. */
async function refusal(db: Db, limits: ReportLimits, brokerId: string, now: Date): Promise<LimitReachedError | undefined> {
  const hourAgo = new Date(now.getTime() - HOUR_MS);
  // One after the other: inside an interactive transaction the queries share one connection.
  const running = await countRunningRuns(db, brokerId, new Date(now.getTime() - RUNNING_MAX_AGE_MS));
  const lastHour = await countRunsCreatedSince(db, brokerId, hourAgo);
  const refusals: LimitReachedError[] = [];
  if (lastHour >= limits.perHourPerBroker) {
    // A report may start again when the run that brought the count to the bound leaves the hour.
    const edge = await nthNewestRunCreatedSince(db, brokerId, hourAgo, limits.perHourPerBroker);
    const retryAfter = edge ? Math.min(HOUR_SECONDS, Math.max(1, Math.ceil((edge.getTime() + HOUR_MS - now.getTime()) / 1000))) : 1;
    refusals.push(
      tooMany(
        `Report limit reached: this broker may start ${limits.perHourPerBroker} reports per hour; retry after ${retryAfter} seconds`,
        { reason: 'reports_per_hour_per_broker', limit: limits.perHourPerBroker, window_seconds: HOUR_SECONDS, retry_after: retryAfter },
      ),
    );
  }
  if (running >= limits.concurrentPerBroker) {
    const retryAfter = limits.runningRetrySeconds;
    refusals.push(
      tooMany(
        `Report limit reached: this broker may have ${limits.concurrentPerBroker} reports running at once; retry after ${retryAfter} seconds`,
        { reason: 'reports_concurrent_per_broker', limit: limits.concurrentPerBroker, retry_after: retryAfter },
      ),
    );
  }
  // Both reached: the longer wait is the one that lets a report through.
  return refusals.sort((a, b) => b.retryAfterSeconds - a.retryAfterSeconds)[0];
}

function tooMany(message: string, details: Record<string, string | number> & { retry_after: number }): LimitReachedError {
  const { retry_after: retryAfter, ...rest } = details;
  return new LimitReachedError(message, retryAfter, rest);
}

/**
 * The early check of a live report request, before any report work (the counting query of a big
 * report is not cheap): throws `429 rate_limit_exceeded` when the broker is at a bound. Not
 * atomic; `admitReportRun`, where the run is created, is.
 */
export async function checkReportLimits(prisma: ReadClient, config: Config, brokerId: string, now = new Date()): Promise<void> {
  const refused = await refusal(prisma, reportLimitsOf(config), brokerId, now);
  if (refused) throw refused;
}

/** How long a report waits for the broker's other admissions before it is refused (`429`, retry after 1 second). */
export const ADMISSION_WAIT_MS = 3000;
const ADMISSION_RETRY_AFTER_SECONDS = 1;

/** No admission of this broker was free in time: a 429 like the concurrent bound's, asking for a retry soon. */
function admissionBusy(limits: ReportLimits): LimitReachedError {
  return tooMany(
    `Report limit reached: this broker's other reports are being admitted; retry after ${ADMISSION_RETRY_AFTER_SECONDS} seconds`,
    { reason: 'reports_concurrent_per_broker', limit: limits.concurrentPerBroker, retry_after: ADMISSION_RETRY_AFTER_SECONDS },
  );
}

const BUSY = Symbol('busy');

/**
 * Creates a report run (`create`, inside the admission's transaction) if the broker is under
 * both bounds, or throws `429 rate_limit_exceeded`. One broker's admissions take a transaction
 * advisory lock on the broker, so concurrent requests count one after another and never both
 * slip past a bound; other brokers' admissions do not wait. The lock is tried, never waited on
 * inside the transaction: a busy lock ends the transaction and is tried again after a short,
 * random pause, for at most `waitMs`, then the report is refused with a `429` (issue 45 item 3).
 */
export async function admitReportRun<T>(
  prisma: ReadClient,
  limits: ReportLimits,
  brokerId: string,
  create: (tx: ReadTx) => Promise<T>,
  waitMs = ADMISSION_WAIT_MS,
): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    const admitted = await prisma.$transaction(async (tx) => {
      if (!(await tryLockBrokerAdmissions(tx, brokerId))) return BUSY;
      // The counts read after the lock see every run the previous holder committed (read committed).
      const refused = await refusal(tx, limits, brokerId, new Date());
      if (refused) throw refused;
      return { run: await create(tx) };
    });
    if (admitted !== BUSY) return admitted.run;
    const left = deadline - Date.now();
    if (left <= 0) throw admissionBusy(limits);
    // Random pauses, growing to 250 ms, so the waiting admissions neither retry in step nor spend
    // the database's time on attempts (a burst of 40 at 100 ms pauses admitted 4 in 3 s).
    await sleep(Math.min(left, (0.5 + Math.random() / 2) * Math.min(250, 20 * 2 ** attempt)));
  }
}
