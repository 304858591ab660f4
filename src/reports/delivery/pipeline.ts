/**
 * The report pipeline's workers: the database records every run and recipient and stores the
 * workbook; Redis (src/jobs) is only the work queue. A run goes queued → building (the .xlsx
 * streamed into the database in chunks) → sending (attachment or link) → completed, one
 * `mail:send` job per recipient. The workbook is built once and read by every process; of two
 * builds of one run the first to record `sending` wins. A send is claimed before the SMTP
 * conversation and recorded after it (the record retried, never the send), and every copy of a
 * recipient's e-mail carries one Message-ID. The reconciler (reconcile.ts) resumes what has no
 * live job; the request waits by reading the records (use-cases.ts).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job } from 'bullmq';
import type { Config } from '../../config.ts';
import { describeMailError, isTransientMailError, type MailMessage, type Mailer } from '../../jobs/index.ts';
import { MAIL_QUEUE, type JobQueues } from '../../jobs/index.ts';
import type { Logger } from '../../logger.ts';
import { XLSX_MEDIA_TYPE, type MailLink } from '../kinds/kind.ts';
import { storeWorkbook } from '../workbook/build.ts';
import { reportKinds } from '../kinds/registry.ts';
import { createLink } from './links.ts';
import { outboxTestFailure } from './test-recipients.ts';
import {
  claimRecipient,
  claimRunForBuild,
  deliveryOf,
  failRunRecords,
  findRecipientWithRun,
  findRun,
  pendingRecipientIds,
  recordedBuildOf,
  recordRunBuilt,
  settleRunCounts,
  recordOutcomeAndCounts,
  recordSendFailed,
  type RecipientOutcome,
  releaseClaim,
  renewClaim,
  requeueRunForBuild,
} from '../runs/store.ts';
import { specOfRun, type RunRecord, type ReportTotals } from '../types.ts';
import { discardBuild, discardOtherBuilds, releaseWorkbook, WorkbookUnavailableError, type ReadChunk, type StoredWorkbook, type WorkbookCache } from '../workbook/store.ts';
import type { ReadClient } from '../../shared/db-errors.ts';

export interface BuildJobData {
  runId: string;
}

export interface SendJobData {
  recipientId: number;
}

export const buildJobId = (runId: string) => `build.${runId}`;
export const sendJobId = (recipientId: number) => `send.${recipientId}`;

/**
 * Queue-level tries of a report e-mail job. The recipient's own attempts (MAIL_ATTEMPTS) are
 * counted in its record; these also cover a database that is away when the job runs.
 */
const REPORT_SEND_JOB_ATTEMPTS = 25;
const BUILD_JOB_ATTEMPTS = 5;

/** What every step of the pipeline works with. */
export interface Pipeline {
  prisma: ReadClient;
  /** The database's connection string (PostgreSQL, or the embedded database's socket): builds read and store through a connection of their thread's own (workbook/build.ts); unset: relayed. */
  buildUrl?: string | undefined;
  /** Reads stored workbook chunks (workbook/store.ts, openChunkReader). */
  readChunk: ReadChunk;
  config: Config;
  log: Logger;
  queues: JobQueues;
  /** The SMTP (or outbox) transport; made when the workers start. */
  mailer: () => Mailer;
  /** Counters of e-mails sent and failed for good. */
  mailOutcomes: { sent(): void; failed(): void };
  /** Counts a failed build attempt (/metrics `report_builds_failed_total`). */
  buildFailed(): void;
  /** Attached workbooks this process holds whole, so a run's e-mails read them once (workbook/store.ts). */
  workbooks: WorkbookCache;
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

/** The queue of report builds (its e-mails go to the jobs' mail queue). */
export const REPORTS_QUEUE = 'reports';

export const enqueueBuild = (p: Pick<Pipeline, 'queues'>, runId: string) =>
  p.queues.add(REPORTS_QUEUE, 'build', { runId } satisfies BuildJobData, {
    jobId: buildJobId(runId),
    attempts: BUILD_JOB_ATTEMPTS,
    backoff: { type: 'retry' },
  });

export const enqueueSend = (p: Pick<Pipeline, 'queues'>, recipientId: number) =>
  p.queues.add(MAIL_QUEUE, 'send', { recipientId } satisfies SendJobData, {
    jobId: sendJobId(recipientId),
    attempts: REPORT_SEND_JOB_ATTEMPTS,
    backoff: { type: 'retry' },
  });

/**
 * Writes an outcome that must not be lost: tried until it is recorded, with back-off, through a
 * database outage. While the process shuts down it keeps trying until the worker's close bound cuts it.
 */
export async function record(p: Pipeline, what: string, write: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await write();
      return;
    } catch (err) {
      if (attempt === 1 || attempt % 20 === 0) p.log.warn({ err, what, attempt }, 'recording failed; trying again');
      await sleep(Math.min(5000, 100 * 2 ** Math.min(attempt - 1, 6)));
    }
  }
}

