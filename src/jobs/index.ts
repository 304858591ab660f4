/**
 * Background work on BullMQ: reports (build one workbook, then one e-mail job per recipient) and
 * single e-mails (the password notice). API processes enqueue and wait (mode `producer`); worker
 * processes run the jobs (mode `worker`); `npm start` and the tests do both in one process.
 *
 * The database is the record of every report run and recipient; Redis is only the work queue.
 *
 *   request ── count rows (400 no_data when none) ── ReportRun (queued) + ReportRecipient rows (pending)
 *      └─ reports:build ── run → building ── streams the .xlsx to $DATA_DIR/tmp/<run>.xlsx ── run → sending
 *            └─ mail:send × recipients: claim (pending → sending) ── SMTP ── record sent / failed
 *                 └─ the last recipient's outcome completes the run (counts, file removed)
 *
 * - A send is claimed in the database before the SMTP conversation and recorded after it; a record
 *   that fails is retried (through a database outage), never the send. Every copy of a recipient's
 *   e-mail carries the same Message-ID, so the one case that can send twice (a worker that dies
 *   between the server's acceptance and the record) is recognisable.
 * - The reconciler (each worker, on start and every REPORT_RECONCILE_MS) finds runs and recipients
 *   that have no live job (Redis lost them, a worker died, a completion failed) and resumes or
 *   finishes them, so no run or recipient stays under way, whatever Redis lost.
 * - The request waits (REPORT_WAIT_MS) by reading the records, and counts only final outcomes as
 *   sent or failed; a recipient still under way is pending.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Job, Queue, Worker, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import type { RedisEndpoint } from '../redis.ts';
import { reportBuilders } from '../reports/index.ts';
import { admitReportRun, reportLimitsOf } from '../reports/limits.ts';
import { XLSX_MEDIA_TYPE } from '../reports/builder.ts';
import { createMailer, describeMailError, isTransientMailError, type Mailer } from './mailer.ts';
import { recordMailFailed, recordMailSent } from '../ops/metrics.ts';
import { collectGarbage } from '../gc.ts';
import {
  ReportGenerationError,
  ReportNoDataError,
  type CreateJobsOptions,
  type Jobs,
  type MailMessage,
  type ReportResult,
  type ReportSpec,
  type ReportTotals,
  type ServiceStatusFilter,
} from './types.ts';

export * from './types.ts';
export { createMailer, isTransientMailError, describeMailError } from './mailer.ts';

export const REPORTS_QUEUE = 'reports';
export const MAIL_QUEUE = 'mail';
export const DEFAULT_PREFIX = 'capi';

interface BuildJobData {
  runId: string;
}

interface SendJobData {
  /** A notice e-mail (no record); report e-mails carry `recipientId` instead and are built from the records. */
  message?: MailMessage;
  recipientId?: number;
}

const buildJobId = (runId: string) => `build.${runId}`;
const sendJobId = (recipientId: number) => `send.${recipientId}`;

/** Finished jobs are kept a while for operators (`bull` UIs), then dropped; the database keeps the record. */
const KEEP: Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'> = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 5000 },
};

/** A job still to run or running: the reconciler leaves its run or recipient alone. */
const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/**
 * Queue-level tries of a report e-mail job. The recipient's own attempts (MAIL_ATTEMPTS) are
 * counted in its record; these also cover a database that is away when the job runs.
 */
const REPORT_SEND_JOB_ATTEMPTS = 25;
const BUILD_JOB_ATTEMPTS = 5;
const MAX_RETRY_DELAY_MS = 10 * 60_000;
const STALLED_AFTER_MS = 15_000;

/** Temp workbooks older than this are swept at worker start (a run that never finished). */
const STALE_TMP_MS = 24 * 3600 * 1000;

export function tmpDirOf(config: Config): string {
  return path.join(config.dataDir, 'tmp');
}

/** Where a run's workbook is kept while its e-mails go out. */
function workbookOf(config: Config, runId: string): string {
  return path.join(tmpDirOf(config), `${runId}.xlsx`);
}

