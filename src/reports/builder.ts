import type { Writable } from 'node:stream';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { ReportSpec, ReportTotals, ReportType } from './types.ts';

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
export interface ReportBuilder<T extends ReportTotals = ReportTotals> {
  type: ReportType;
  count(prisma: PrismaClient, spec: ReportSpec): Promise<ReportCount<T>>;
  /**
   * Streams the workbook's bytes into `out`, reading rows in batches, and ends `out`; resolves
   * once `out` has taken every byte, with the counts of the rows written.
   */
  write(prisma: PrismaClient, spec: ReportSpec, snapshot: ReportSnapshot, out: Writable, generatedAt: Date): Promise<ReportCount<T>>;
  attachmentName(spec: ReportSpec): string;
  subject(spec: ReportSpec): string;
  text(spec: ReportSpec, totals: T, generatedAt: string): string;
}
