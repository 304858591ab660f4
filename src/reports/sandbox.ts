/**
 * The sandbox's report use cases: fixed totals (documented in openapi.yaml), no business record
 * read, no file written, no e-mail sent. Each report is recorded as a test-mode run (runs/store.ts)
 * whose recipients end as the reserved test addresses ask (delivery/test-recipients.ts; any other
 * address `sent`), so the answer, `GET /reports/{report_id}`, `GET /reports` and the run's
 * `report.completed` event all tell the same run.
 */
import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { Caller } from '../shared/caller.ts';
import { testRecipientError, testRecipientOutcome } from './delivery/test-recipients.ts';
import { findReportRun, listReportRuns, type ReportRunData } from './runs/present.ts';
import { recordSimulatedRun, type SimulatedRecipient } from './runs/store.ts';
import type { InvoiceTotals, ServiceStatusFilter, ServiceTotals } from './types.ts';
import type { ReportUseCases } from './use-cases.ts';

/** Fixed sandbox totals of the invoices report (documented in openapi.yaml). */
export const SANDBOX_INVOICE_TOTALS: InvoiceTotals = { total_invoices: 12, paid_invoices: 9, unpaid_invoices: 3 };

const STATUSES: readonly ServiceStatusFilter[] = ['pending', 'active', 'suspended', 'cancelled'];

/**
 * The sandbox's fixed services totals: four services, one in each status. With a status filter,
 * the one service of that status (as a live report counts only the filtered services).
 */
export function sandboxServiceTotals(status: ServiceStatusFilter | null): ServiceTotals {
  const byStatus = Object.fromEntries(STATUSES.map((s) => [s, status === null || s === status ? 1 : 0])) as ServiceTotals['services_by_status'];
  return { total_services: status === null ? 4 : 1, services_by_status: byStatus };
}

/** Each recipient after its simulated first attempt: a reserved address as it asks, any other sent. */
function simulatedRecipients(recipients: string[]): SimulatedRecipient[] {
  return recipients.map((email) => {
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
async function simulate(prisma: PrismaClient, caller: Caller, run: SimulatedRun) {
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
    simulatedRecipients(run.recipients),
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

export function sandboxReports(deps: { prisma: PrismaClient }): ReportUseCases {
  return {
    async sendInvoicesReport(caller, { recipients, start, end }) {
      const dateRange = { start, end };
      const run = await simulate(deps.prisma, caller, { reportType: 'invoices', recipients, dateRange, statusFilter: null, totals: SANDBOX_INVOICE_TOTALS });
      return {
        object: 'invoices_report',
        report_id: run.report_id,
        report_type: 'invoices',
        ...SANDBOX_INVOICE_TOTALS,
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

    findReport: (caller, reportId) => findReportRun(deps.prisma, { brokerId: caller.brokerId, mode: 'test' }, reportId),
    listReports: (caller, window) => listReportRuns(deps.prisma, { brokerId: caller.brokerId, mode: 'test' }, window),
  };
}