/** The `reports` queue's processor: builds a run's workbook into the store, then queues one e-mail per recipient. */
export async function processBuild(p: Pipeline, job: Job<BuildJobData>): Promise<{ rows: number } | { skipped: string }> {
  const { prisma, log } = p;
  const { runId } = job.data;
  // Only a run that still needs its workbook is built; a repeated job finds it past that and stops.
  if (!(await claimRunForBuild(prisma, runId))) return { skipped: 'run is not waiting for a build' };
  const run = await findRun(prisma, runId);
  const spec = specOfRun(run);
  const started = Date.now();
  // A workbook small enough to attach comes back whole, for this process's own sends of it.
  const target = { runId, build: randomUUID(), keepUpTo: p.config.reportAttachmentMaxBytes };
  const input = reportKinds[spec.type].input(spec, { maxId: run.snapshotMaxId }, run.generatedAt);
  let built;
  try {
    built = await storeWorkbook<ReportTotals>({ prisma, url: p.buildUrl, queryTimeoutMs: p.config.dbStatementTimeoutMs }, input, target);
  } catch (err) {
    await discardBuild(prisma, runId, target.build).catch(() => undefined);
    const reason = err instanceof Error ? err.message : String(err);
    log.error({ err, runId, attempt: job.attemptsMade + 1 }, 'report build failed');
    p.buildFailed();
    if (job.attemptsMade + 1 >= BUILD_JOB_ATTEMPTS) await failRun(p, runId, `report could not be generated: ${reason}`);
    throw err;
  }
  const { stored, kept } = built;
  if (!(await recordBuilt(p, runId, stored, built.totals))) {
    await discardBuild(prisma, runId, stored.build);
    return { skipped: 'another build of the run was recorded first' };
  }
  if (kept) p.workbooks.put({ runId, build: stored.build }, kept);
  for (const recipientId of await pendingRecipientIds(prisma, runId)) await enqueueSend(p, recipientId);
  log.info({ runId, type: spec.type, rows: built.rows, bytes: stored.bytes, ms: Date.now() - started }, 'report workbook built');
  return { rows: built.rows };
}

/**
 * Records the stored workbook as the run's (`sending`, its size, hash and delivery) if no other
 * build was recorded first, then deletes every other build's chunks. True when this build won:
 * read back from the record, so a lost answer to the update cannot make a winner discard itself.
 */
async function recordBuilt(p: Pipeline, runId: string, stored: StoredWorkbook, totals: ReportTotals): Promise<boolean> {
  const { prisma, config } = p;
  const delivery = stored.bytes > config.reportAttachmentMaxBytes ? 'link' : 'attachment';
  await record(p, 'workbook built', () => recordRunBuilt(prisma, runId, stored, totals as object, delivery));
  const recorded = { build: null as string | null };
  await record(p, 'workbook build read back', async () => {
    recorded.build = await recordedBuildOf(prisma, runId);
  });
  if (recorded.build !== stored.build) return false;
  // Best effort: the reconciler's sweep deletes whatever is left (sweepOrphanChunks).
  await discardOtherBuilds(prisma, runId, stored.build).catch((err: unknown) => p.log.warn({ err, runId }, 'could not delete other builds of a workbook yet'));
  return true;
}

