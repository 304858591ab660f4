/**
 * The report pipeline's workers. The database is the record of every report run and recipient;
 * Redis (src/jobs) is only the work queue.
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
 * - The reconciler (reconcile.ts) resumes what has no live job; the request waits by reading the
 *   records (run-report.ts).
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Job } from 'bullmq';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { Config } from '../config.ts';
import { collectGarbage } from '../gc.ts';
import { describeMailError, isTransientMailError, type MailMessage, type Mailer } from '../jobs/index.ts';
import { MAIL_QUEUE, REPORTS_QUEUE, type JobQueues } from '../jobs/index.ts';
import type { Logger } from '../logger.ts';
import { XLSX_MEDIA_TYPE } from './builder.ts';
import { reportBuilders } from './index.ts';
import type { ReportSpec, ReportTotals, ServiceStatusFilter } from './types.ts';

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

/** Temp workbooks older than this are swept at worker start (a run that never finished). */
const STALE_TMP_MS = 24 * 3600 * 1000;

/** What every step of the pipeline works with. */
export interface Pipeline {
  prisma: PrismaClient;
  config: Config;
  log: Logger;
  queues: JobQueues;
  /** The SMTP (or outbox) transport; made when the workers start. */
  mailer: () => Mailer;
  /** Counters of e-mails sent and failed for good. */
  mailOutcomes: { sent(): void; failed(): void };
}

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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const enqueueBuild = (p: Pipeline, runId: string) =>
  p.queues.add(REPORTS_QUEUE, 'build', { runId } satisfies BuildJobData, {
    jobId: buildJobId(runId),
    attempts: BUILD_JOB_ATTEMPTS,
    backoff: { type: 'retry' },
  });

export const enqueueSend = (p: Pipeline, recipientId: number) =>
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

interface RunRecord {
  reportType: 'invoices' | 'services';
  brokerId: string;
  apiKeyId: string | null;
  startDate: Date | null;
  endDate: Date | null;
  statusFilter: string | null;
}

function specOf(run: RunRecord): ReportSpec {
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

/** The `reports` queue's processor: builds a run's workbook, then queues one e-mail per recipient. */
export async function processBuild(p: Pipeline, job: Job<BuildJobData>): Promise<{ rows: number } | { skipped: string }> {
  const { prisma, config, log } = p;
  const { runId } = job.data;
  // Only a run that still needs its workbook is built; a repeated job finds it past that and stops.
  const claimed = await prisma.reportRun.updateMany({ where: { id: runId, status: { in: ['queued', 'building'] } }, data: { status: 'building' } });
  if (claimed.count === 0) return { skipped: 'run is not waiting for a build' };
  const run = await prisma.reportRun.findUniqueOrThrow({ where: { id: runId } });
  const spec = specOf(run);
  const file = workbookOf(config, runId);
  const partial = `${file}.${randomUUID().slice(0, 8)}.partial`;
  const started = Date.now();
  let written;
  try {
    await mkdir(path.dirname(file), { recursive: true });
    written = await reportBuilders[spec.type].write(prisma, spec, { maxId: run.snapshotMaxId }, createWriteStream(partial), run.generatedAt);
    await rename(partial, file);
  } catch (err) {
    await rm(partial, { force: true }).catch(() => undefined);
    const reason = err instanceof Error ? err.message : String(err);
    log.error({ err, runId, attempt: job.attemptsMade + 1 }, 'report build failed');
    if (job.attemptsMade + 1 >= BUILD_JOB_ATTEMPTS) await failRun(p, runId, `report could not be generated: ${reason}`);
    throw err;
  }
  // The build's garbage goes before the e-mails make theirs (src/gc.ts).
  collectGarbage();
  await record(p, 'workbook built', () =>
    prisma.reportRun.updateMany({ where: { id: runId, status: 'building' }, data: { status: 'sending', totals: written.totals as object } }),
  );
  const pending = await prisma.reportRecipient.findMany({ where: { reportRunId: runId, status: 'pending' }, select: { id: true } });
  for (const r of pending) await enqueueSend(p, r.id);
  log.info({ runId, type: spec.type, rows: written.rows, ms: Date.now() - started }, 'report workbook built');
  return { rows: written.rows };
}

/** A run whose workbook cannot be built: it and every recipient still open end failed; nothing was sent. */
async function failRun(p: Pipeline, runId: string, error: string): Promise<void> {
  const { prisma } = p;
  const message = error.slice(0, 1000);
  await record(p, 'run failed', () =>
    prisma.$transaction([
      prisma.reportRecipient.updateMany({ where: { reportRunId: runId, status: 'pending' }, data: { status: 'failed', error: message } }),
      prisma.reportRun.updateMany({
        where: { id: runId, status: { in: ['queued', 'building'] } },
        data: { status: 'failed', error: message, completedAt: new Date() },
      }),
    ]),
  );
  await recount(p, runId);
}

/** The run's counts from its recipients' records; completes a `sending` run once none is open. */
export async function recount(p: Pipeline, runId: string): Promise<void> {
  const { prisma } = p;
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
    await rm(workbookOf(p.config, runId), { force: true });
    p.log.info({ runId, sent: counts.recipientsSent, failed: counts.recipientsFailed }, 'report run completed');
  } else {
    await prisma.reportRun.update({ where: { id: runId }, data: counts });
  }
}

