import { Prisma } from '../../../generated/prisma/client.ts';
import type { InvoiceTotals, ReportSpec } from '../types.ts';
import { openingLines, type ReportKind, type ReportCount } from './kind.ts';
import type { ReadClient } from '../../shared/db-errors.ts';

/** The invoice statuses the report covers; `pending` is reported as unpaid (as workbook/pages.ts reads them). */
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
export async function countInvoices(prisma: ReadClient, spec: ReportSpec): Promise<ReportCount<InvoiceTotals>> {
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

export const invoicesReport: ReportKind<InvoiceTotals> = {
  type: 'invoices',
  count: countInvoices,
  input: (spec, snapshot, generatedAt) => {
    const { start, end } = rangeOf(spec);
    return {
      kind: 'invoices',
      facts: { generatedAt: generatedAt.getTime(), startDate: start, endDate: end },
      scope: { kind: 'invoices', brokerId: spec.brokerId, maxId: snapshot.maxId, startDate: start, endDate: end },
    };
  },
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
