import type { ReportSpec, ReportTotals, ReportType } from '../types.ts';
import type { BuildInput } from '../workbook/build.ts';
import type { ReadClient } from '../../shared/db-errors.ts';

export const XLSX_MEDIA_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/**
 * The rows a report may contain, fixed when the request counts them: rows created afterwards (higher
 * ids) are left out, so the workbook holds exactly the counted rows.
 */
export interface ReportSnapshot {
  maxId: number;
}

export interface ReportCount<T extends ReportTotals = ReportTotals> {
  rows: number;
  totals: T;
  snapshot: ReportSnapshot;
}

/** One kind of report: how it is counted, written and mailed. */
export interface ReportKind<T extends ReportTotals = ReportTotals> {
  type: ReportType;
  count(prisma: ReadClient, spec: ReportSpec): Promise<ReportCount<T>>;
  /** What a build of the workbook reads and states (workbook/build.ts builds it): the counted rows of `spec`, as at `generatedAt`. */
  input(spec: ReportSpec, snapshot: ReportSnapshot, generatedAt: Date): BuildInput;
  /** The workbook's file name, in the e-mail and on a download; a dated name takes the run's `generatedAt`, so it never changes. */
  attachmentName(spec: ReportSpec, generatedAt: Date): string;
  subject(spec: ReportSpec): string;
  /** The e-mail's text: the workbook attached, or (`link`) a download link of the recipient's own. */
  text(spec: ReportSpec, totals: T, generatedAt: string, link?: MailLink): string;
}

/** A download link in a report e-mail, and until when it works. */
export interface MailLink {
  url: string;
  expiresAt: Date;
}

/** The e-mail's opening lines about `what` (e.g. `the invoices report for …`): attached, or a link. */
export function openingLines(what: string, link?: MailLink): string[] {
  if (!link) return [`Attached is ${what} (Excel workbook, .xlsx).`];
  return [
    `${what.charAt(0).toUpperCase()}${what.slice(1)} (Excel workbook, .xlsx) is too large to attach. Download it with this link of your own, valid until ${link.expiresAt.toISOString()}:`,
    link.url,
  ];
}
