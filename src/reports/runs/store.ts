/**
 * The records of report runs and their recipients, and every change the pipeline makes to them
 * (use-cases.ts records, delivery/pipeline.ts builds and sends, delivery/reconcile.ts resumes): each a named step
 * that returns data. Every change is conditional on the state it leaves, so a repeated job or two
 * workers at once change a record once. The bounds' queries are here, their policy limits.ts's; the
 * stored workbook's chunks are workbook/store.ts's, the links delivery/links.ts's.
 */
import type { Prisma } from '../../../generated/prisma/client.ts';
import type { Db } from '../../shared/db-errors.ts';
import { recordEvents } from '../../events/store.ts';
import { previousAttributes } from '../../events/previous-attributes.ts';
import type { StoredWorkbook } from '../workbook/store.ts';
import { recipientCounts, reportRunOf, type RecipientCounts, type ReportRunData } from './present.ts';
import type { ReadClient, ReadTx } from '../../shared/db-errors.ts';

/** A run's counts as its recipients' records stand. */
export async function countRunRecipients(db: Db, runId: string): Promise<RecipientCounts> {
  const rows = await db.reportRecipient.groupBy({ by: ['status'], where: { reportRunId: runId }, _count: { _all: true } });
  return recipientCounts(rows.map((r) => [r.status, r._count._all] as const));
}

// ---- runs ----

/** A new run and its recipients (`pending`), in the caller's transaction (the broker's admission). */
export const createRunRecords = (tx: ReadTx, data: Omit<Prisma.ReportRunUncheckedCreateInput, 'recipients'>, recipients: string[]) =>
  tx.reportRun.create({ data: { ...data, recipients: { create: recipients.map((email) => ({ email })) } }, select: { id: true } });

export const findRun = (prisma: ReadClient, runId: string) => prisma.reportRun.findUniqueOrThrow({ where: { id: runId } });

export const runStatusOf = (prisma: ReadClient, runId: string) =>
  prisma.reportRun.findUniqueOrThrow({ where: { id: runId }, select: { status: true, error: true } });

/** Takes a run that waits for its workbook into `building`; false when it no longer waits (a repeated job). */
export async function claimRunForBuild(prisma: ReadClient, runId: string): Promise<boolean> {
  const claimed = await prisma.reportRun.updateMany({ where: { id: runId, mode: 'live', status: { in: ['queued', 'building'] } }, data: { status: 'building' } });
  return claimed.count > 0;
}

/** Records a stored workbook as the run's (`sending`), unless another build was recorded first. */
export const recordRunBuilt = (prisma: ReadClient, runId: string, stored: StoredWorkbook, totals: object, delivery: 'attachment' | 'link') =>
  prisma.reportRun.updateMany({
    where: { id: runId, status: 'building' },
    data: {
      status: 'sending',
      totals,
      workbookBuild: stored.build,
      workbookBytes: stored.bytes,
      workbookChunks: stored.chunks,
      workbookSha256: stored.sha256,
      delivery,
    },
  });

/** The build recorded as the run's workbook (null: none yet). */
export async function recordedBuildOf(prisma: ReadClient, runId: string): Promise<string | null> {
  return (await prisma.reportRun.findUniqueOrThrow({ where: { id: runId }, select: { workbookBuild: true } })).workbookBuild;
}

/**
 * A run that ends before any e-mail went out (`from`: the states it may still be in): it and every
 * recipient still waiting end failed with `error`.
 */
export const failRunRecords = (prisma: ReadClient, runId: string, error: string, from: Array<'queued' | 'building'>, extra: { recipientsFailed?: number } = {}) =>
  prisma.$transaction(async (tx) => {
    await lockRun(tx, runId);
    const before = await runAsShown(tx, runId);
    await tx.reportRecipient.updateMany({ where: { reportRunId: runId, status: 'pending' }, data: { status: 'failed', error } });
    const failed = await tx.reportRun.updateMany({ where: { id: runId, status: { in: from } }, data: { status: 'failed', error, completedAt: new Date(), ...extra } });
    if (failed.count > 0) await recordRunEvent(tx, runId, 'report.failed', before);
  });

const runAsShown = async (tx: Db, runId: string): Promise<ReportRunData> => (await reportRunOf(tx, runId)).data;

/** The event of a run's end, in the transaction that ended it: the run as `GET /reports/{report_id}` shows it then, and `before` it. */
async function recordRunEvent(tx: Db, runId: string, type: 'report.completed' | 'report.failed', before: ReportRunData): Promise<void> {
  const run = await reportRunOf(tx, runId);
  await recordEvents(tx, [{ brokerId: run.brokerId, mode: run.mode, type, object: run.data, previousAttributes: previousAttributes(before, run.data) }]);
}

