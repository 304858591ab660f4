/**
 * Background work on BullMQ: reports (build one workbook, then one e-mail job per recipient) and
 * single e-mails (the password notice). API processes enqueue and wait (mode `producer`); worker
 * processes run the jobs (mode `worker`); `npm start` and the tests do both in one process.
 *
 * Report pipeline (queue `reports`, queue `mail`, all on one Redis, BullMQ prefix `capi`):
 *
 *   request ── count rows (400 no_data when none) ── ReportRun + ReportRecipient rows (pending)
 *      └─ reports:build ── streams the .xlsx to $DATA_DIR/tmp/<run>.xlsx ── adds a flow:
 *            reports:finalize (parent) ◄── mail:send × recipients (children, attach the file by path)
 *         finalize runs when every send has finished (failed sends are ignored dependencies),
 *         records the run's counts and removes the file.
 *
 * The request waits on build, then on finalize, with what is left of `config.reportWaitMs`; when
 * the wait ends first, the outcomes known so far come from the database and the rest count as
 * failed in the answer, while the run record later gets the real outcome.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { FlowProducer, Job, Queue, QueueEvents, UnrecoverableError, Worker, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import type { RedisEndpoint } from '../redis.ts';
import { reportBuilders } from '../reports/index.ts';
import { admitReportRun, reportLimitsOf } from '../reports/limits.ts';
import { XLSX_MEDIA_TYPE, type ReportSnapshot } from '../reports/builder.ts';
import { createMailer, describeMailError, isTransientMailError, type Mailer } from './mailer.ts';
import { recordMailFailed, recordMailSent } from '../ops/metrics.ts';
import { collectGarbage } from '../gc.ts';
import {
  ReportNoDataError,
  type CreateJobsOptions,
  type Jobs,
  type MailMessage,
  type ReportResult,
  type ReportSpec,
  type ReportTotals,
} from './types.ts';

export * from './types.ts';
export { createMailer, isTransientMailError, describeMailError } from './mailer.ts';

export const REPORTS_QUEUE = 'reports';
export const MAIL_QUEUE = 'mail';
export const DEFAULT_PREFIX = 'capi';

interface BuildJobData {
  runId: string;
  spec: ReportSpec;
  snapshot: ReportSnapshot;
  generatedAt: string;
  recipients: Array<{ id: number; email: string }>;
}

interface BuildJobResult {
  totals: ReportTotals;
  rows: number;
  finalizeJobId: string;
}

interface FinalizeJobData {
  runId: string;
  file: string;
}

interface FinalizeJobResult {
  sent: number;
  failed: number;
}

interface SendJobData {
  message: MailMessage;
  /** Set for a report e-mail: the ReportRecipient row that records the outcome. */
  recipientId?: number;
  runId?: string;
}

const buildJobId = (runId: string) => `build-${runId}`;
const finalizeJobId = (runId: string) => `finalize-${runId}`;
const sendJobId = (runId: string, recipientId: number) => `send-${runId}-${recipientId}`;

/** Finished jobs are kept a while for operators (`bull` UIs), then dropped; the database keeps the record. */
const KEEP: Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'> = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 5000 },
};

/** Temp workbooks older than this are swept at worker start (a run whose finalize never came). */
const STALE_TMP_MS = 24 * 3600 * 1000;

export function tmpDirOf(config: Config): string {
  return path.join(config.dataDir, 'tmp');
}

function mailJobOptions(config: Config): JobsOptions {
  return {
    attempts: config.mailAttempts,
    // Short, so the retries of a transient failure fit inside the report's wait budget.
    backoff: { type: 'exponential', delay: Math.max(50, Math.min(1000, Math.floor(config.reportWaitMs / 40))) },
    ...KEEP,
  };
}