/** A run whose workbook cannot be built: it and every recipient still open end failed; nothing was sent. */
async function failRun(p: Pipeline, runId: string, error: string): Promise<void> {
  const { prisma } = p;
  const message = error.slice(0, 1000);
  await record(p, 'run failed', () => failRunRecords(prisma, runId, message, ['queued', 'building']));
  await recount(p, runId);
  await releaseWorkbook(prisma, runId).catch((err: unknown) => p.log.warn({ err, runId }, 'could not delete a failed run\'s chunks yet'));
}

/** The run's counts from its recipients' records (settleRunCounts); what its completion asks for when this completed it. */
export async function recount(p: Pipeline, runId: string): Promise<void> {
  const { counts, completed } = await settleRunCounts(p.prisma, runId);
  if (completed) await afterCompletion(p, runId, { recipientsSent: counts.sent, recipientsFailed: counts.failed });
}

/** A run just completed: its attached workbook is released (links keep theirs until they expire). */
async function afterCompletion(p: Pipeline, runId: string, counts: { recipientsSent: number; recipientsFailed: number }): Promise<void> {
  if ((await deliveryOf(p.prisma, runId)) !== 'link' || counts.recipientsSent === 0) {
    p.workbooks.dropRun(runId);
    await releaseWorkbook(p.prisma, runId);
  }
  p.log.info({ runId, sent: counts.recipientsSent, failed: counts.recipientsFailed }, 'report run completed');
}

/** A recipient's outcome with its run's counts (runs/store.ts), then what the run's completion asks for. */
async function recordOutcomeOf(p: Pipeline, what: string, runId: string, recipientId: number, outcome: RecipientOutcome): Promise<void> {
  let completed: { recipientsSent: number; recipientsFailed: number } | undefined;
  await record(p, what, async () => {
    const recorded = await recordOutcomeAndCounts(p.prisma, runId, recipientId, outcome);
    completed = recorded.completed ? { recipientsSent: recorded.counts.sent, recipientsFailed: recorded.counts.failed } : undefined;
  });
  if (completed) await afterCompletion(p, runId, completed);
}

type SendOutcome = { sent: true; messageId: string } | { sent: false; error: string; final: boolean };

/** The report e-mail jobs of the `mail` queue: claim, send once, record (retried) the outcome. */
export async function processReportSend(p: Pipeline, job: Job<SendJobData>): Promise<unknown> {
  const { prisma, config } = p;
  const { recipientId } = job.data;
  // The claim comes before the SMTP conversation: no claim, no send.
  if (!(await claimRecipient(prisma, recipientId))) return { skipped: 'recipient is not waiting for a send' };
  const recipient = await findRecipientWithRun(prisma, recipientId);
  const run = recipient.reportRun;
  if (run.workbookBuild === null || run.workbookChunks === null) return buildFirst(p, run.id, recipientId);
  let mail: { message: MailMessage; link?: MailLink };
  try {
    mail = await reportMail(p, { ...run, workbookBuild: run.workbookBuild, workbookChunks: run.workbookChunks }, recipient);
  } catch (err) {
    // Nothing was sent: the claim goes back (or the reconciler releases it once it is stale).
    await releaseClaim(prisma, recipientId).catch(() => undefined);
    throw err;
  }
  // The claim is renewed until the outcome is recorded, not only while the SMTP conversation lasts:
  // a record retried through a database hiccup must not look abandoned and be sent again.
  return whileClaimed(p, recipientId, async () => {
    const outcome = await sendOnce(p, mail.message, recipient.attempts >= config.mailAttempts);
    return recordOutcome(p, job, run.id, recipientId, recipient.attempts, outcome, mail.link?.expiresAt ?? null);
  });
}

/** Runs `work` with the recipient's claim renewed meanwhile (a live worker's claim never looks abandoned). */
async function whileClaimed<T>(p: Pipeline, recipientId: number, work: () => Promise<T>): Promise<T> {
  const heartbeat = setInterval(() => {
    void renewClaim(p.prisma, recipientId).catch(() => undefined);
  }, Math.max(250, Math.floor(staleAfterMs(p.config) / 4)));
  try {
    return await work();
  } finally {
    clearInterval(heartbeat);
  }
}

