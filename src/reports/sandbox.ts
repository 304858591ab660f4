/**
 * The sandbox's report use cases: simulated totals (documented in openapi.yaml), no business record
 * read, no file written, no e-mail sent. Each report is recorded as a test-mode run (runs/store.ts)
 * whose recipients end as the reserved test addresses ask (delivery/test-recipients.ts; any other
 * address `sent`), so the answer, `GET /reports/{report_id}`, `GET /reports` and the run's
 * `report.completed` event all tell the same run.
 */
import { randomUUID } from 'node:crypto';
import type { Caller } from '../shared/caller.ts';
import { testRecipientError, testRecipientOutcome } from './delivery/test-recipients.ts';
import { findReportRun, listReportRuns, reportNotFound, type ReportRunData } from './runs/present.ts';
import { recordSimulatedRun, type SimulatedRecipient } from './runs/store.ts';
import { ReportNoDataError, type InvoiceTotals, type ServiceStatusFilter, type ServiceTotals } from './types.ts';
import type { ReportUseCases } from './use-cases.ts';
import type { ReadClient } from '../shared/db-errors.ts';

const DAY_MS = 86_400_000;

/**
 * The sandbox's invoices totals (documented in openapi.yaml): 12 invoices, 9 paid and 3 unpaid, for a
 * range of 12 days or more; a shorter range has one simulated invoice a day, every fourth unpaid, so
 * no range claims more invoices than it has days (the dates are valid and in order: rules.ts).
 */
export function sandboxInvoiceTotals(start: string, end: string): InvoiceTotals {
  const days = Math.round((Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / DAY_MS) + 1;
  const total = Math.min(12, Math.max(1, days));
  const unpaid = Math.floor(total / 4);
  return { total_invoices: total, paid_invoices: total - unpaid, unpaid_invoices: unpaid };
}

const STATUSES: readonly ServiceStatusFilter[] = ['pending', 'active', 'suspended', 'cancelled'];

/**
 * The sandbox's fixed services totals: four services, one in each status. With a status filter,
 * the one service of that status (as a live report counts only the filtered services).
 */
export function sandboxServiceTotals(status: ServiceStatusFilter | null): ServiceTotals {
  const byStatus = Object.fromEntries(STATUSES.map((s) => [s, status === null || s === status ? 1 : 0])) as ServiceTotals['services_by_status'];
  return { total_services: status === null ? 4 : 1, services_by_status: byStatus };
}

/**
 * Each recipient after its simulated first attempt: a reserved address as it asks, any other sent;
 * with `X-Test-Scenario: recipient_failed` every one rejected, as a live `failed.test` address is.
 */
function simulatedRecipients(recipients: string[], allFail: boolean): SimulatedRecipient[] {
  return recipients.map((email) => {
    if (allFail) return { email, status: 'failed', error: `550 5.1.1 <${email}>: recipient rejected (X-Test-Scenario: recipient_failed; nothing sent)` };
    const outcome = testRecipientOutcome(email);
    return outcome ? { email, status: outcome, error: testRecipientError(email, outcome) } : { email, status: 'sent', error: null };
  });
}

/** What a simulated run is asked for. */
interface SimulatedRun {
  reportType: ReportRunData['report_type'];
  recipients: string[];
  dateRange: { start: string; end: string } | null;
  statusFilter: ServiceStatusFilter | null;
  totals: InvoiceTotals | ServiceTotals;
}

/** The run recorded in test mode, with the request's Idempotency-Key effect in its transaction; its counts and when it was made. */
async function simulate(prisma: ReadClient, caller: Caller, run: SimulatedRun) {
  const id = randomUUID();
  const generatedAt = new Date();
  const recorded = await recordSimulatedRun(
    prisma,
    {
      id,
      brokerId: caller.brokerId,
      apiKeyId: caller.apiKeyId,
      reportType: run.reportType,
      startDate: run.dateRange ? new Date(`${run.dateRange.start}T00:00:00Z`) : null,
      endDate: run.dateRange ? new Date(`${run.dateRange.end}T00:00:00Z`) : null,
      statusFilter: run.statusFilter,
      totals: run.totals as object,
      generatedAt,
    },
    simulatedRecipients(run.recipients, caller.simulatedFailure === 'recipient_failed'),
    (tx) => caller.unitOfWork.within(tx).recordEffect({ type: 'report', id }),
  );
  return {
    report_id: recorded.report_id,
    recipients_sent: recorded.recipients_sent,
    recipients_failed: recorded.recipients_failed,
    recipients_pending: recorded.recipients_pending,
    generated_at: generatedAt.toISOString(),
  };
}

const SIMULATED = { mode: 'test', simulated: true } as const;

export function sandboxReports(deps: { prisma: ReadClient }): ReportUseCases {
  return {
    async sendInvoicesReport(caller, { recipients, start, end }) {
      if (caller.simulatedFailure === 'no_data') {
        // The live refusal of a range without paid or pending invoices: nothing recorded.
        throw new ReportNoDataError({ type: 'invoices', brokerId: caller.brokerId, apiKeyId: caller.apiKeyId, recipients, startDate: start, endDate: end });
      }
      const dateRange = { start, end };
      const totals = sandboxInvoiceTotals(start, end);
      const run = await simulate(deps.prisma, caller, { reportType: 'invoices', recipients, dateRange, statusFilter: null, totals });
      return {
        object: 'invoices_report',
        report_id: run.report_id,
        report_type: 'invoices',
        ...totals,
        recipients_sent: run.recipients_sent,
        recipients_failed: run.recipients_failed,
        recipients_pending: run.recipients_pending,
        date_range: dateRange,
        generated_at: run.generated_at,
        ...SIMULATED,
        recipient_count: recipients.length,
      };
    },

    async sendServicesReport(caller, { recipients, status }) {
      const totals = sandboxServiceTotals(status);
      const run = await simulate(deps.prisma, caller, { reportType: 'services', recipients, dateRange: null, statusFilter: status, totals });
      return {
        object: 'services_report',
        report_id: run.report_id,
        report_type: 'services',
        ...totals,
        status_filter: status,
        recipients_sent: run.recipients_sent,
        recipients_failed: run.recipients_failed,
        recipients_pending: run.recipients_pending,
        generated_at: run.generated_at,
        ...SIMULATED,
        recipient_count: recipients.length,
      };
    },

    async findReport(caller, reportId) {
      if (caller.simulatedFailure === 'not_found') throw reportNotFound(reportId);
      return findReportRun(deps.prisma, { brokerId: caller.brokerId, mode: 'test' }, reportId);
    },
    listReports: (caller, window) => listReportRuns(deps.prisma, { brokerId: caller.brokerId, mode: 'test' }, window),
  };
}