// ---- the sandbox's runs ----

/** A sandbox recipient as its simulated run records it: its final or pending state after one attempt. */
export interface SimulatedRecipient {
  email: string;
  status: 'sent' | 'failed' | 'pending';
  error: string | null;
}

/**
 * A sandbox key's run, recorded in test mode as a live run stands once each recipient's first
 * attempt is known: no workbook (none is built) and no queue (nothing is sent; the pipeline's
 * queries take live runs only). When no recipient is pending it is `completed` with its
 * `report.completed`, in this transaction, and `after(tx)` (the request's effect) commits with it.
 */
export async function recordSimulatedRun(
  prisma: ReadClient,
  data: Omit<Prisma.ReportRunUncheckedCreateInput, 'recipients' | 'mode' | 'status'>,
  recipients: SimulatedRecipient[],
  after: (tx: ReadTx) => Promise<unknown>,
): Promise<ReportRunData> {
  return prisma.$transaction(async (tx) => {
    const now = new Date();
    const counts = recipientCounts(recipients.map((r) => [r.status, 1] as const));
    const completed = counts.pending === 0;
    const run = await tx.reportRun.create({
      data: {
        ...data,
        mode: 'test',
        status: completed ? 'completed' : 'sending',
        delivery: 'attachment',
        recipientsSent: counts.sent,
        recipientsFailed: counts.failed,
        createdAt: now,
        completedAt: completed ? now : null,
        workbookDeletedAt: now,
        recipients: {
          create: recipients.map((r) => ({ email: r.email, status: r.status, error: r.error, attempts: 1, sentAt: r.status === 'sent' ? now : null })),
        },
      },
      select: { id: true },
    });
    const shown = await runAsShown(tx, run.id);
    if (completed) await recordRunEvent(tx, run.id, 'report.completed', beforeLastOutcome(shown));
    await after(tx);
    return shown;
  });
}

/** A completed run as it stood just before its last recipient's outcome was recorded (that attempt under way): what its `report.completed` compares with. */
function beforeLastOutcome(run: ReportRunData): ReportRunData {
  const last = run.recipients.at(-1);
  if (!last) return run;
  const counts = { recipients_sent: run.recipients_sent - (last.status === 'sent' ? 1 : 0), recipients_failed: run.recipients_failed - (last.status === 'failed' ? 1 : 0) };
  const sending = { ...last, status: 'sending' as const, last_error: null, sent_at: null };
  return { ...run, ...counts, recipients_pending: run.recipients_pending + 1, status: 'sending', finished_at: null, recipients: [...run.recipients.slice(0, -1), sending] };
}

type StoredCounts = { recipientsSent: number; recipientsFailed: number };

/** In `tx`: a `sending` run completed with its final counts and its `report.completed` event (`before`: the run as its transaction found it); false when it was not `sending`. */
async function completeSendingRun(tx: Db, runId: string, counts: StoredCounts, before: ReportRunData): Promise<boolean> {
  const done = await tx.reportRun.updateMany({ where: { id: runId, status: 'sending' }, data: { ...counts, status: 'completed', completedAt: new Date() } });
  if (done.count > 0) await recordRunEvent(tx, runId, 'report.completed', before);
  return done.count > 0;
}

export async function deliveryOf(prisma: ReadClient, runId: string): Promise<'attachment' | 'link' | null> {
  return (await prisma.reportRun.findUniqueOrThrow({ where: { id: runId }, select: { delivery: true } })).delivery;
}

/** A recipient's claim given back and its run sent back to `queued`: the run was recorded `sending` without a stored workbook. */
export const requeueRunForBuild = (prisma: ReadClient, runId: string, recipientId: number) =>
  prisma.$transaction([
    prisma.reportRecipient.update({ where: { id: recipientId }, data: { status: 'pending', claimedAt: null, attempts: { decrement: 1 } } }),
    prisma.reportRun.updateMany({ where: { id: runId, status: 'sending', workbookBuild: null }, data: { status: 'queued' } }),
  ]);

// ---- the broker's bounds (limits.ts) ----

/** Final states of a run; every other state counts as running. */
const FINAL_STATES = ['completed', 'failed'] as const;
/** First key of the two-key advisory lock that serialises one broker's admissions. */
const ADMISSION_LOCK_SPACE = 0x52_50_54; // "RPT"

/**
 * Takes the broker's admission lock until the transaction ends, if no other admission holds it: its
 * admissions count one after another. Never waits (a wait would hold a connection and run into the
 * transaction's timeout); false when another admission holds it.
 */
