import type { Writable } from 'node:stream';
import { Prisma, type PrismaClient } from '../../generated/prisma/client.ts';
import type { InvoiceTotals, ReportSpec } from './types.ts';
import type { ReportBuilder, ReportCount, ReportSnapshot } from './builder.ts';
import { openingLines } from './builder.ts';
import { addSummarySheet, addTableSheet, dateCell, commitWorkbook, finishTable, FORMAT, openWorkbook, type SummaryCell } from './workbook.ts';

/** Invoices read per query while the workbook streams (keyset pagination on date, id). */
export const INVOICE_BATCH = 2_000;

/** The invoice statuses the report covers; `pending` is reported as unpaid. */
const REPORTED = Prisma.sql`status IN ('paid'::invoice_status, 'pending'::invoice_status)`;

/** One invoice as read for the workbook: [id, number, service_number, date, status, amount, currency]. */
type InvoiceTuple = [number, string, number, string, 'paid' | 'pending', string, string];

/** One page: its invoices as JSON arrays, one per line, in (date, id) order. */
interface InvoicePage {
  text: string;
  rows: number;
}

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

/** Amount text (`1234.5`, `-3.00`) to integer cents, exactly. */
function cents(amount: string): number {
  const negative = amount.startsWith('-');
  const [whole = '0', frac = ''] = amount.replace(/^[-+]/, '').split('.');
  const value = Number(whole) * 100 + Number((frac + '00').slice(0, 2));
  return negative ? -value : value;
}

const INVOICE_COLUMNS = [
  { header: 'Invoice number', key: 'number', width: 20 },
  { header: 'Service number', key: 'service_number', width: 16, numFmt: FORMAT.integer },
  { header: 'Date', key: 'date', width: 12, numFmt: FORMAT.date },
  { header: 'Status', key: 'status', width: 10 },
  { header: 'Amount', key: 'amount', width: 14, numFmt: FORMAT.money },
  { header: 'Currency', key: 'currency', width: 10 },
];

type Sums = Map<string, Map<string, { count: number; cents: number }>>;
type SummaryLine = { cells: SummaryCell[]; bold?: boolean; header?: boolean; formats?: Array<string | undefined> };

/** The Summary sheet: the range, counts by status, and counts and amounts by status and currency. */
function summaryLines(facts: { start: string; end: string; generatedAt: Date; paid: number; pending: number; sums: Sums }): SummaryLine[] {
  const { start, end, generatedAt, paid, pending, sums } = facts;
  const total = paid + pending;
  const money: Array<string | undefined> = [undefined, undefined, FORMAT.integer, FORMAT.money];
  const lines: SummaryLine[] = [
    { cells: ['Invoices report'], bold: true },
    { cells: ['Start date', dateCell(start)], formats: [undefined, FORMAT.date] },
    { cells: ['End date', dateCell(end)], formats: [undefined, FORMAT.date] },
    { cells: ['Generated at (UTC)', generatedAt], formats: [undefined, FORMAT.dateTime] },
    { cells: [] },
    { cells: ['Status', 'Invoices'], header: true },
    { cells: ['Paid', paid], formats: [undefined, FORMAT.integer] },
    { cells: ['Unpaid (pending)', pending], formats: [undefined, FORMAT.integer] },
    { cells: ['Total', total], bold: true, formats: [undefined, FORMAT.integer] },
    { cells: [] },
    { cells: ['Status', 'Currency', 'Invoices', 'Amount'], header: true },
  ];
  const totalsByCurrency = new Map<string, { count: number; cents: number }>();
  for (const status of ['paid', 'pending'] as const) {
    const byCurrency = sums.get(status);
    if (!byCurrency) continue;
    for (const [currency, sum] of [...byCurrency].sort(([a], [b]) => a.localeCompare(b))) {
      lines.push({ cells: [status === 'paid' ? 'Paid' : 'Unpaid (pending)', currency, sum.count, sum.cents / 100], formats: money });
      const t = totalsByCurrency.get(currency) ?? { count: 0, cents: 0 };
      t.count += sum.count;
      t.cents += sum.cents;
      totalsByCurrency.set(currency, t);
    }
  }
  for (const [currency, sum] of [...totalsByCurrency].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push({ cells: ['Total', currency, sum.count, sum.cents / 100], bold: true, formats: money });
  }
  return lines;
}