export function createJobs(options: CreateJobsOptions): Jobs {
  const { redisEndpoint, prisma, config, logger, mode } = options;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  let closing = false;
  const isClosing = () => closing;
  const log = logger.child({ component: 'jobs' });
  const isProducer = mode === 'producer' || mode === 'both';
  const isWorker = mode === 'worker' || mode === 'both';

  // Producer side: a fail-fast connection (a Redis outage answers 500 at once) shared by both
  // queues, and a blocking one for the completion events the requests wait on.
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
  const mailQueue = new Queue(MAIL_QUEUE, { connection: producerRedis, prefix, defaultJobOptions: mailJobOptions(config), skipVersionCheck: true });
  for (const q of [reportsQueue, mailQueue]) q.on('error', (err) => log.debug({ err }, 'queue error'));
  let reportEvents: QueueEvents | undefined;
  let eventsReady: Promise<void> | undefined;
  const events = async (): Promise<QueueEvents> => {
    if (!reportEvents) {
      reportEvents = new QueueEvents(REPORTS_QUEUE, { connection: workerOptions(redisEndpoint, isClosing), prefix });
      reportEvents.on('error', (err) => log.debug({ err }, 'queue events error'));
      eventsReady = reportEvents.waitUntilReady().then(() => undefined);
    }
    await eventsReady;
    return reportEvents;
  };
  if (isProducer) void events().catch((err: unknown) => log.warn({ err }, 'report events not ready yet'));

  // Worker side, made on startWorkers().
  let workers: Worker[] = [];
  let flowProducer: FlowProducer | undefined;
  let mailer: Mailer | undefined;
  let started: Promise<void> | undefined;

  async function recordRunFailure(runId: string, error: string): Promise<void> {
    await prisma.reportRun
      .update({ where: { id: runId }, data: { status: 'failed', error: error.slice(0, 1000), completedAt: new Date() } })
      .catch((err: unknown) => log.error({ err, runId }, 'could not record a failed report run'));
  }

  async function processBuild(job: Job<BuildJobData>): Promise<BuildJobResult> {
    const { runId, spec, snapshot, recipients } = job.data;
    const builder = reportBuilders[spec.type];
    const dir = tmpDirOf(config);
    const file = path.join(dir, `${runId}.xlsx`);
    const started = Date.now();
    try {
      await mkdir(dir, { recursive: true });
      const written = await builder.write(prisma, spec, snapshot, file, new Date(job.data.generatedAt));
      // The build's garbage goes before the e-mails make theirs (src/gc.ts).
      collectGarbage();
      await prisma.reportRun.update({ where: { id: runId }, data: { totals: written.totals as object } });
      const filename = builder.attachmentName(spec);
      const message = {
        subject: builder.subject(spec),
        text: builder.text(spec, written.totals, job.data.generatedAt),
        attachments: [{ filename, path: file, contentType: XLSX_MEDIA_TYPE }],
      };
      await flowProducer!.add({
        name: 'finalize',
        queueName: REPORTS_QUEUE,
        data: { runId, file } satisfies FinalizeJobData,
        opts: { jobId: finalizeJobId(runId), ...KEEP },
        children: recipients.map((r) => ({
          name: 'send',
          queueName: MAIL_QUEUE,
          data: { message: { ...message, to: r.email }, recipientId: r.id, runId } satisfies SendJobData,
          opts: { jobId: sendJobId(runId, r.id), ...mailJobOptions(config), ignoreDependencyOnFailure: true },
        })),
      });
      log.info({ runId, type: spec.type, rows: written.rows, ms: Date.now() - started }, 'report workbook built');
      return { totals: written.totals, rows: written.rows, finalizeJobId: finalizeJobId(runId) };
    } catch (err) {
      log.error({ err, runId }, 'report build failed');
      await rm(file, { force: true }).catch(() => undefined);
      await recordRunFailure(runId, `report could not be generated: ${err instanceof Error ? err.message : String(err)}`);
      throw new UnrecoverableError(err instanceof Error ? err.message : String(err));
    }
  }

  async function processFinalize(job: Job<FinalizeJobData>): Promise<FinalizeJobResult> {
    const { runId, file } = job.data;
    await rm(file, { force: true });
    // A send that never recorded an outcome (e.g. removed by an operator) is a failure.
    await prisma.reportRecipient.updateMany({
      where: { reportRunId: runId, status: 'pending' },
      data: { status: 'failed', error: 'no delivery outcome was recorded' },
    });
    const rows = await prisma.reportRecipient.groupBy({ by: ['status'], where: { reportRunId: runId }, _count: { _all: true } });
    const sent = rows.find((r) => r.status === 'sent')?._count._all ?? 0;
    const failed = rows.filter((r) => r.status !== 'sent').reduce((n, r) => n + r._count._all, 0);
    await prisma.reportRun.update({
      where: { id: runId },
      data: { status: 'completed', recipientsSent: sent, recipientsFailed: failed, completedAt: new Date() },
    });
    log.info({ runId, sent, failed }, 'report run completed');
    return { sent, failed };
  }

  async function processSend(job: Job<SendJobData>): Promise<{ messageId: string }> {
    const { message, recipientId } = job.data;
    const attempt = job.attemptsMade + 1;
    try {
      const info = await mailer!.send(message);
      recordMailSent(recipientId !== undefined ? 'report' : 'notice');
      if (recipientId !== undefined) {
        await prisma.reportRecipient.update({
          where: { id: recipientId },
          data: { status: 'sent', messageId: info.messageId, attempts: attempt, sentAt: new Date(), error: null },
        });
      }
      return { messageId: info.messageId };
    } catch (err) {
      const transient = isTransientMailError(err);
      const final = !transient || attempt >= (job.opts.attempts ?? 1);
      const error = describeMailError(err);
      log.warn({ runId: job.data.runId, recipientId, attempt, transient, final, error }, 'e-mail send failed');
      if (final) recordMailFailed(recipientId !== undefined ? 'report' : 'notice');
      if (recipientId !== undefined) {
        await prisma.reportRecipient.update({
          where: { id: recipientId },
          data: { status: final ? 'failed' : 'pending', error, attempts: attempt },
        });
      }
      if (!transient) throw new UnrecoverableError(error);
      throw new Error(error);
    }
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
      flowProducer = new FlowProducer({ connection: workerOptions(redisEndpoint, isClosing), prefix });
      flowProducer.on('error', (err) => log.warn({ err }, 'flow producer error'));
      // Two builds at a time: more made other brokers' requests wait behind the builds' database
      // work and CPU in the same process (`npm start`) for little gain in report time (bench/README.md).
      const reportsWorker = new Worker<BuildJobData | FinalizeJobData>(
        REPORTS_QUEUE,
        (job) =>
          job.name === 'build'
            ? processBuild(job as Job<BuildJobData>)
            : processFinalize(job as Job<FinalizeJobData>),
        { connection: workerOptions(redisEndpoint, isClosing), prefix, concurrency: 2 },
      );
      const mailWorker = new Worker<SendJobData>(MAIL_QUEUE, processSend, {
        connection: workerOptions(redisEndpoint, isClosing),
        prefix,
        concurrency: 10,
      });
      workers = [reportsWorker, mailWorker];
      for (const w of workers) w.on('error', (err) => log.warn({ err }, 'worker error'));
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await sweepTmp();
      log.info({ mail: mailer.describe, prefix }, 'job workers started');
    })();
    return started;
  }

  async function outcomeFromDb(runId: string): Promise<{ sent: number; failed: number }> {
    const rows = await prisma.reportRecipient.findMany({ where: { reportRunId: runId }, select: { status: true } });
    const sent = rows.filter((r) => r.status === 'sent').length;
    return { sent, failed: rows.length - sent };
  }

  async function waitFor<R>(job: Job, deadline: number): Promise<{ done: true; value: R } | { done: false; error?: Error }> {
    const ttl = deadline - Date.now();
    if (ttl <= 0) return { done: false };
    try {
      const value = (await job.waitUntilFinished(await events(), ttl)) as R;
      return { done: true, value };
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      if (/timed out before finishing/.test(error.message) || Date.now() >= deadline) return { done: false };
      return { done: false, error };
    }
  }

  async function runReport<T extends ReportTotals>(spec: ReportSpec): Promise<ReportResult<T>> {
    if (!isProducer) throw new Error(`createJobs mode "${mode}" cannot run reports`);
    const deadline = Date.now() + config.reportWaitMs;
    const builder = reportBuilders[spec.type];
    const counted = await builder.count(prisma, spec);
    if (counted.rows === 0 && !spec.allowEmpty) throw new ReportNoDataError(spec);
    const generatedAt = new Date().toISOString();
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
        recipients: { create: spec.recipients.map((email) => ({ email })) },
      },
      include: { recipients: { select: { id: true, email: true }, orderBy: { id: 'asc' } } },
    }));
    const data: BuildJobData = { runId: run.id, spec, snapshot: counted.snapshot, generatedAt, recipients: run.recipients };
    let buildJob: Job;
    try {
      buildJob = await reportsQueue.add('build', data, { jobId: buildJobId(run.id) });
    } catch (err) {
      await recordRunFailure(run.id, `could not enqueue the report: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    }
    const result = (sent: number, failed: number, totals: ReportTotals): ReportResult<T> => ({
      runId: run.id,
      recipientsSent: sent,
      recipientsFailed: failed,
      totals: totals as T,
      generatedAt,
    });

    const built = await waitFor<BuildJobResult>(buildJob, deadline);
    if (!built.done) {
      if (built.error) throw new Error(`report ${run.id} could not be generated: ${built.error.message}`);
      log.warn({ runId: run.id }, 'report wait ended before the workbook was built');
      return result(0, spec.recipients.length, counted.totals);
    }
    const totals = built.value.totals;
    const finalize = await Job.fromId(reportsQueue, built.value.finalizeJobId);
    const finished = finalize ? await waitFor<FinalizeJobResult>(finalize, deadline) : { done: false as const };
    if (finished.done) return result(finished.value.sent, finished.value.failed, totals);
    if (!finalize) log.warn({ runId: run.id }, 'finalize job not found; reading outcomes from the run record');
    else log.warn({ runId: run.id }, 'report wait ended before every e-mail had an outcome');
    const known = await outcomeFromDb(run.id);
    return result(known.sent, known.failed, totals);
  }

  async function sendMail(message: MailMessage): Promise<void> {
    if (!isProducer) throw new Error(`createJobs mode "${mode}" cannot enqueue mail`);
    await mailQueue.add('send', { message } satisfies SendJobData);
  }

  async function close(): Promise<void> {
    // Workers first (they finish their active jobs), then everything that feeds them. Bounded: with
    // Redis gone, BullMQ's close would wait forever, so after the grace period everything is forced.
    closing = true;
    const grace = options.closeTimeoutMs ?? 10_000;
    // BullMQ's close cannot be turned into a forced one once started, so choose up front: with Redis
    // unreachable, a graceful close would wait forever for the blocked fetch loops.
    const redisUp = producerRedis.status === 'ready';
    const graceful = await withTimeout(Promise.allSettled(workers.map((w) => w.close(!redisUp))), redisUp ? grace : 1000);
    if (!graceful) log.warn('job workers did not stop in time');
    await withTimeout(
      Promise.allSettled([flowProducer?.close(), reportEvents?.close(), reportsQueue.close(), mailQueue.close()]),
      graceful && redisUp ? grace : 1000,
    );
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

/** Blocking connections (workers, events, flows) must retry forever: BullMQ needs `maxRetriesPerRequest: null`. */
function workerOptions(endpoint: RedisEndpoint, closing: () => boolean) {
  return {
    ...endpoint.options,
    maxRetriesPerRequest: null,
    // Forever while running; once close() has begun, a lost connection is given up (otherwise a
    // Redis that is gone keeps the process alive with reconnect timers).
    retryStrategy: (times: number) => (closing() ? null : Math.min(times * 200, 2000)),
  };
}