/** The sent or failed record of one attempt (retried until it is written), and the run's counts. */
async function recordOutcome(p: Pipeline, job: Job<SendJobData>, runId: string, recipientId: number, attempt: number, outcome: SendOutcome, linkExpiresAt: Date | null): Promise<unknown> {
  const { prisma } = p;
  if (outcome.sent) {
    p.mailOutcomes.sent();
    const { messageId } = outcome;
    await recordOutcomeOf(p, 'e-mail sent', runId, recipientId, { sent: true, messageId, linkExpiresAt });
    return { messageId };
  }
  p.log.warn({ runId, recipientId, attempt, final: outcome.final, error: outcome.error, job: job.id }, 'e-mail send failed');
  const { error, final } = outcome;
  if (final) {
    await recordOutcomeOf(p, 'e-mail failed', runId, recipientId, { sent: false, error, final });
    p.mailOutcomes.failed();
    return { failed: error };
  }
  await record(p, 'e-mail failed', () => recordSendFailed(prisma, recipientId, error, final));
  // A transient failure: the queue tries again after the back-off (MAIL_RETRY_DELAY_MS, doubling).
  throw new Error(error);
}

type StoredRun = RunRecord & { id: string; totals: unknown; generatedAt: Date; delivery: 'attachment' | 'link' | null; workbookBuild: string; workbookChunks: number };

/**
 * The e-mail of one recipient: the stored workbook attached (read from the database as the message
 * is sent, on whichever host), or a new download link of the recipient's own.
 */
async function reportMail(p: Pipeline, run: StoredRun, recipient: { id: number; email: string }): Promise<{ message: MailMessage; link?: MailLink }> {
  const spec = specOfRun(run);
  const kind = reportKinds[spec.type];
  const totals = run.totals as ReportTotals;
  const base = {
    to: recipient.email,
    subject: kind.subject(spec),
    messageId: reportMessageId(p.config, run.id, recipient.id),
  };
  if (run.delivery === 'link') {
    const link = await createLink(p.prisma, p.config, run.id, recipient.id);
    return { message: { ...base, text: kind.text(spec, totals, run.generatedAt.toISOString(), link) }, link };
  }
  const workbook = await p.workbooks.get(p.readChunk, { runId: run.id, build: run.workbookBuild, chunks: run.workbookChunks });
  return {
    message: {
      ...base,
      text: kind.text(spec, totals, run.generatedAt.toISOString()),
      attachments: [{ filename: kind.attachmentName(spec, run.generatedAt), content: workbook, contentType: XLSX_MEDIA_TYPE }],
    },
  };
}

/** A run in `sending` with no stored workbook (recorded before workbooks were stored): build it, then send. */
async function buildFirst(p: Pipeline, runId: string, recipientId: number): Promise<unknown> {
  const { prisma } = p;
  p.log.warn({ runId, recipientId }, 'report run has no stored workbook; building it');
  await requeueRunForBuild(prisma, runId, recipientId);
  await enqueueBuild(p, runId);
  return { skipped: 'workbook to be built first' };
}

/** The send failed because the stored workbook could not be read (the database away): worth another attempt. */
function fromWorkbookRead(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof WorkbookUnavailableError || (e as { code?: unknown }).code === 'EWORKBOOK') return true;
  }
  return false;
}

/** One SMTP conversation and what it came to (a reserved test address's, without one: test-recipients.ts). */
async function sendOnce(p: Pipeline, message: MailMessage, lastAttempt: boolean): Promise<SendOutcome> {
  const simulated = outboxTestFailure(p.config, message.to, lastAttempt);
  if (simulated) return { sent: false, ...simulated };
  try {
    const info = await p.mailer().send(message);
    return { sent: true, messageId: info.messageId };
  } catch (err) {
    return { sent: false, error: describeMailError(err), final: !(isTransientMailError(err) || fromWorkbookRead(err)) || lastAttempt };
  }
}
