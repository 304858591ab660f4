/**
 * The report operations in the domain's words: e-mail an invoices or a services report, and read
 * a report run back, or the broker's runs. `liveReports` records runs (runs/store.ts) and queues
 * their builds on the queues it is handed (delivery/pipeline.ts); `sandboxReports` (sandbox.ts)
 * records test-mode runs of the same shape without reading business data, building or sending.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { components } from '../../generated/api.ts';
import type { Config } from '../config.ts';
import type { JobQueues } from '../jobs/index.ts';
import type { Logger } from '../logger.ts';
import type { Caller } from '../shared/caller.ts';
import type { Page, PageWindow } from '../shared/page.ts';
import { enqueueBuild } from './delivery/pipeline.ts';
import { reportKinds } from './kinds/registry.ts';
import { admitReportRun, checkReportLimits, reportLimitsOf } from './runs/limits.ts';
import { findReportRun, listReportRuns, type RecipientCounts, type ReportRunData } from './runs/present.ts';
import { countRunRecipients, createRunRecords, runStatusOf } from './runs/store.ts';
import {
  ReportGenerationError,
  ReportNoDataError,
  type InvoiceTotals,
  type ReportResult,
  type ReportSpec,
  type ReportTotals,
  type ServiceStatusFilter,
  type ServiceTotals,
} from './types.ts';
import type { ReadClient, ReadTx } from '../shared/db-errors.ts';

export type InvoicesReportData = components['schemas']['InvoicesReport'];
export type ServicesReportData = components['schemas']['ServicesReport'];

export interface InvoicesReportInput {
  recipients: string[];
  start: string;
  end: string;
}

export interface ServicesReportInput {
  recipients: string[];
  status: ServiceStatusFilter | null;
}

export interface ReportUseCases {
  sendInvoicesReport(caller: Caller, input: InvoicesReportInput): Promise<InvoicesReportData>;
  sendServicesReport(caller: Caller, input: ServicesReportInput): Promise<ServicesReportData>;
  findReport(caller: Caller, reportId: string): Promise<ReportRunData>;
  /** The broker's runs of the key's mode, newest first, each as `findReport` answers it. */
  listReports(caller: Caller, window: PageWindow<string>): Promise<Page<ReportRunData>>;
}

/** What a live report run takes: the database, its settings and log, and the queues its build goes on. */
export interface ReportDeps {
  prisma: ReadClient;
  config: Config;
  log: Logger;
  queues: JobQueues;
}

export function liveReports(deps: ReportDeps): ReportUseCases {
  const run = async <T extends ReportTotals>(caller: Caller, spec: Omit<ReportSpec, 'brokerId' | 'apiKeyId'>) => {
    // The early check of the broker's report bounds, before the counting query of a big report.
    await checkReportLimits(deps.prisma, deps.config, caller.brokerId);
    return sendReport<T>(deps, { ...spec, brokerId: caller.brokerId, apiKeyId: caller.apiKeyId, work: caller.unitOfWork });
  };
  return {
    async sendInvoicesReport(caller, { recipients, start, end }) {
      const result = await run<InvoiceTotals>(caller, { type: 'invoices', recipients, startDate: start, endDate: end });
      return {
        object: 'invoices_report',
        report_id: result.runId,
        report_type: 'invoices',
        ...result.totals,
        recipients_sent: result.recipientsSent,
        recipients_failed: result.recipientsFailed,
        recipients_pending: result.recipientsPending,
        date_range: { start, end },
        generated_at: result.generatedAt,
      };
    },

    async sendServicesReport(caller, { recipients, status }) {
      // A broker without (matching) services still gets its report: an empty workbook.
      const result = await run<ServiceTotals>(caller, { type: 'services', recipients, statusFilter: status, allowEmpty: true });
      return {
        object: 'services_report',
        report_id: result.runId,
        report_type: 'services',
        total_services: result.totals.total_services,
        services_by_status: result.totals.services_by_status,
        status_filter: status,
        recipients_sent: result.recipientsSent,
        recipients_failed: result.recipientsFailed,
        recipients_pending: result.recipientsPending,
        generated_at: result.generatedAt,
      };
    },

    findReport: (caller, reportId) => findReportRun(deps.prisma, { brokerId: caller.brokerId, mode: 'live' }, reportId),
    listReports: (caller, window) => listReportRuns(deps.prisma, { brokerId: caller.brokerId, mode: 'live' }, window),
  };
}

interface Outcome extends RecipientCounts {
  status: string;
  error: string | null;
}

async function outcomeOf(p: ReportDeps, runId: string): Promise<Outcome> {
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
 * Throws only when the run could not be recorded, or its workbook could not be built; a run not
 * queued is answered as pending, and once the e-mails are handed over it answers with what is recorded.
 */
export async function sendReport<T extends ReportTotals>(p: ReportDeps, spec: ReportSpec): Promise<ReportResult<T>> {
  const deadline = Date.now() + p.config.reportWaitMs;
  const counted = await reportKinds[spec.type].count(p.prisma, spec);
  if (counted.rows === 0 && !spec.allowEmpty) throw new ReportNoDataError(spec);
  const generatedAt = new Date();
  // Counted and created in one transaction: concurrent requests cannot both pass a bound (429).
  const run = await admitReportRun(p.prisma, reportLimitsOf(p.config), spec.brokerId, (tx) => recordRun(tx, spec, counted, generatedAt));
  // Not queued: nothing will change before Redis is back, so the answer is what is recorded now.
  const queued = await queueBuild(p, run.id);
  const known = await waitForOutcomes(p, run.id, spec.recipients.length, queued ? deadline : Date.now());
  return {
    runId: run.id,
    recipientsSent: known.sent,
    recipientsFailed: known.failed,
    recipientsPending: known.pending,
    totals: counted.totals as T,
    generatedAt: generatedAt.toISOString(),
  };
}

type Counted = Awaited<ReturnType<(typeof reportKinds)[ReportSpec['type']]['count']>>;

/** The run and its recipients, in the admission's transaction (with the effect's record, if any). */
async function recordRun(tx: ReadTx, spec: ReportSpec, counted: Counted, generatedAt: Date) {
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

/**
 * The run is recorded: when its build cannot be queued (Redis away), it waits in `queued` for the
 * reconciler, which queues it once Redis is back; false then, and the answer says what is pending.
 */
async function queueBuild(p: ReportDeps, runId: string): Promise<boolean> {
  try {
    await enqueueBuild(p, runId);
    return true;
  } catch (err) {
    p.log.warn({ err, runId }, 'report recorded but not queued; the reconciler queues it when Redis is back');
    return false;
  }
}

/** From here on the e-mails are handed over: the answer is what the records say when the wait ends. */
async function waitForOutcomes(p: ReportDeps, runId: string, recipients: number, deadline: number): Promise<Outcome> {
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
