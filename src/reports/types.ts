/** What a report is asked for, what it counts and what a run answers. */
import type { components } from '../../generated/api.ts';
import type { UnitOfWork } from '../shared/unit-of-work.ts';
import { NoDataError } from '../shared/errors.ts';

export type ReportType = 'invoices' | 'services';
export type ServiceStatusFilter = components['schemas']['ServiceStatus'];

/** What a caller asks `sendReport` (use-cases.ts) for. Recipients must already be normalized (rules.ts). */
export interface ReportSpec {
  type: ReportType;
  brokerId: string;
  /** The API key that asked (kept on the run record); null for CLI/operator runs. */
  apiKeyId: string | null;
  /** Normalized (trimmed, lower-cased), de-duplicated, 1..10 addresses. */
  recipients: string[];
  /** Invoices report: inclusive range, `YYYY-MM-DD`. */
  startDate?: string;
  endDate?: string;
  /** Services report: optional status filter (null/undefined = every status). */
  statusFilter?: ServiceStatusFilter | null;
  /**
   * When the report has no row: `false` (default) makes `sendReport` throw `ReportNoDataError` before
   * anything is recorded or queued (the invoices report's `no_data`); `true` sends an empty report.
   */
  allowEmpty?: boolean;
  /** What commits with the run's record, in its transaction (the request's Idempotency-Key, see Caller). */
  work?: UnitOfWork;
}

/** Counts of an invoices report (paid and pending invoices in the range), as openapi.yaml's `InvoicesReport` names them. */
export type InvoiceTotals = Pick<components['schemas']['InvoicesReport'], 'total_invoices' | 'paid_invoices' | 'unpaid_invoices'>;

/** Counts of a services report, as openapi.yaml's `ServicesReport` names them. */
export type ServiceTotals = Pick<components['schemas']['ServicesReport'], 'total_services' | 'services_by_status'>;

export type ReportTotals = InvoiceTotals | ServiceTotals;

export interface ReportResult<T extends ReportTotals = ReportTotals> {
  runId: string;
  /** Recipients whose e-mail the mail server accepted (or that was written to the outbox), as recorded when the wait ended. */
  recipientsSent: number;
  /** Recipients whose sending failed for good (rejected, or every attempt failed), as recorded when the wait ended. */
  recipientsFailed: number;
  /** Recipients still under way when the wait ended: their outcome is not known yet, and is not a failure. */
  recipientsPending: number;
  /** The counts of the rows that went into the workbook. */
  totals: T;
  /** When the report data was read (ISO 8601 UTC with milliseconds). */
  generatedAt: string;
}

/** The run's workbook could not be built, so no e-mail was sent (`500 server_error`). */
export class ReportGenerationError extends Error {
  override name = 'ReportGenerationError';
  /** The run is recorded failed: a 500, even when its build failed for want of a database (src/shared/db-outage.ts). */
  readonly outage = false;
  constructor(readonly runId: string, reason: string) {
    super(`report ${runId} could not be generated: ${reason}`);
  }
}

/** The report has no row for the request (the invoices report answers `400 no_data`). */
export class ReportNoDataError extends NoDataError {
  constructor(readonly spec: ReportSpec) {
    super(
      spec.type === 'invoices'
        ? `No paid or pending invoices between ${spec.startDate} and ${spec.endDate}`
        : 'No services to report',
      spec.type === 'invoices' ? { start_date: spec.startDate, end_date: spec.endDate } : undefined,
    );
  }
}

/** The fields of a report run's record that say what it reports. */
export interface RunRecord {
  reportType: ReportType;
  brokerId: string;
  apiKeyId: string | null;
  startDate: Date | null;
  endDate: Date | null;
  statusFilter: string | null;
}

/** The spec a recorded run was made with (its recipients are records of their own, so none here). */
export function specOfRun(run: RunRecord): ReportSpec {
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
