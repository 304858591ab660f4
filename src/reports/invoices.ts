import type { Writable } from 'node:stream';
import { Prisma, type PrismaClient } from '../../generated/prisma/client.ts';
import type { InvoiceTotals, ReportSpec } from './types.ts';
import { openingLines, prefetchedPages, type ReportBuilder, type ReportCount, type ReportSnapshot, type RowPage } from './builder.ts';
import { buildWorkbook, type BuildOptions } from './build.ts';
import { lastOfPage } from './invoice-table.ts';

/** Invoices read per query while the workbook streams (keyset pagination on date, id). */
export const INVOICE_BATCH = 2_000;

/** The invoice statuses the report covers; `pending` is reported as unpaid. */
const REPORTED = Prisma.sql`status IN ('paid'::invoice_status, 'pending'::invoice_status)`;

function rangeOf(spec: ReportSpec): { start: string; end: string } {
  if (!spec.startDate || !spec.endDate) throw new Error('the invoices report needs startDate and endDate');
  return { start: spec.startDate, end: spec.endDate };
}

function inRange(spec: ReportSpec): Prisma.Sql {
  const { start, end } = rangeOf(spec);
  return Prisma.sql`broker_id = ${spec.brokerId} AND date >= ${start}::date AND date <= ${end}::date AND ${REPORTED}`;
}

/** Paid and pending invoices of the broker dated within the inclusive range. */
export async function countInvoices(prisma: PrismaClient, spec: ReportSpec): Promise<ReportCount<InvoiceTotals>> {
  const rows = await prisma.$queryRaw<Array<{ status: string; n: number; max_id: number | null }>>`
    SELECT status::text AS status, count(*)::int AS n, max(id)::int AS max_id
    FROM invoices WHERE ${inRange(spec)} GROUP BY status`;
  const paid = rows.find((r) => r.status === 'paid')?.n ?? 0;
  const pending = rows.find((r) => r.status === 'pending')?.n ?? 0;
  const maxId = rows.reduce((m, r) => Math.max(m, Number(r.max_id ?? 0)), 0);
  return {
    rows: paid + pending,
    totals: { total_invoices: paid + pending, paid_invoices: paid, unpaid_invoices: pending },
    snapshot: { maxId },
  };
}

/**
 * The invoices of the report in (date, id) order, a page per query, each page one text: a line per
 * invoice as invoiceLine (invoice-table.ts) describes it. One text per page is several times cheaper
 * through the driver adapter than a row-by-row result, and these lines cheaper to make and to read
 * than JSON (bench/README.md). The next page is read while the caller uses this one.
 */
export async function* invoicePages(prisma: PrismaClient, spec: ReportSpec, snapshot: ReportSnapshot): AsyncGenerator<string> {
  const { start } = rangeOf(spec);
  const where = inRange(spec);
  const fetchAfter = async ({ date, id }: { date: string; id: number }): Promise<RowPage<{ date: string; id: number }>> => {
    const result = await prisma.$queryRaw<Array<{ page: string | null; n: number }>>`
      SELECT string_agg(concat_ws(E'\t', p.id, p.date, p.service_number, p.date - DATE '1899-12-30', p.status, p.amount,
                                  (p.amount * 100)::bigint, to_json(p.currency::text), to_json(p.number)),
                        E'\n' ORDER BY p.date, p.id) AS page,
             count(*)::int AS n
      FROM (SELECT id, number, service_number, date, status, amount, currency FROM invoices
            WHERE ${where} AND id <= ${snapshot.maxId} AND (date, id) > (${date}::date, ${id})
            ORDER BY date, id LIMIT ${INVOICE_BATCH}) p`;
    const page = result[0]?.page ?? '';
    return { text: page, rows: page ? Number(result[0]!.n) : 0, after: () => lastOfPage(page) };
  };
  yield* prefetchedPages({ date: start, id: 0 }, INVOICE_BATCH, fetchAfter);
}

async function writeInvoicesWorkbook(
  prisma: PrismaClient,
  spec: ReportSpec,
  snapshot: ReportSnapshot,
  out: Writable,
  generatedAt: Date,
  options?: BuildOptions,
): Promise<ReportCount<InvoiceTotals>> {
  const { start, end } = rangeOf(spec);
  const facts = { generatedAt: generatedAt.getTime(), startDate: start, endDate: end };
  const { rows, totals } = await buildWorkbook<InvoiceTotals>('invoices', facts, invoicePages(prisma, spec, snapshot), out, options);
  return { rows, totals, snapshot };
}

export const invoicesReport: ReportBuilder<InvoiceTotals> = {
  type: 'invoices',
  count: countInvoices,
  write: writeInvoicesWorkbook,
  attachmentName: (spec) => {
    const { start, end } = rangeOf(spec);
    return `invoices-${start}-${end}.xlsx`;
  },
  subject: (spec) => {
    const { start, end } = rangeOf(spec);
    return `Invoices report ${start} to ${end}`;
  },
  text: (spec, totals, generatedAt, link) => {
    const { start, end } = rangeOf(spec);
    return [
      ...openingLines(`the invoices report for ${start} to ${end}`, link),
      '',
      `Invoices: ${totals.total_invoices} (paid: ${totals.paid_invoices}, unpaid/pending: ${totals.unpaid_invoices})`,
      `Generated at: ${generatedAt}`,
      '',
    ].join('\r\n');
  },
};