export async function tryLockBrokerAdmissions(tx: ReadTx, brokerId: string): Promise<boolean> {
  const [row] = await tx.$queryRaw<Array<{ locked: boolean }>>`SELECT pg_try_advisory_xact_lock(${ADMISSION_LOCK_SPACE}::int4, hashtext(${brokerId})) AS locked`;
  return row?.locked === true;
}

/** The broker's runs not final that were created after `createdAfter` (older ones no longer count). */
export const countRunningRuns = (db: Db, brokerId: string, createdAfter: Date) =>
  db.reportRun.count({ where: { brokerId, mode: 'live', status: { notIn: [...FINAL_STATES] }, createdAt: { gt: createdAfter } } });

export const countRunsCreatedSince = (db: Db, brokerId: string, since: Date) => db.reportRun.count({ where: { brokerId, mode: 'live', createdAt: { gt: since } } });

/** When the `n`th newest of the broker's runs created after `since` was created (undefined: fewer runs). */
export async function nthNewestRunCreatedSince(db: Db, brokerId: string, since: Date, n: number): Promise<Date | undefined> {
  const [run] = await db.reportRun.findMany({ where: { brokerId, mode: 'live', createdAt: { gt: since } }, orderBy: { createdAt: 'desc' }, skip: n - 1, take: 1, select: { createdAt: true } });
  return run?.createdAt;
}

// ---- recipients ----

export const pendingRecipientIds = async (prisma: ReadClient, runId: string): Promise<number[]> =>
  (await prisma.reportRecipient.findMany({ where: { reportRunId: runId, status: 'pending' }, select: { id: true } })).map((r) => r.id);

/** Takes a waiting recipient of a `sending` run into `sending` (one more attempt); false when it does not wait. */
export async function claimRecipient(prisma: ReadClient, recipientId: number): Promise<boolean> {
  const claimed = await prisma.reportRecipient.updateMany({
    where: { id: recipientId, status: 'pending', reportRun: { is: { status: 'sending', mode: 'live' } } },
    data: { status: 'sending', claimedAt: new Date(), attempts: { increment: 1 } },
  });
  return claimed.count > 0;
}

export const findRecipientWithRun = (prisma: ReadClient, recipientId: number) =>
  prisma.reportRecipient.findUniqueOrThrow({ where: { id: recipientId }, include: { reportRun: true } });

/** Keeps a claim fresh while its worker lives. */
export const renewClaim = (prisma: ReadClient, recipientId: number) =>
  prisma.reportRecipient.updateMany({ where: { id: recipientId, status: 'sending' }, data: { claimedAt: new Date() } });

/** Gives a claim back with its attempt: nothing was sent. */
export const releaseClaim = (prisma: ReadClient, recipientId: number) =>
  prisma.reportRecipient.updateMany({ where: { id: recipientId, status: 'sending' }, data: { status: 'pending', claimedAt: null, attempts: { decrement: 1 } } });

/** What one attempt of a recipient's e-mail came to, as its record changes. */
export type RecipientOutcome =
  | { sent: true; messageId: string; linkExpiresAt: Date | null }
  | { sent: false; error: string; final: boolean };

const outcomeChange = (o: RecipientOutcome): Prisma.ReportRecipientUpdateInput =>
  o.sent
    ? { status: 'sent', messageId: o.messageId, sentAt: new Date(), error: null, claimedAt: null, linkExpiresAt: o.linkExpiresAt }
    : { status: o.final ? 'failed' : 'pending', error: o.error, claimedAt: null };

/** A failed attempt: final, or waiting for the next one. */
export const recordSendFailed = (prisma: ReadClient, recipientId: number, error: string, final: boolean) =>
  prisma.reportRecipient.update({ where: { id: recipientId }, data: outcomeChange({ sent: false, error, final }) });

/**
 * A recipient's outcome and its run's counts in one transaction, the run's row locked first, so the
 * outcomes of one run are recorded one after another: each count sees every outcome recorded before
 * it, and the last outcome completes the run (with its `report.completed` event) in the same commit.
 * Nobody sees every recipient final while the run still shows `sending` (a report's answer, the
 * broker's count of running reports). Returns the counts, and whether this call completed the run.
 */
export async function recordOutcomeAndCounts(prisma: ReadClient, runId: string, recipientId: number, outcome: RecipientOutcome): Promise<{ counts: RecipientCounts; completed: boolean }> {
  return prisma.$transaction(async (tx) => {
    await lockRun(tx, runId);
    // Only a final outcome can complete the run: then its event compares with the run as it stood before this outcome.
    const before = outcome.sent || outcome.final ? await runAsShown(tx, runId) : undefined;
    await tx.reportRecipient.update({ where: { id: recipientId }, data: outcomeChange(outcome) });
    return countAndSettle(tx, runId, before);
  });
}

