/**
 * The background jobs of this server: the generic queues of src/jobs, handed the reports' jobs
 * (src/reports, wired there), the webhook deliveries (src/webhooks/dispatcher.ts) and the notice
 * e-mails' processor. API processes enqueue (mode `producer`); worker processes run the jobs
 * (mode `worker`); `npm start` and the tests do both in one process.
 */
import { deleteEndedConsoleSessions } from './console/index.ts';
import type { Job } from 'bullmq';
import type { Database } from './db/client.ts';
import type { Config } from './config.ts';
import {
  createJobQueues,
  createMailer,
  MAIL_QUEUE,
  noticeProcessor,
  startPeriodic,
  withTimeout,
  type JobQueues,
  type MailMessage,
  type Mailer,
  type NoticeJobData,
} from './jobs/index.ts';
import type { Logger } from './logger.ts';
import { recordBuildFailed, recordMailFailed, recordMailSent } from './ops/metrics.ts';
import type { RedisEndpoint } from './redis.ts';
import { createReportJobs, REPORTS_QUEUE, type ChunkReader, type SendJobData } from './reports/index.ts';
import { applyAllDueCancellations } from './services/store.ts';
import { deleteEventsBefore, EVENT_RETENTION_DAYS } from './events/store.ts';
import { deleteRequestLogsBefore, REQUEST_LOG_RETENTION_DAYS } from './request-logs/store.ts';
import { openCredentials } from './db/credentials.ts';
import { lazy } from './shared/lazy.ts';
import { createWebhookWork, WEBHOOK_CONCURRENCY, WEBHOOKS_QUEUE, type WebhookJobData } from './webhooks/dispatcher.ts';
import { createRedisLiveness } from './webhooks/heartbeat.ts';
import type { ReadClient } from './shared/db-errors.ts';

export type JobsMode = 'producer' | 'worker' | 'both';

export interface CreateJobsOptions {
  redisEndpoint: RedisEndpoint;
  prisma: ReadClient;
  /** What the database is and its connection string, for the reports' own connections (src/reports/jobs.ts). */
  database?: Pick<Database, 'kind' | 'databaseUrl'> | undefined;
  config: Config;
  logger: Logger;
  /** `producer`: API process; `worker`: job worker process; `both`: one process does both. Workers start only on `startWorkers()`. */
  mode: JobsMode;
  /** BullMQ key prefix; all API and worker processes on one Redis must share it. Default `capi`. */
  prefix?: string;
  /** How long `close()` waits for running jobs before forcing the workers to stop (default 10 s). */
  closeTimeoutMs?: number;
  /** The process's reader of stored workbooks (shared with its downloads); without one the reports open their own. */
  chunkReader?: ChunkReader | undefined;
}

export interface Jobs {
  /** The generic queues, for a resource that queues its own jobs (a report request its build). */
  readonly queues: JobQueues;
  /** Enqueues one e-mail (retried on transient failures) and returns without waiting for it. */
  sendMail(message: MailMessage): Promise<void>;
  /** Starts the BullMQ workers (modes `worker` and `both`); idempotent. */
  startWorkers(): Promise<void>;
  /** Closes queues, workers (waiting for active jobs) and connections. */
  close(): Promise<void>;
  /** The queues' names, for their depth in /metrics. */
  readonly queueNames: readonly string[];
}

const QUEUE_NAMES = [REPORTS_QUEUE, MAIL_QUEUE, WEBHOOKS_QUEUE] as const;

const MAX_RETRY_DELAY_MS = 10 * 60_000;
/**
 * How often the workers apply every broker's due scheduled cancellations (so that a
 * `service.cancelled` event fires within a minute of the moment, read or not) and delete events
 * and request logs past their retention.
 */
const HOUSEKEEPING_MS = 30_000;

/** The workers' periodic upkeep of records that change with time alone. */
async function housekeeping(prisma: ReadClient, log: Logger): Promise<void> {
  const now = new Date();
  const cancelled = await applyAllDueCancellations(prisma, now);
  if (cancelled > 0) log.info({ cancelled }, 'scheduled cancellations took effect');
  await deleteEventsBefore(prisma, new Date(now.getTime() - EVENT_RETENTION_DAYS * 86_400_000));
  await deleteRequestLogsBefore(prisma, new Date(now.getTime() - REQUEST_LOG_RETENTION_DAYS * 86_400_000));
  await deleteEndedConsoleSessions(prisma, now);
}
/** A dead worker's job is handed on after this: shorter than BullMQ's 30 s, far above a lock renewal. */
const STALLED_AFTER_MS = 15_000;

/** The server's named queues on the generic adapter. */
function jobQueues(options: CreateJobsOptions, log: Logger): JobQueues {
  return createJobQueues({
    redisEndpoint: options.redisEndpoint,
    ...(options.prefix !== undefined ? { prefix: options.prefix } : {}),
    queues: [...QUEUE_NAMES],
    logger: log,
    retryDelayMs: (attemptsMade) => Math.min(MAX_RETRY_DELAY_MS, options.config.mailRetryDelayMs * 2 ** Math.max(0, attemptsMade - 1)),
    stalledAfterMs: STALLED_AFTER_MS,
    ...(options.closeTimeoutMs !== undefined ? { closeTimeoutMs: options.closeTimeoutMs } : {}),
  });
}

