/**
 * The background work of this server: the generic queues of src/jobs, handed the report
 * pipeline's processors (src/reports) and the notice e-mails'. API processes enqueue and wait
 * (mode `producer`); worker processes run the jobs (mode `worker`); `npm start` and the tests do
 * both in one process.
 */
import type { Job } from 'bullmq';
import type { PrismaClient } from '../generated/prisma/client.ts';
import type { Config } from './config.ts';
import {
  createJobQueues,
  createMailer,
  MAIL_QUEUE,
  noticeProcessor,
  withTimeout,
  type MailMessage,
  type Mailer,
  type NoticeJobData,
} from './jobs/index.ts';
import type { Logger } from './logger.ts';
import { recordMailFailed, recordMailSent } from './ops/metrics.ts';
import type { RedisEndpoint } from './redis.ts';
import { processBuild, processReportSend, REPORTS_QUEUE, type Pipeline, type SendJobData } from './reports/pipeline.ts';
import { startReconciling } from './reports/reconcile.ts';
import { openChunkReader, WorkbookCache } from './reports/workbook-store.ts';
import { runReport } from './reports/run-report.ts';
import type { ReportResult, ReportSpec, ReportTotals } from './reports/types.ts';

export type JobsMode = 'producer' | 'worker' | 'both';

export interface CreateJobsOptions {
  redisEndpoint: RedisEndpoint;
  prisma: PrismaClient;
  /** The database's connection string, for report builds' own connections (src/reports/build.ts); unset: builds are relayed. */
  databaseUrl?: string | undefined;
  config: Config;
  logger: Logger;
  /** `producer`: API process; `worker`: job worker process; `both`: one process does both. Workers start only on `startWorkers()`. */
  mode: JobsMode;
  /** BullMQ key prefix; all API and worker processes on one Redis must share it. Default `capi`. */
  prefix?: string;
  /** How long `close()` waits for running jobs before forcing the workers to stop (default 10 s). */
  closeTimeoutMs?: number;
}

export interface Jobs {
  /** A report run (src/reports/run-report.ts): recorded, queued, and waited for up to REPORT_WAIT_MS. */
  runReport<T extends ReportTotals = ReportTotals>(spec: ReportSpec): Promise<ReportResult<T>>;
  /** Enqueues one e-mail (retried on transient failures) and returns without waiting for it. */
  sendMail(message: MailMessage): Promise<void>;
  /** Starts the BullMQ workers (modes `worker` and `both`); idempotent. */
  startWorkers(): Promise<void>;
  /** Closes queues, workers (waiting for active jobs) and connections. */
  close(): Promise<void>;
  /** The queues' names, for their depth in /metrics. */
  readonly queueNames: readonly string[];
}

const QUEUE_NAMES = [REPORTS_QUEUE, MAIL_QUEUE] as const;

const MAX_RETRY_DELAY_MS = 10 * 60_000;
/** A dead worker's job is handed on after this: shorter than BullMQ's 30 s, far above a lock renewal. */
const STALLED_AFTER_MS = 15_000;

export function createJobs(options: CreateJobsOptions): Jobs {
  const { prisma, config, logger, mode } = options;
  const log = logger.child({ component: 'jobs' });
  const isProducer = mode === 'producer' || mode === 'both';
  const isWorker = mode === 'worker' || mode === 'both';
  const queues = createJobQueues({
    redisEndpoint: options.redisEndpoint,
    ...(options.prefix !== undefined ? { prefix: options.prefix } : {}),
    queues: [...QUEUE_NAMES],
    logger: log,
    retryDelayMs: (attemptsMade) => Math.min(MAX_RETRY_DELAY_MS, config.mailRetryDelayMs * 2 ** Math.max(0, attemptsMade - 1)),
    stalledAfterMs: STALLED_AFTER_MS,
    ...(options.closeTimeoutMs !== undefined ? { closeTimeoutMs: options.closeTimeoutMs } : {}),
  });
  let mailer: Mailer | undefined;
  const mailerOf = () => {
    if (!mailer) throw new Error('the mail transport is made when the workers start');
    return mailer;
  };
  // Stored workbooks for attachments are read through a reader of the jobs' own (closed with them).
  const chunks = openChunkReader({ prisma, url: options.databaseUrl, queryTimeoutMs: config.dbStatementTimeoutMs });
  const pipeline: Pipeline = {
    prisma,
    databaseUrl: options.databaseUrl,
    readChunk: chunks.read,
    config,
    log,
    queues,
    mailer: mailerOf,
    mailOutcomes: { sent: () => recordMailSent('report'), failed: () => recordMailFailed('report') },
    // Room for the attachments of the runs a worker sends at once (2 builds at a time).
    workbooks: new WorkbookCache(2 * config.reportAttachmentMaxBytes),
  };
  const notice = noticeProcessor(mailerOf, log, { sent: () => recordMailSent('notice'), failed: () => recordMailFailed('notice') });
  // One `mail` queue carries report e-mails (by recipient record) and notices (the message itself).
  const processMail = (job: Job<SendJobData | NoticeJobData>) =>
    'recipientId' in job.data && job.data.recipientId !== undefined
      ? processReportSend(pipeline, job as Job<SendJobData>)
      : notice(job as Job<NoticeJobData>);
  let started: Promise<void> | undefined;
  let reconciler: { stop(): Promise<void> } | undefined;

  function startWorkers(): Promise<void> {
    if (!isWorker) return Promise.reject(new Error(`createJobs mode "${mode}" runs no workers`));
    started ??= (async () => {
      mailer = createMailer(config);
      await queues.startWorkers({
        // Two builds at a time: more made other brokers' requests wait behind the builds' database
        // work and CPU in the same process (`npm start`) for little gain in report time (bench/README.md).
        [REPORTS_QUEUE]: { process: (job) => processBuild(pipeline, job), concurrency: 2 },
        [MAIL_QUEUE]: { process: processMail, concurrency: 10 },
      });
      // On start, then periodically: whatever Redis lost or a dead worker left is picked up again.
      reconciler = startReconciling(pipeline);
      log.info({ mail: mailer.describe, prefix: queues.prefix, reconcileMs: config.reportReconcileMs }, 'job workers started');
    })();
    return started;
  }

  return {
    runReport<T extends ReportTotals>(spec: ReportSpec) {
      if (!isProducer) return Promise.reject(new Error(`createJobs mode "${mode}" cannot run reports`));
      return runReport<T>(pipeline, spec);
    },
    async sendMail(message) {
      if (!isProducer) throw new Error(`createJobs mode "${mode}" cannot enqueue mail`);
      await queues.add(MAIL_QUEUE, 'send', { message } satisfies NoticeJobData, { attempts: config.mailAttempts, backoff: { type: 'retry' } });
    },
    startWorkers,
    queueNames: QUEUE_NAMES,
    async close() {
      const reconciled = reconciler?.stop();
      await queues.close();
      if (reconciled) await withTimeout(reconciled, 1000);
      mailer?.close();
      await chunks.close();
    },
  };
}