/**
 * The run's counts from its recipients' records, stored under the run's lock (so no count taken
 * before another worker's outcome is stored after it); a `sending` run none of whose recipients is
 * open is completed in the same commit, with its event. The reconciler's and a failed build's step.
 */
export const settleRunCounts = (prisma: ReadClient, runId: string): Promise<{ counts: RecipientCounts; completed: boolean }> =>
  prisma.$transaction(async (tx) => {
    await lockRun(tx, runId);
    return countAndSettle(tx, runId, await runAsShown(tx, runId));
  });

/** The run's row locked until the transaction ends: counts and completion of one run go one at a time. */
async function lockRun(tx: Db, runId: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 FROM "report_runs" WHERE "id" = ${runId} FOR UPDATE`;
}

/** `before`: the run as the transaction found it, undefined when nothing in it can complete the run. */
async function countAndSettle(tx: Db, runId: string, before: ReportRunData | undefined): Promise<{ counts: RecipientCounts; completed: boolean }> {
  const counts = await countRunRecipients(tx, runId);
  const stored = { recipientsSent: counts.sent, recipientsFailed: counts.failed };
  if (before && counts.pending === 0 && (await completeSendingRun(tx, runId, stored, before))) return { counts, completed: true };
  await tx.reportRun.update({ where: { id: runId }, data: stored });
  return { counts, completed: false };
}

// ---- what the reconciler looks for ----

/** `sending` runs not touched since `before` whose every recipient is final: their completion was missed. */
export const unfinishedRuns = (prisma: ReadClient, before: Date) =>
  prisma.reportRun.findMany({
    where: { status: 'sending', mode: 'live', updatedAt: { lt: before }, recipients: { none: { status: { in: ['pending', 'sending'] } } } },
    select: { id: true },
    take: 100,
  });

/** Runs whose stored workbook nobody can need: failed, attached and completed, or every link expired. */
export const runsWithWorkbooksToRelease = (prisma: ReadClient, now: Date) =>
  prisma.reportRun.findMany({
    where: {
      workbookDeletedAt: null,
      mode: 'live',
      OR: [
        { status: 'failed' },
        { status: 'completed', delivery: { not: 'link' } },
        { status: 'completed', delivery: null },
        { status: 'completed', recipientsSent: 0 },
        { status: 'completed', delivery: 'link', links: { none: { expiresAt: { gt: now } } } },
      ],
    },
    select: { id: true },
    take: 100,
  });

/** Runs waiting for a build, not touched since `before`. */
export const runsWaitingForBuild = (prisma: ReadClient, before: Date) =>
  prisma.reportRun.findMany({ where: { status: { in: ['queued', 'building'] }, mode: 'live', updatedAt: { lt: before } }, select: { id: true }, take: 100 });

/** Marks a run as seen now (the reconciler resumed it). */
export const touchRun = (prisma: ReadClient, runId: string) => prisma.reportRun.update({ where: { id: runId }, data: { updatedAt: new Date() } });

/** Claims not renewed since `before`: their worker died, maybe after the server accepted. */
export const abandonedClaims = (prisma: ReadClient, before: Date) =>
  prisma.reportRecipient.findMany({ where: { status: 'sending', claimedAt: { lt: before }, reportRun: { is: { mode: 'live' } } }, select: { id: true, claimedAt: true, reportRunId: true }, take: 500 });

/** Releases a claim as found (`claimedAt`), without its attempt; false when it changed meanwhile. */
export async function releaseAbandonedClaim(prisma: ReadClient, recipientId: number, claimedAt: Date | null): Promise<boolean> {
  const released = await prisma.reportRecipient.updateMany({ where: { id: recipientId, status: 'sending', claimedAt }, data: { status: 'pending', claimedAt: null } });
  return released.count > 0;
}

/** Recipients of `sending` runs waiting for a send, not touched since `before`. */
export const waitingRecipients = (prisma: ReadClient, before: Date) =>
  prisma.reportRecipient.findMany({
    where: { status: 'pending', updatedAt: { lt: before }, reportRun: { is: { status: 'sending', mode: 'live' } } },
    select: { id: true, reportRunId: true },
    take: 500,
  });

/** Marks a recipient as seen now (the reconciler resumed its send). */
export const touchRecipient = (prisma: ReadClient, recipientId: number) =>
  prisma.reportRecipient.update({ where: { id: recipientId }, data: { updatedAt: new Date() } });
