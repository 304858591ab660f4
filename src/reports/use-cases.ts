/**
 * The report operations in the domain's words: e-mail an invoices or a services report, and read
 * a report run back. `liveReports` records runs and sends through the pipeline; `sandboxReports`
 * (sandbox.ts) simulates the same answers without reading a record, writing a file or sending.
 */
import type { components } from '../../generated/api.ts';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { Config } from '../config.ts';
import type { Caller } from '../shared/caller.ts';
import { checkReportLimits } from './limits.ts';
import { findReportRun, type ReportRunData } from './runs.ts';
import type { InvoiceTotals, ReportResult, ReportSpec, ReportTotals, ServiceStatusFilter, ServiceTotals } from './types.ts';

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
}

export interface ReportDeps {
  prisma: PrismaClient;
  config: Config;
  jobs: { runReport<T extends ReportTotals>(spec: ReportSpec): Promise<ReportResult<T>> };
}

export function liveReports(deps: ReportDeps): ReportUseCases {
  const run = async <T extends ReportTotals>(caller: Caller, spec: Omit<ReportSpec, 'brokerId' | 'apiKeyId'>) => {
    // The early check of the broker's report bounds, before the counting query of a big report.
    await checkReportLimits(deps.prisma, deps.config, caller.brokerId);
    return deps.jobs.runReport<T>({ ...spec, brokerId: caller.brokerId, apiKeyId: caller.apiKeyId, work: caller.unitOfWork });
  };
  return {
    async sendInvoicesReport(caller, { recipients, start, end }) {
      const result = await run<InvoiceTotals>(caller, { type: 'invoices', recipients, startDate: start, endDate: end });
      return {
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

    findReport: (caller, reportId) => findReportRun(deps.prisma, caller.brokerId, reportId),
  };
}
