/**
 * The reconciler: each worker, on start and every REPORT_RECONCILE_MS, finds runs and recipients
 * that have no live job (Redis lost them, a worker died, a completion failed) and resumes or
 * finishes them, so no run or recipient stays under way, whatever Redis lost; and deletes the stored
 * workbooks no run needs any more (the bound on their storage, README "Report delivery"). Safe to
 * run in several workers at once: every step is a conditional update, an idempotent delete or an
 * enqueue under a fixed job id.
 */
import { MAIL_QUEUE, startPeriodic } from '../../jobs/index.ts';
import { buildJobId, enqueueBuild, enqueueSend, recount, REPORTS_QUEUE, sendJobId, staleAfterMs, type Pipeline } from './pipeline.ts';
import {
  abandonedClaims,
  releaseAbandonedClaim,
  runsWaitingForBuild,
  runsWithWorkbooksToRelease,
  touchRecipient,
  touchRun,
  unfinishedRuns,
  waitingRecipients,
} from '../runs/store.ts';
import { releaseWorkbook, sweepOrphanChunks } from '../workbook/store.ts';

export async function reconcile(p: Pipeline): Promise<void> {
  const before = new Date(Date.now() - staleAfterMs(p.config));
  await resumeRuns(p, before);
  await releaseAbandonedSends(p, before);
  await resumeSends(p, before);
  for (const run of await unfinishedRuns(p.prisma, before)) await recount(p, run.id);
  await releaseWorkbooks(p);
}

/**
 * Deletes stored workbooks nobody can need any more: a failed run's at once, an attached one's once
 * the run completed (recount does it then; this catches a deletion that failed), a linked one's once
 * its last link has expired (or when no link e-mail was sent). Then chunks no run reads (sweepOrphanChunks).
 */
export async function releaseWorkbooks(p: Pipeline): Promise<void> {
  const done = await runsWithWorkbooksToRelease(p.prisma, new Date());
  for (const run of done) await releaseWorkbook(p.prisma, run.id);
  if (done.length > 0) p.log.info({ runs: done.length }, 'stored report workbooks deleted');
  await sweepOrphanChunks(p.prisma);
}

/** Runs waiting for a build that has no job. */
async function resumeRuns(p: Pipeline, before: Date): Promise<void> {
  for (const run of await runsWaitingForBuild(p.prisma, before)) {
    if (await p.queues.isLive(REPORTS_QUEUE, buildJobId(run.id))) continue;
    p.log.warn({ runId: run.id }, 'resuming a report run that had no build job');
    await touchRun(p.prisma, run.id);
    await enqueueBuild(p, run.id);
  }
}

/** Sends whose worker stopped renewing its claim: it died, maybe after the server accepted. */
async function releaseAbandonedSends(p: Pipeline, before: Date): Promise<void> {
  for (const r of await abandonedClaims(p.prisma, before)) {
    if (!(await releaseAbandonedClaim(p.prisma, r.id, r.claimedAt))) continue;
    p.log.warn({ runId: r.reportRunId, recipientId: r.id }, 'releasing an abandoned send');
    await enqueueSend(p, r.id);
  }
}

/** Recipients waiting for a send that has no job. */
async function resumeSends(p: Pipeline, before: Date): Promise<void> {
  for (const r of await waitingRecipients(p.prisma, before)) {
    if (await p.queues.isLive(MAIL_QUEUE, sendJobId(r.id))) continue;
    p.log.warn({ runId: r.reportRunId, recipientId: r.id }, 'resuming a report e-mail that had no job');
    await touchRecipient(p.prisma, r.id);
    await enqueueSend(p, r.id);
  }
}

/** Runs the reconciler now and then every REPORT_RECONCILE_MS until stopped. */
export function startReconciling(p: Pipeline): { stop(): Promise<void> } {
  return startPeriodic(() => reconcile(p), p.config.reportReconcileMs, (err) => p.log.warn({ err }, 'report reconciliation failed; trying again later'));
}