/** The Message-ID of every copy of one report e-mail, on the domain of MAIL_FROM. */
export function reportMessageId(config: Config, runId: string, recipientId: number): string {
  const address = /<([^>]+)>/.exec(config.mailFrom)?.[1] ?? config.mailFrom;
  const domain = address.includes('@') ? address.slice(address.lastIndexOf('@') + 1).trim() : 'localhost';
  return `<report.${runId}.${recipientId}@${domain || 'localhost'}>`;
}

/** How long the reconciler lets a run or recipient sit unchanged, or a claim go unrenewed, before it acts. */
export function staleAfterMs(config: Config): number {
  return Math.max(1000, 2 * config.reportReconcileMs);
}

function retryDelay(config: Config, attemptsMade: number): number {
  return Math.min(MAX_RETRY_DELAY_MS, config.mailRetryDelayMs * 2 ** Math.max(0, attemptsMade - 1));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createJobs(options: CreateJobsOptions): Jobs {
  const { redisEndpoint, prisma, config, logger, mode } = options;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  let closing = false;
  const isClosing = () => closing;
  const log = logger.child({ component: 'jobs' });
  const isProducer = mode === 'producer' || mode === 'both';
  const isWorker = mode === 'worker' || mode === 'both';

  // A fail-fast connection (a Redis outage answers at once instead of hanging a request) shared by both queues.
  const producerRedis = new Redis({
    ...redisEndpoint.options,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    commandTimeout: 3000,
    retryStrategy: (times) => (closing ? null : Math.min(times * 100, 1000)),
  });
  producerRedis.on('error', (err) => log.debug({ err }, 'producer redis error'));
  // skipVersionCheck: BullMQ keeps a timed-out start-up INFO as a permanent failure of the queue, so a
  // busy start would fail every later report; the workers still check the Redis version.
  const reportsQueue = new Queue(REPORTS_QUEUE, { connection: producerRedis, prefix, defaultJobOptions: KEEP, skipVersionCheck: true });
  const mailQueue = new Queue(MAIL_QUEUE, { connection: producerRedis, prefix, defaultJobOptions: KEEP, skipVersionCheck: true });
  for (const q of [reportsQueue, mailQueue]) q.on('error', (err) => log.debug({ err }, 'queue error'));

  // Worker side, made on startWorkers().
  let workers: Worker[] = [];
  let mailer: Mailer | undefined;
  let started: Promise<void> | undefined;
  let reconcileTimer: NodeJS.Timeout | undefined;
  let reconciling: Promise<void> | undefined;

  /**
   * Adds a job under its fixed id. BullMQ ignores an add whose id it still holds, so a finished or
   * failed job of that id is removed first; a live one is left as it is.
   */
  async function enqueue(queue: Queue, name: string, jobId: string, data: object, opts: JobsOptions): Promise<void> {
    const state = await queue.getJobState(jobId);
    if (LIVE_STATES.has(state)) return;
    if (state !== 'unknown') await queue.remove(jobId).catch(() => undefined);
    await queue.add(name, data, { ...opts, jobId });
  }

  const enqueueBuild = (runId: string) =>
    enqueue(reportsQueue, 'build', buildJobId(runId), { runId } satisfies BuildJobData, {
      attempts: BUILD_JOB_ATTEMPTS,
      backoff: { type: 'retry' },
    });

  const enqueueSend = (recipientId: number) =>
    enqueue(mailQueue, 'send', sendJobId(recipientId), { recipientId } satisfies SendJobData, {
      attempts: REPORT_SEND_JOB_ATTEMPTS,
      backoff: { type: 'retry' },
    });

  /**
   * Writes an outcome that must not be lost: tried until it is recorded, with back-off, through a
   * database outage. While the process shuts down it keeps trying until the worker's close bound cuts it.
   */
  async function record(what: string, write: () => Promise<unknown>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await write();
        return;
      } catch (err) {
        if (attempt === 1 || attempt % 20 === 0) log.warn({ err, what, attempt }, 'recording failed; trying again');
        await sleep(Math.min(5000, 100 * 2 ** Math.min(attempt - 1, 6)));
      }
    }
  }

  function specOf(run: {
    reportType: 'invoices' | 'services';
    brokerId: string;
    apiKeyId: string | null;
    startDate: Date | null;
    endDate: Date | null;
    statusFilter: string | null;
  }): ReportSpec {
    return {
      type: run.reportType,
      brokerId: run.brokerId,
      apiKeyId: run.apiKeyId,
      recipients: [],
      ...(run.startDate ? { startDate: run.startDate.toISOString().slice(0, 10) } : {}),
      ...(run.endDate ? { endDate: run.endDate.toISOString().slice(0, 10) } : {}),
      statusFilter: (run.statusFilter ?? null) as ServiceStatusFilter | null,
    };
  }

  async function processBuild(job: Job<BuildJobData>): Promise<{ rows: number } | { skipped: string }> {
    const { runId } = job.data;
    // Only a run that still needs its workbook is built; a repeated job finds it past that and stops.
    const claimed = await prisma.reportRun.updateMany({ where: { id: runId, status: { in: ['queued', 'building'] } }, data: { status: 'building' } });
    if (claimed.count === 0) return { skipped: 'run is not waiting for a build' };
    const run = await prisma.reportRun.findUniqueOrThrow({ where: { id: runId } });
    const spec = specOf(run);
    const builder = reportBuilders[spec.type];
    const file = workbookOf(config, runId);
    const partial = `${file}.${randomUUID().slice(0, 8)}.partial`;
    const started = Date.now();
    let written;
    try {
      await mkdir(path.dirname(file), { recursive: true });
      written = await builder.write(prisma, spec, { maxId: run.snapshotMaxId }, partial, run.generatedAt);
      await rename(partial, file);
    } catch (err) {
      await rm(partial, { force: true }).catch(() => undefined);
      const reason = err instanceof Error ? err.message : String(err);
      log.error({ err, runId, attempt: job.attemptsMade + 1 }, 'report build failed');
      if (job.attemptsMade + 1 >= BUILD_JOB_ATTEMPTS) await failRun(runId, `report could not be generated: ${reason}`);
      throw err;
    }
    // The build's garbage goes before the e-mails make theirs (src/gc.ts).
    collectGarbage();
    await record('workbook built', () =>
      prisma.reportRun.updateMany({ where: { id: runId, status: 'building' }, data: { status: 'sending', totals: written.totals as object } }),
    );
    const pending = await prisma.reportRecipient.findMany({ where: { reportRunId: runId, status: 'pending' }, select: { id: true } });
    for (const r of pending) await enqueueSend(r.id);
    log.info({ runId, type: spec.type, rows: written.rows, ms: Date.now() - started }, 'report workbook built');
    return { rows: written.rows };
  }

  /** A run whose workbook cannot be built: it and every recipient still open end failed; nothing was sent. */
  async function failRun(runId: string, error: string): Promise<void> {
    const message = error.slice(0, 1000);
    await record('run failed', () =>
      prisma.$transaction([
        prisma.reportRecipient.updateMany({ where: { reportRunId: runId, status: 'pending' }, data: { status: 'failed', error: message } }),
        prisma.reportRun.updateMany({
          where: { id: runId, status: { in: ['queued', 'building'] } },
          data: { status: 'failed', error: message, completedAt: new Date() },
        }),
      ]),
    );
    await recount(runId);
  }

  /** The run's counts from its recipients' records; completes a `sending` run once none is open. */
  async function recount(runId: string): Promise<void> {
    const rows = await prisma.reportRecipient.groupBy({ by: ['status'], where: { reportRunId: runId }, _count: { _all: true } });
    const count = (status: string) => rows.find((r) => r.status === status)?._count._all ?? 0;
    const open = count('pending') + count('sending');
    const counts = { recipientsSent: count('sent'), recipientsFailed: count('failed') };
    if (open > 0) {
      await prisma.reportRun.update({ where: { id: runId }, data: counts });
      return;
    }
    const done = await prisma.reportRun.updateMany({
      where: { id: runId, status: 'sending' },
      data: { ...counts, status: 'completed', completedAt: new Date() },
    });
    if (done.count > 0) {
      await rm(workbookOf(config, runId), { force: true });
      log.info({ runId, sent: counts.recipientsSent, failed: counts.recipientsFailed }, 'report run completed');
    } else {
      await prisma.reportRun.update({ where: { id: runId }, data: counts });
    }
  }

  async function processSend(job: Job<SendJobData>): Promise<unknown> {
    if (job.data.recipientId !== undefined) return processReportSend(job, job.data.recipientId);
    const message = job.data.message!;
    try {
      const info = await mailer!.send(message);
      recordMailSent('notice');
      return { messageId: info.messageId };
    } catch (err) {
      const final = !isTransientMailError(err) || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      log.warn({ attempt: job.attemptsMade + 1, final, error: describeMailError(err) }, 'notice e-mail send failed');
      if (final) recordMailFailed('notice');
      throw err;
    }
  }

  async function processReportSend(job: Job<SendJobData>, recipientId: number): Promise<unknown> {
    // The claim comes before the SMTP conversation: no claim, no send.
    const claimed = await prisma.reportRecipient.updateMany({
      where: { id: recipientId, status: 'pending', reportRun: { is: { status: 'sending' } } },
      data: { status: 'sending', claimedAt: new Date(), attempts: { increment: 1 } },
    });
    if (claimed.count === 0) return { skipped: 'recipient is not waiting for a send' };
    const recipient = await prisma.reportRecipient.findUniqueOrThrow({ where: { id: recipientId }, include: { reportRun: true } });
    const run = recipient.reportRun;
    const file = workbookOf(config, run.id);
    if (!existsSync(file)) {
      // The workbook is gone (another host's disk, a swept tmp dir): build it again, then send.
      log.warn({ runId: run.id, recipientId }, 'report workbook missing; building it again');
      await prisma.$transaction([
        prisma.reportRecipient.update({ where: { id: recipientId }, data: { status: 'pending', claimedAt: null, attempts: { decrement: 1 } } }),
        prisma.reportRun.updateMany({ where: { id: run.id, status: 'sending' }, data: { status: 'queued' } }),
      ]);
      await enqueueBuild(run.id);
      return { skipped: 'workbook rebuilt' };
    }
    const spec = specOf(run);
    const builder = reportBuilders[spec.type];
    const message: MailMessage = {
      to: recipient.email,
      subject: builder.subject(spec),
      text: builder.text(spec, run.totals as unknown as ReportTotals, run.generatedAt.toISOString()),
      attachments: [{ filename: builder.attachmentName(spec), path: file, contentType: XLSX_MEDIA_TYPE }],
      messageId: reportMessageId(config, run.id, recipientId),
    };
    const heartbeat = setInterval(() => {
      void prisma.reportRecipient
        .updateMany({ where: { id: recipientId, status: 'sending' }, data: { claimedAt: new Date() } })
        .catch(() => undefined);
    }, Math.max(250, Math.floor(staleAfterMs(config) / 4)));
    let outcome: { sent: true; messageId: string } | { sent: false; error: string; final: boolean };
    try {
      const info = await mailer!.send(message);
      outcome = { sent: true, messageId: info.messageId };
    } catch (err) {
      const final = !isTransientMailError(err) || recipient.attempts >= config.mailAttempts;
      outcome = { sent: false, error: describeMailError(err), final };
    } finally {
      clearInterval(heartbeat);
    }

    if (outcome.sent) {
      recordMailSent('report');
      const { messageId } = outcome;
      await record('e-mail sent', () =>
        prisma.reportRecipient.update({ where: { id: recipientId }, data: { status: 'sent', messageId, sentAt: new Date(), error: null, claimedAt: null } }),
      );
      await record('run counts', () => recount(run.id));
      return { messageId };
    }
    log.warn({ runId: run.id, recipientId, attempt: recipient.attempts, final: outcome.final, error: outcome.error }, 'e-mail send failed');
    const { error, final } = outcome;
    await record('e-mail failed', () =>
      prisma.reportRecipient.update({ where: { id: recipientId }, data: { status: final ? 'failed' : 'pending', error, claimedAt: null } }),
    );
    if (final) {
      recordMailFailed('report');
      await record('run counts', () => recount(run.id));
      return { failed: error };
    }
    // A transient failure: the queue tries again after the back-off (MAIL_RETRY_DELAY_MS, doubling).
    throw new Error(error);
  }

  /**
   * Resumes what has no live job: runs waiting for a build, recipients waiting for a send, sends
   * whose worker stopped renewing its claim, and runs whose last outcome is in but that were never
   * completed. Safe to run in several workers at once: every step is a conditional update or an
   * enqueue under a fixed job id.
   */
  async function reconcile(): Promise<void> {
    const before = new Date(Date.now() - staleAfterMs(config));
    const stuckRuns = await prisma.reportRun.findMany({
      where: { status: { in: ['queued', 'building'] }, updatedAt: { lt: before } },
      select: { id: true },
      take: 100,
    });
    for (const run of stuckRuns) {
      if (LIVE_STATES.has(await reportsQueue.getJobState(buildJobId(run.id)))) continue;
      log.warn({ runId: run.id }, 'resuming a report run that had no build job');
      await prisma.reportRun.update({ where: { id: run.id }, data: { updatedAt: new Date() } });
      await enqueueBuild(run.id);
    }
    const abandoned = await prisma.reportRecipient.findMany({
      where: { status: 'sending', claimedAt: { lt: before } },
      select: { id: true, claimedAt: true, reportRunId: true },
      take: 500,
    });
    for (const r of abandoned) {
      // The worker that claimed it stopped renewing the claim: it died, maybe after the server accepted.
      const released = await prisma.reportRecipient.updateMany({
        where: { id: r.id, status: 'sending', claimedAt: r.claimedAt },
        data: { status: 'pending', claimedAt: null },
      });
      if (released.count === 0) continue;
      log.warn({ runId: r.reportRunId, recipientId: r.id }, 'releasing an abandoned send');
      await enqueueSend(r.id);
    }
    const waiting = await prisma.reportRecipient.findMany({
      where: { status: 'pending', updatedAt: { lt: before }, reportRun: { is: { status: 'sending' } } },
      select: { id: true, reportRunId: true },
      take: 500,
    });
    for (const r of waiting) {
      if (LIVE_STATES.has(await mailQueue.getJobState(sendJobId(r.id)))) continue;
      log.warn({ runId: r.reportRunId, recipientId: r.id }, 'resuming a report e-mail that had no job');
      await prisma.reportRecipient.update({ where: { id: r.id }, data: { updatedAt: new Date() } });
      await enqueueSend(r.id);
    }
    const unfinished = await prisma.reportRun.findMany({
      where: { status: 'sending', updatedAt: { lt: before }, recipients: { none: { status: { in: ['pending', 'sending'] } } } },
      select: { id: true },
      take: 100,
    });
    for (const run of unfinished) await recount(run.id);
  }

  function scheduleReconcile(delayMs: number): void {
    if (closing) return;
    reconcileTimer = setTimeout(() => {
      reconciling = reconcile()
        .catch((err: unknown) => log.warn({ err }, 'report reconciliation failed; trying again later'))
        .finally(() => {
          reconciling = undefined;
          scheduleReconcile(config.reportReconcileMs);
        });
    }, delayMs);
    reconcileTimer.unref();
  }

  async function sweepTmp(): Promise<void> {
    const dir = tmpDirOf(config);
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names) {
      const file = path.join(dir, name);
      const info = await stat(file).catch(() => undefined);
      if (info && Date.now() - info.mtimeMs > STALE_TMP_MS) await rm(file, { force: true });
    }
  }

  function startWorkers(): Promise<void> {
    if (!isWorker) return Promise.reject(new Error(`createJobs mode "${mode}" runs no workers`));
    started ??= (async () => {
      mailer = createMailer(config);
      const settings = { backoffStrategy: (attemptsMade: number) => retryDelay(config, attemptsMade) };
      // A job of a worker that died is handed to another within two of these (its lock expires and a
      // stalled-job check sees it): shorter than BullMQ's 30 s, still far above a lock renewal (half of it).
      const stalled = { lockDuration: STALLED_AFTER_MS, stalledInterval: STALLED_AFTER_MS };
      // Two builds at a time: more made other brokers' requests wait behind the builds' database
      // work and CPU in the same process (`npm start`) for little gain in report time (bench/README.md).
      const reportsWorker = new Worker<BuildJobData>(REPORTS_QUEUE, processBuild, {
        connection: workerOptions(redisEndpoint, isClosing),
        prefix,
        concurrency: 2,
        settings,
        ...stalled,
      });
      const mailWorker = new Worker<SendJobData>(MAIL_QUEUE, processSend, {
        connection: workerOptions(redisEndpoint, isClosing),
        prefix,
        concurrency: 10,
        settings,
        ...stalled,
      });
      workers = [reportsWorker, mailWorker];
      for (const w of workers) w.on('error', (err) => log.warn({ err }, 'worker error'));
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await sweepTmp();
      // On start, then periodically: whatever Redis lost or a dead worker left is picked up again.
      scheduleReconcile(0);
      log.info({ mail: mailer.describe, prefix, reconcileMs: config.reportReconcileMs }, 'job workers started');
    })();
    return started;
  }

  interface Outcome {
    status: string;
    sent: number;
    failed: number;
    pending: number;
    error: string | null;
  }

  async function outcomeOf(runId: string): Promise<Outcome> {
    const [run, rows] = await Promise.all([
      prisma.reportRun.findUniqueOrThrow({ where: { id: runId }, select: { status: true, error: true } }),
      prisma.reportRecipient.groupBy({ by: ['status'], where: { reportRunId: runId }, _count: { _all: true } }),
    ]);
    const count = (status: string) => rows.find((r) => r.status === status)?._count._all ?? 0;
    return { status: run.status, error: run.error, sent: count('sent'), failed: count('failed'), pending: count('pending') + count('sending') };
  }

  async function runReport<T extends ReportTotals>(spec: ReportSpec): Promise<ReportResult<T>> {
    if (!isProducer) throw new Error(`createJobs mode "${mode}" cannot run reports`);
    const deadline = Date.now() + config.reportWaitMs;
    const builder = reportBuilders[spec.type];
    const counted = await builder.count(prisma, spec);
    if (counted.rows === 0 && !spec.allowEmpty) throw new ReportNoDataError(spec);
    const generatedAt = new Date();
    // Counted and created in one transaction: concurrent requests cannot both pass a bound (429).
    const run = await admitReportRun(prisma, reportLimitsOf(config), spec.brokerId, (tx) => tx.reportRun.create({
      data: {
        id: randomUUID(),
        brokerId: spec.brokerId,
        apiKeyId: spec.apiKeyId,
        reportType: spec.type,
        startDate: spec.startDate ? new Date(`${spec.startDate}T00:00:00Z`) : null,
        endDate: spec.endDate ? new Date(`${spec.endDate}T00:00:00Z`) : null,
        statusFilter: spec.statusFilter ?? null,
        totals: counted.totals as object,
        snapshotMaxId: counted.snapshot.maxId,
        generatedAt,
        recipients: { create: spec.recipients.map((email) => ({ email })) },
      },
      select: { id: true },
    }));
    try {
      await enqueueBuild(run.id);
    } catch (err) {
      // Not queued at all: the run ends failed, so no worker sends what the caller was told failed.
      const reason = `the report could not be queued: ${err instanceof Error ? err.message : String(err)}`;
      await prisma.$transaction([
        prisma.reportRecipient.updateMany({ where: { reportRunId: run.id, status: 'pending' }, data: { status: 'failed', error: reason } }),
        prisma.reportRun.updateMany({
          where: { id: run.id, status: 'queued' },
          data: { status: 'failed', error: reason, recipientsFailed: spec.recipients.length, completedAt: new Date() },
        }),
      ]).catch((recordErr: unknown) => log.error({ err: recordErr, runId: run.id }, 'could not record a report that was not queued'));
      throw err;
    }

    // From here on the e-mails are handed over: the answer is what the records say when the wait ends.
    let known: Outcome = { status: 'queued', error: null, sent: 0, failed: 0, pending: spec.recipients.length };
    for (let delay = 25; ; delay = Math.min(250, Math.ceil(delay * 1.5))) {
      try {
        known = await outcomeOf(run.id);
      } catch (err) {
        log.warn({ err, runId: run.id }, 'could not read the report outcome; answering with what was last read');
      }
      if (known.status === 'failed') throw new ReportGenerationError(run.id, known.error ?? 'unknown reason');
      if (known.pending === 0 && known.status !== 'queued' && known.status !== 'building') break;
      const left = deadline - Date.now();
      if (left <= 0) {
        log.info({ runId: run.id, pending: known.pending }, 'report wait ended with e-mails still under way');
        break;
      }
      await sleep(Math.min(delay, left));
    }
    return {
      runId: run.id,
      recipientsSent: known.sent,
      recipientsFailed: known.failed,
      recipientsPending: known.pending,
      totals: counted.totals as T,
      generatedAt: generatedAt.toISOString(),
    };
  }

  async function sendMail(message: MailMessage): Promise<void> {
    if (!isProducer) throw new Error(`createJobs mode "${mode}" cannot enqueue mail`);
    await mailQueue.add('send', { message } satisfies SendJobData, {
      attempts: config.mailAttempts,
      backoff: { type: 'retry' },
    });
  }

  async function close(): Promise<void> {
    // Workers first (they finish their active jobs), then everything that feeds them. Bounded: with
    // Redis gone, BullMQ's close would wait forever, so after the grace period everything is forced.
    closing = true;
    clearTimeout(reconcileTimer);
    const grace = options.closeTimeoutMs ?? 10_000;
    // BullMQ's close cannot be turned into a forced one once started, so choose up front: with Redis
    // unreachable, a graceful close would wait forever for the blocked fetch loops.
    const redisUp = producerRedis.status === 'ready';
    const graceful = await withTimeout(Promise.allSettled(workers.map((w) => w.close(!redisUp))), redisUp ? grace : 1000);
    if (!graceful) log.warn('job workers did not stop in time');
    await withTimeout(Promise.allSettled([reconciling, reportsQueue.close(), mailQueue.close()]), graceful && redisUp ? grace : 1000);
    for (const w of workers) void w.disconnect().catch(() => undefined);
    producerRedis.disconnect();
    mailer?.close();
  }

  return { runReport, sendMail, startWorkers, close };
}

/** Resolves `true` when `promise` settles within `ms`, `false` when the time ran out first. */
async function withTimeout(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Blocking connections (workers) must retry forever: BullMQ needs `maxRetriesPerRequest: null`. */
function workerOptions(endpoint: RedisEndpoint, closing: () => boolean) {
  return {
    ...endpoint.options,
    maxRetriesPerRequest: null,
    // Forever while running; once close() has begun, a lost connection is given up (otherwise a
    // Redis that is gone keeps the process alive with reconnect timers).
    retryStrategy: (times: number) => (closing() ? null : Math.min(times * 200, 2000)),
  };
}
