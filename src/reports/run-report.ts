/**
 * A report asked for over the API: count, record the run and its recipients (within the broker's
 * report bounds), queue the build, and wait (REPORT_WAIT_MS) by reading the records. Only final
 * outcomes count as sent or failed; a recipient still under way is pending.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Prisma } from '../../generated/prisma/client.ts';
import { admitReportRun, reportLimitsOf } from './limits.ts';
import { reportBuilders } from './index.ts';
import { enqueueBuild, type Pipeline } from './pipeline.ts';
import { countRunRecipients, createRunRecords, failRunRecords, runStatusOf, type RecipientCounts } from './run-store.ts';
import { ReportGenerationError, ReportNoDataError, type ReportResult, type ReportSpec, type ReportTotals } from './types.ts';

interface Outcome extends RecipientCounts {
  status: string;
  error: string | null;
}

async function outcomeOf(p: Pipeline, runId: string): Promise<Outcome> {
  const [run, counts] = await Promise.all([
    runStatusOf(p.prisma, runId),
    countRunRecipients(p.prisma, runId),
  ]);
  return { status: run.status, error: run.error, ...counts };
}

/**
 * Counts the report rows (throws `ReportNoDataError` when there is none and `allowEmpty` is not
 * set), records the run and its recipients, enqueues the build (which then enqueues one e-mail
 * per recipient) and waits at most `config.reportWaitMs` for the outcomes, read from the database.
 * Throws (→ 500 server_error) only when the run could not be recorded or queued, or when its
 * workbook could not be built: once the e-mails are handed over, it answers with what is recorded.
 */
export async function runReport<T extends ReportTotals>(p: Pipeline, spec: ReportSpec): Promise<ReportResult<T>> {
  const deadline = Date.now() + p.config.reportWaitMs;
  const counted = await reportBuilders[spec.type].count(p.prisma, spec);
  if (counted.rows === 0 && !spec.allowEmpty) throw new ReportNoDataError(spec);
  const generatedAt = new Date();
  // Counted and created in one transaction: concurrent requests cannot both pass a bound (429).
  const run = await admitReportRun(p.prisma, reportLimitsOf(p.config), spec.brokerId, (tx) => recordRun(tx, spec, counted, generatedAt));
  await queueOrFail(p, run.id, spec.recipients.length);
  const known = await waitForOutcomes(p, run.id, spec.recipients.length, deadline);
  return {
    runId: run.id,
    recipientsSent: known.sent,
    recipientsFailed: known.failed,
    recipientsPending: known.pending,
    totals: counted.totals as T,
    generatedAt: generatedAt.toISOString(),
  };
}

type Counted = Awaited<ReturnType<(typeof reportBuilders)[ReportSpec['type']]['count']>>;

/** The run and its recipients, in the admission's transaction (with the effect's record, if any). */
async function recordRun(tx: Prisma.TransactionClient, spec: ReportSpec, counted: Counted, generatedAt: Date) {
  const run = await createRunRecords(
    tx,
    {
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
    },
    spec.recipients,
  );
  await spec.work?.within(tx).recordEffect({ type: 'report', id: run.id });
  return run;
}

/** Not queued at all: the run ends failed, so no worker sends what the caller was told failed. */
async function queueOrFail(p: Pipeline, runId: string, recipients: number): Promise<void> {
  try {
    await enqueueBuild(p, runId);
  } catch (err) {
    const reason = `the report could not be queued: ${err instanceof Error ? err.message : String(err)}`;
    await failRunRecords(p.prisma, runId, reason, ['queued'], { recipientsFailed: recipients }).catch((recordErr: unknown) => p.log.error({ err: recordErr, runId }, 'could not record a report that was not queued'));
    throw err;
  }
}

/** From here on the e-mails are handed over: the answer is what the records say when the wait ends. */
async function waitForOutcomes(p: Pipeline, runId: string, recipients: number, deadline: number): Promise<Outcome> {
  let known: Outcome = { status: 'queued', error: null, sent: 0, failed: 0, pending: recipients };
  for (let delay = 25; ; delay = Math.min(250, Math.ceil(delay * 1.5))) {
    try {
      known = await outcomeOf(p, runId);
    } catch (err) {
      p.log.warn({ err, runId }, 'could not read the report outcome; answering with what was last read');
    }
    if (known.status === 'failed') throw new ReportGenerationError(runId, known.error ?? 'unknown reason');
    if (known.pending === 0 && known.status !== 'queued' && known.status !== 'building') return known;
    const left = deadline - Date.now();
    if (left <= 0) {
      p.log.info({ runId, pending: known.pending }, 'report wait ended with e-mails still under way');
      return known;
    }
    await sleep(Math.min(delay, left));
  }
}