type SendOutcome = { sent: true; messageId: string } | { sent: false; error: string; final: boolean };

/** The report e-mail jobs of the `mail` queue: claim, send once, record (retried) the outcome. */
export async function processReportSend(p: Pipeline, job: Job<SendJobData>): Promise<unknown> {
  const { prisma, config } = p;
  const { recipientId } = job.data;
  // The claim comes before the SMTP conversation: no claim, no send.
  const claimed = await prisma.reportRecipient.updateMany({
    where: { id: recipientId, status: 'pending', reportRun: { is: { status: 'sending' } } },
    data: { status: 'sending', claimedAt: new Date(), attempts: { increment: 1 } },
  });
  if (claimed.count === 0) return { skipped: 'recipient is not waiting for a send' };
  const recipient = await prisma.reportRecipient.findUniqueOrThrow({ where: { id: recipientId }, include: { reportRun: true } });
  const run = recipient.reportRun;
  const file = workbookOf(config, run.id);
  if (!existsSync(file)) return rebuildBeforeSending(p, run.id, recipientId);
  const spec = specOf(run);
  const builder = reportBuilders[spec.type];
  const message: MailMessage = {
    to: recipient.email,
    subject: builder.subject(spec),
    text: builder.text(spec, run.totals as unknown as ReportTotals, run.generatedAt.toISOString()),
    attachments: [{ filename: builder.attachmentName(spec, run.generatedAt), path: file, contentType: XLSX_MEDIA_TYPE }],
    messageId: reportMessageId(config, run.id, recipientId),
  };
  const outcome = await sendOnce(p, recipientId, message, recipient.attempts >= config.mailAttempts);
  if (outcome.sent) {
    p.mailOutcomes.sent();
    const { messageId } = outcome;
    await record(p, 'e-mail sent', () =>
      prisma.reportRecipient.update({ where: { id: recipientId }, data: { status: 'sent', messageId, sentAt: new Date(), error: null, claimedAt: null } }),
    );
    await record(p, 'run counts', () => recount(p, run.id));
    return { messageId };
  }
  p.log.warn({ runId: run.id, recipientId, attempt: recipient.attempts, final: outcome.final, error: outcome.error }, 'e-mail send failed');
  const { error, final } = outcome;
  await record(p, 'e-mail failed', () =>
    prisma.reportRecipient.update({ where: { id: recipientId }, data: { status: final ? 'failed' : 'pending', error, claimedAt: null } }),
  );
  if (final) {
    p.mailOutcomes.failed();
    await record(p, 'run counts', () => recount(p, run.id));
    return { failed: error };
  }
  // A transient failure: the queue tries again after the back-off (MAIL_RETRY_DELAY_MS, doubling).
  throw new Error(error);
}

/** The workbook is gone (another host's disk, a swept tmp dir): build it again, then send. */
async function rebuildBeforeSending(p: Pipeline, runId: string, recipientId: number): Promise<unknown> {
  const { prisma } = p;
  p.log.warn({ runId, recipientId }, 'report workbook missing; building it again');
  await prisma.$transaction([
    prisma.reportRecipient.update({ where: { id: recipientId }, data: { status: 'pending', claimedAt: null, attempts: { decrement: 1 } } }),
    prisma.reportRun.updateMany({ where: { id: runId, status: 'sending' }, data: { status: 'queued' } }),
  ]);
  await enqueueBuild(p, runId);
  return { skipped: 'workbook rebuilt' };
}

/** One SMTP conversation, with the claim renewed while it lasts (a live worker's claim never looks abandoned). */
async function sendOnce(p: Pipeline, recipientId: number, message: MailMessage, lastAttempt: boolean): Promise<SendOutcome> {
  const heartbeat = setInterval(() => {
    void p.prisma.reportRecipient
      .updateMany({ where: { id: recipientId, status: 'sending' }, data: { claimedAt: new Date() } })
      .catch(() => undefined);
  }, Math.max(250, Math.floor(staleAfterMs(p.config) / 4)));
  try {
    const info = await p.mailer().send(message);
    return { sent: true, messageId: info.messageId };
  } catch (err) {
    return { sent: false, error: describeMailError(err), final: !isTransientMailError(err) || lastAttempt };
  } finally {
    clearInterval(heartbeat);
  }
}

/** Removes temp workbooks of runs that never finished. */
export async function sweepTmp(config: Config): Promise<void> {
  const dir = tmpDirOf(config);
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const file = path.join(dir, name);
    const info = await stat(file).catch(() => undefined);
    if (info && Date.now() - info.mtimeMs > STALE_TMP_MS) await rm(file, { force: true });
  }
}
