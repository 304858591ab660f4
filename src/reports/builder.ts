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

/** One page of a report's rows as its query returns it: the text, how many rows, and where the next page starts. */
export interface RowPage<K> {
  text: string;
  rows: number;
  /** The key after which the next page starts (the last row's); read only when the page is full. */
  after: () => K;
}

/**
 * A report's pages in order, read by keyset pagination (`fetchAfter(key)`, `batch` rows a page),
 * each page's text yielded while the next is read. Stops at an empty or short page.
 */
export async function* prefetchedPages<K>(first: K, batch: number, fetchAfter: (key: K) => Promise<RowPage<K>>): AsyncGenerator<string> {
  let next: Promise<RowPage<K>> | undefined = fetchAfter(first);
  while (next) {
    const page: RowPage<K> = await next;
    if (page.rows === 0) return;
    next = page.rows === batch ? fetchAfter(page.after()) : undefined;
    // A caller that stops early never awaits the next page: its failure must not go unhandled.
    next?.catch(() => undefined);
    yield page.text;
  }
}
