/**
 * The sandbox's report use cases: fixed totals (documented in openapi.yaml), no record read, no
 * file written, no e-mail sent, no run recorded; only the simulated run's `report.completed`
 * event, in test mode (src/events/simulated.ts).
 */
import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { recordSimulatedEvents } from '../events/simulated.ts';
import { previousAttributes } from '../events/previous-attributes.ts';
import type { Caller } from '../shared/caller.ts';
import type { ReportRunData } from './runs/present.ts';
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

const nothingSent = { recipients_sent: 0, recipients_failed: 0, recipients_pending: 0 };
const SIMULATED = { mode: 'test', simulated: true } as const;

/**
 * The simulated run's end, as a sandbox `GET /reports/{report_id}` shows a run: completed, every
 * recipient sent (nothing is sent), written before the report is answered.
 */
async function simulatedCompletion(prisma: PrismaClient, caller: Caller, run: SimulatedRun): Promise<void> {
  const object = sandboxReportRun(run.reportId, new Date(), run);
  const previous = previousAttributes(lastRecipientSending(object), object);
  await recordSimulatedEvents(prisma, caller, { type: 'report', id: run.reportId }, [{ type: 'report.completed', object, previousAttributes: previous }]);
}

/** The completed run as a live one stands just before its last recipient's e-mail is accepted: `sending`, that recipient under way. */
function lastRecipientSending(run: ReportRunData): ReportRunData {
  const recipients = run.recipients.map((r, i) => (i === run.recipients.length - 1 ? { ...r, status: 'sending' as const, sent_at: null } : r));
  return { ...run, status: 'sending', recipients_sent: run.recipients_sent - 1, recipients_pending: 1, finished_at: null, recipients };
}

export function sandboxReports(deps: { prisma: PrismaClient }): ReportUseCases {
  return {
    async sendInvoicesReport(caller, { recipients, start, end }) {
      const reportId = randomUUID();
      await simulatedCompletion(deps.prisma, caller, { reportId, reportType: 'invoices', recipients, dateRange: { start, end }, statusFilter: null });
      return {
        object: 'invoices_report',
        report_id: reportId,
        report_type: 'invoices',
        ...SANDBOX_INVOICE_TOTALS,
        ...nothingSent,
        date_range: { start, end },
        generated_at: new Date().toISOString(),
        ...SIMULATED,
        recipient_count: recipients.length,
      };
    },

    async sendServicesReport(caller, { recipients, status }) {
      const reportId = randomUUID();
      await simulatedCompletion(deps.prisma, caller, { reportId, reportType: 'services', recipients, dateRange: null, statusFilter: status });
      return {
        object: 'services_report',
        report_id: reportId,
        report_type: 'services',
        ...sandboxServiceTotals(status),
        status_filter: status,
        ...nothingSent,
        generated_at: new Date().toISOString(),
        recipient_count: recipients.length,
        ...SIMULATED,
      };
    },

    findReport: async (_caller, reportId) => sandboxReportRun(reportId, new Date()),
  };
}

/** What a simulated run was asked for. */
interface SimulatedRun {
  reportId: string;
  reportType: ReportRunData['report_type'];
  recipients: string[];
  dateRange: ReportRunData['date_range'];
  statusFilter: ServiceStatusFilter | null;
}

/**
 * The sandbox's run: completed, each recipient sent by attachment; nothing is read. `GET
 * /reports/{id}` answers any id with an invoices run of this month and one recipient.
 */
export function sandboxReportRun(reportId: string, now: Date, run?: SimulatedRun): ReportRunData {
  const at = now.toISOString();
  const recipients = run?.recipients ?? ['recipient@example.com'];
  return {
    object: 'report',
    report_id: reportId,
    report_type: run?.reportType ?? 'invoices',
    status: 'completed',
    date_range: run ? run.dateRange : { start: at.slice(0, 8) + '01', end: at.slice(0, 10) },
    status_filter: run?.statusFilter ?? null,
    recipients_sent: recipients.length,
    recipients_failed: 0,
    recipients_pending: 0,
    created_at: at,
    finished_at: at,
    error: null,
    recipients: recipients.map((email) => ({
      email,
      status: 'sent' as const,
      attempts: 1,
      last_error: null,
      sent_at: at,
      delivery: 'attachment' as const,
      link_expires_at: null,
      download_count: 0,
      downloads: [],
    })),
    mode: 'test',
    simulated: true,
  };
}
