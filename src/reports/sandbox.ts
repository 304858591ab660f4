/**
 * The sandbox's report use cases: fixed totals (documented in openapi.yaml), no record read, no
 * file written, no e-mail sent, no run recorded.
 */
import { randomUUID } from 'node:crypto';
import type { ReportRunData } from './runs.ts';
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

export function sandboxReports(): ReportUseCases {
  return {
    async sendInvoicesReport(_caller, { recipients, start, end }) {
      return {
        report_id: randomUUID(),
        report_type: 'invoices',
        ...SANDBOX_INVOICE_TOTALS,
        ...nothingSent,
        date_range: { start, end },
        generated_at: new Date().toISOString(),
        ...SIMULATED,
        recipient_count: recipients.length,
      };
    },

    async sendServicesReport(_caller, { recipients, status }) {
      return {
        report_id: randomUUID(),
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

/** The sandbox's run: any id answers a completed invoices run with one recipient; nothing is read. */
export function sandboxReportRun(reportId: string, now: Date): ReportRunData {
  const at = now.toISOString();
  return {
    report_id: reportId,
    report_type: 'invoices',
    status: 'completed',
    date_range: { start: at.slice(0, 8) + '01', end: at.slice(0, 10) },
    status_filter: null,
    recipients_sent: 1,
    recipients_failed: 0,
    recipients_pending: 0,
    created_at: at,
    finished_at: at,
    error: null,
    recipients: [
      { email: 'recipient@example.com', status: 'sent', attempts: 1, last_error: null, sent_at: at, delivery: 'attachment', link_expires_at: null, download_count: 0, downloads: [] },
    ],
    mode: 'test',
    simulated: true,
  };
}