/** The webhook deliveries' worker side, with the endpoint secrets' key read on first use. */
function webhookWork(prisma: ReadClient, config: Config, log: Logger, queues: JobQueues, redis: RedisEndpoint) {
  const credentials = lazy(() => openCredentials({ envKey: config.credentialsKey, dataDir: config.dataDir }));
  // Connects only once the workers start (its first heartbeat).
  const liveness = createRedisLiveness({ redis: redis.options, prefix: queues.prefix, log });
  const work = createWebhookWork({ prisma, config, log, queues, liveness, decrypt: async (stored) => (await credentials()).decrypt(stored) });
  return { work, liveness };
}

export function createJobs(options: CreateJobsOptions): Jobs {
  const { prisma, config, logger, mode } = options;
  const log = logger.child({ component: 'jobs' });
  const isProducer = mode === 'producer' || mode === 'both';
  const isWorker = mode === 'worker' || mode === 'both';
  const queues = jobQueues(options, log);
  let mailer: Mailer | undefined;
  const mailerOf = () => {
    if (!mailer) throw new Error('the mail transport is made when the workers start');
    return mailer;
  };
  const reports = createReportJobs({
    prisma,
    database: options.database,
    config,
    log,
    queues,
    mailer: mailerOf,
    mailOutcomes: { sent: () => recordMailSent('report'), failed: () => recordMailFailed('report') },
    buildFailed: recordBuildFailed,
    chunkReader: options.chunkReader,
  });
  const notice = noticeProcessor(mailerOf, log, { sent: () => recordMailSent('notice'), failed: () => recordMailFailed('notice') });
  // One `mail` queue carries report e-mails (by recipient record) and notices (the message itself).
  const processMail = (job: Job<SendJobData | NoticeJobData>) =>
    'recipientId' in job.data && job.data.recipientId !== undefined
      ? reports.processSend(job as Job<SendJobData>)
      : notice(job as Job<NoticeJobData>);
  const { work: webhooks, liveness } = webhookWork(prisma, config, log, queues, options.redisEndpoint);
  let started: Promise<void> | undefined;
  let reconciler: { stop(): Promise<void> } | undefined;
  let dispatcher: { stop(): Promise<void> } | undefined;
  let upkeep: { stop(): Promise<void> } | undefined;

  function startWorkers(): Promise<void> {
    if (!isWorker) return Promise.reject(new Error(`createJobs mode "${mode}" runs no workers`));
    started ??= (async () => {
      mailer = createMailer(config);
      await queues.startWorkers({
        // Two builds at a time: more made other brokers' requests wait behind the builds' database
        // work and CPU in the same process (`npm start`) for little gain in report time (bench/README.md).
        [REPORTS_QUEUE]: { process: (job) => reports.processBuild(job), concurrency: 2 },
        [MAIL_QUEUE]: { process: processMail, concurrency: 10 },
        [WEBHOOKS_QUEUE]: { process: (job) => webhooks.process(job as Job<WebhookJobData>), concurrency: WEBHOOK_CONCURRENCY },
      });
      // On start, then periodically: whatever Redis lost or a dead worker left is picked up again.
      reconciler = reports.startReconciling();
      // Claims due webhook deliveries (new ones, retries, and those whose job was lost) and queues them.
      dispatcher = webhooks.startDispatching();
      upkeep = startPeriodic(() => housekeeping(prisma, log), HOUSEKEEPING_MS, (err) => log.warn({ err }, 'housekeeping failed; trying again later'));
      log.info({ mail: mailer.describe, prefix: queues.prefix, reconcileMs: config.reportReconcileMs }, 'job workers started');
    })();
    return started;
  }

  return {
    queues,
    async sendMail(message) {
      if (!isProducer) throw new Error(`createJobs mode "${mode}" cannot enqueue mail`);
      await queues.add(MAIL_QUEUE, 'send', { message } satisfies NoticeJobData, { attempts: config.mailAttempts, backoff: { type: 'retry' } });
    },
    startWorkers,
    queueNames: QUEUE_NAMES,
    async close() {
      const reconciled = reconciler?.stop();
      // The dispatcher first: it queues jobs, and queues are closed next.
      const dispatched = dispatcher?.stop();
      if (dispatched) await withTimeout(dispatched, 1000);
      const keptUp = upkeep?.stop();
      await queues.close();
      await withTimeout(liveness.close(), 1000); // the heartbeat last: running jobs' leases are not a dead worker's
      if (reconciled) await withTimeout(reconciled, 1000);
      if (keptUp) await withTimeout(keptUp, 1000);
      mailer?.close();
      await reports.close();
    },
  };
}
