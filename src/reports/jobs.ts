/**
 * The reports' jobs on the generic queues, wired here and handed to src/background.ts whole: the
 * pipeline every step shares, the `reports` queue's processor, the report e-mails' processor (on
 * the generic `mail` queue) and the reconciler. A report request queues its build itself
 * (use-cases.ts); src/background.ts knows none of it beyond these names.
 */
import type { Job } from 'bullmq';
import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import type { JobQueues, Mailer } from '../jobs/index.ts';
import type { Logger } from '../logger.ts';
import { processBuild, processReportSend, REPORTS_QUEUE, type BuildJobData, type Pipeline, type SendJobData } from './delivery/pipeline.ts';
import { startReconciling } from './delivery/reconcile.ts';
import { openChunkReader, WorkbookCache, type ChunkReader } from './workbook/store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export { REPORTS_QUEUE };
export type { SendJobData };

export interface ReportJobsParts {
  prisma: ReadClient;
  /** What the database is and its connection string (unset: an embedded database without a socket). */
  database: Pick<Database, 'kind' | 'databaseUrl'> | undefined;
  config: Config;
  log: Logger;
  queues: JobQueues;
  /** The mail transport, made when the workers start. */
  mailer: () => Mailer;
  /** Counters of report e-mails sent and failed for good. */
  mailOutcomes: { sent(): void; failed(): void };
  /** Counts a failed build attempt. */
  buildFailed(): void;
  /** The process's reader of stored workbooks, closed by its owner; without one the reports open their own. */
  chunkReader?: ChunkReader | undefined;
}

export interface ReportJobs {
  /** The `reports` queue's processor: a run's build. */
  processBuild(job: Job<BuildJobData>): Promise<unknown>;
  /** A report e-mail's send (a `mail` job that names a recipient). */
  processSend(job: Job<SendJobData>): Promise<unknown>;
  /** Picks up, now and periodically, whatever Redis lost or a dead worker left (reconcile.ts). */
  startReconciling(): { stop(): Promise<void> };
  /** Closes what the reports' jobs hold of their own (its reader of stored workbooks, if it opened one). Safe twice. */
  close(): Promise<void>;
}

export function createReportJobs(parts: ReportJobsParts): ReportJobs {
  const { prisma, database, config, chunkReader, ...rest } = parts;
  // Stored workbooks for attachments are read through the process's reader (its downloads use the
  // same connections), or one of the reports' own, closed with them.
  const chunks = chunkReader ?? openChunkReader({ prisma, url: database?.databaseUrl, queryTimeoutMs: config.dbStatementTimeoutMs });
  const pipeline: Pipeline = {
    ...rest,
    prisma,
    config,
    // A build reads and stores through a connection of its thread's own wherever the database has a
    // connection string: PostgreSQL, or the embedded database's socket, where each unit of work takes
    // the one session in turn, as the process's own queries do. Without one (a process that opened
    // PGlite itself) the build is relayed through this thread.
    buildUrl: database?.databaseUrl,
    readChunk: chunks.read,
    // Room for the attachments of the runs a worker sends at once (2 builds at a time).
    workbooks: new WorkbookCache(2 * config.reportAttachmentMaxBytes),
  };
  return {
    processBuild: (job) => processBuild(pipeline, job),
    processSend: (job) => processReportSend(pipeline, job),
    startReconciling: () => startReconciling(pipeline),
    close: async () => {
      if (!chunkReader) await chunks.close();
    },
  };
}