async function writeInvoicesWorkbook(
  prisma: PrismaClient,
  spec: ReportSpec,
  snapshot: ReportSnapshot,
  out: Writable,
  generatedAt: Date,
): Promise<ReportCount<InvoiceTotals>> {
  const { start, end } = rangeOf(spec);
  const workbook = await openWorkbook(out);
  const sheet = addTableSheet(workbook, 'Invoices', INVOICE_COLUMNS);
  const where = inRange(spec);
  // Each page comes back as one text, one JSON array per line: a row-by-row result costs the
  // driver adapter several times as much (bench/README.md). Lines are parsed one at a time
  // as they are written, so an invoice's JS values die young: a page parsed whole (2,000 tuples)
  // lived through many scavenges while its rows were written and was promoted, which grew the old
  // generation with garbage before a full GC came.
  const fetchAfter = async (date: string, id: number): Promise<InvoicePage> => {
    const result = await prisma.$queryRaw<Array<{ page: string | null; n: number }>>`
      SELECT string_agg(json_build_array(p.id, p.number, p.service_number, p.date::text, p.status::text, p.amount::text, p.currency)::text,
                        E'\n' ORDER BY p.date, p.id) AS page,
             count(*)::int AS n
      FROM (SELECT id, number, service_number, date, status, amount, currency FROM invoices
            WHERE ${where} AND id <= ${snapshot.maxId} AND (date, id) > (${date}::date, ${id})
            ORDER BY date, id LIMIT ${INVOICE_BATCH}) p`;
    const page = result[0]?.page ?? '';
    return { text: page, rows: page ? Number(result[0]!.n) : 0 };
  };

  // status → currency → { count, cents }
  const sums: Sums = new Map();
  let paid = 0;
  let pending = 0;
  let next: Promise<InvoicePage> | undefined = fetchAfter(start, 0);
  while (next) {
    const { text, rows }: InvoicePage = await next;
    if (rows === 0) break;
    const last = JSON.parse(text.slice(text.lastIndexOf('\n') + 1)) as InvoiceTuple;
    // Read the next page while this one is written.
    next = rows === INVOICE_BATCH ? fetchAfter(last[3], last[0]) : undefined;
    for (let pos = 0; pos < text.length; ) {
      const end = text.indexOf('\n', pos);
      const line = end === -1 ? text.slice(pos) : text.slice(pos, end);
      pos = end === -1 ? text.length : end + 1;
      const [, number, serviceNumber, date, status, amount, rawCurrency] = JSON.parse(line) as InvoiceTuple;
      const currency = rawCurrency.trim();
      sheet.addRow([number, serviceNumber, dateCell(date), status, Number(amount), currency]);
      if (status === 'paid') paid += 1;
      else pending += 1;
      const byCurrency = sums.get(status) ?? new Map<string, { count: number; cents: number }>();
      const sum = byCurrency.get(currency) ?? { count: 0, cents: 0 };
      sum.count += 1;
      sum.cents += cents(amount);
      byCurrency.set(currency, sum);
      sums.set(status, byCurrency);
    }
    await sheet.drain();
  }
  const total = paid + pending;
  finishTable(sheet, INVOICE_COLUMNS.length, total);

  const lines = summaryLines({ start, end, generatedAt, paid, pending, sums });
  addSummarySheet(workbook, 'Summary', lines, [22, 14, 12, 16]);
  await commitWorkbook(workbook, out);
  return {
    rows: total,
    totals: { total_invoices: total, paid_invoices: paid, unpaid_invoices: pending },
    snapshot,
  };
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
