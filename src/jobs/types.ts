import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { RedisEndpoint } from '../redis.ts';

export type ReportType = 'invoices' | 'services';
export type ServiceStatusFilter = 'pending' | 'active' | 'suspended' | 'cancelled';

/** What a caller asks `runReport` for. Recipients must already be normalized (see src/reports/recipients.ts). */
export interface ReportSpec {
  type: ReportType;
  brokerId: string;
  /** The API key that asked (kept on the run record); null for CLI/operator runs. */
  apiKeyId: string | null;
  /** Normalized (trimmed, lower-cased), de-duplicated, 1..10 addresses. */
  recipients: string[];
  /** Invoices report: inclusive range, `YYYY-MM-DD`. */
  startDate?: string;
  endDate?: string;
  /** Services report: optional status filter (null/undefined = every status). */
  statusFilter?: ServiceStatusFilter | null;
  /**
   * When the report has no row: `false` (default) makes `runReport` throw `ReportNoDataError` before
   * anything is recorded or queued (the invoices report's `no_data`); `true` sends an empty report.
   */
  allowEmpty?: boolean;
}

/** Counts of an invoices report (paid and pending invoices in the range). */
export interface InvoiceTotals {
  total_invoices: number;
  paid_invoices: number;
  unpaid_invoices: number;
}

/** Counts of a services report. */
export interface ServiceTotals {
  total_services: number;
  services_by_status: Record<ServiceStatusFilter, number>;
}

export type ReportTotals = InvoiceTotals | ServiceTotals;

export interface ReportResult<T extends ReportTotals = ReportTotals> {
  runId: string;
  /** Recipients whose e-mail the mail server accepted (or that was written to the outbox), as recorded when the wait ended. */
  recipientsSent: number;
  /** Recipients whose sending failed for good (rejected, or every attempt failed), as recorded when the wait ended. */
  recipientsFailed: number;
  /** Recipients still under way when the wait ended: their outcome is not known yet, and is not a failure. */
  recipientsPending: number;
  /** The counts of the rows that went into the workbook. */
  totals: T;
  /** When the report data was read (ISO 8601 UTC with milliseconds). */
  generatedAt: string;
}

export interface MailAttachment {
  filename: string;
  /** A file readable by the mail worker (same host / same $DATA_DIR). Never put big content into Redis. */
  path?: string;
  /** Small inline content only (a few KB). */
  content?: string;
  contentType?: string;
}

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
  attachments?: MailAttachment[];
  /** A fixed Message-ID (`<…@…>`), so copies of one message can be recognised as one. */
  messageId?: string;
}

export type JobsMode = 'producer' | 'worker' | 'both';

export interface CreateJobsOptions {
  redisEndpoint: RedisEndpoint;
  prisma: PrismaClient;
  config: Config;
  logger: Logger;
  /**
   * `producer`: API process (enqueue and wait); `worker`: job worker process; `both`: one process
   * does both (npm start, tests). Workers start only on `startWorkers()`.
   */
  mode: JobsMode;
  /** BullMQ key prefix; all API and worker processes on one Redis must share it. Default `capi`. */
  prefix?: string;
  /** How long `close()` waits for running jobs before forcing the workers to stop (default 10 s). */
  closeTimeoutMs?: number;
}

export interface Jobs {
  /**
   * Counts the report rows (throws `ReportNoDataError` when there is none and `allowEmpty` is not
   * set), records the run and its recipients, enqueues the build (which then enqueues one e-mail
   * per recipient) and waits at most `config.reportWaitMs` for the outcomes, read from the database.
   * Recipients still under way when the wait ends are counted as pending, never as failed. Throws
   * (→ 500 server_error) only when the run could not be recorded or queued, or when its workbook
   * could not be built: once the e-mails are handed over, it answers with what is recorded.
   */
  runReport<T extends ReportTotals = ReportTotals>(spec: ReportSpec): Promise<ReportResult<T>>;
  /** Enqueues one e-mail (retried on transient failures) and returns without waiting for it. */
  sendMail(message: MailMessage): Promise<void>;
  /** Starts the BullMQ workers (modes `worker` and `both`); idempotent. */
  startWorkers(): Promise<void>;
  /** Closes queues, workers (waiting for active jobs) and connections. */
  close(): Promise<void>;
}

/** The run's workbook could not be built, so no e-mail was sent (`500 server_error`). */
export class ReportGenerationError extends Error {
  override name = 'ReportGenerationError';
  constructor(readonly runId: string, reason: string) {
    super(`report ${runId} could not be generated: ${reason}`);
  }
}

/** The report has no row for the request (the invoices report answers `400 no_data`). */
export class ReportNoDataError extends Error {
  override name = 'ReportNoDataError';
  constructor(readonly spec: ReportSpec) {
    super(`no data for the ${spec.type} report`);
  }
}
