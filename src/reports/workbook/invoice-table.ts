import type { InvoiceTotals } from '../types.ts';
import { FORMAT, type BuildFacts, type SummaryLine, type TableKind } from './writer.ts';
import { serialOfDay } from './xlsx/xml.ts';

/**
 * One invoice as the invoices report's query writes it: a line of tab-separated fields,
 *
 *   id  date (YYYY-MM-DD)  service_number  day (Excel serial)  status  amount  cents  currency  number
 *
 * where currency and number, the two free-text fields, are JSON string literals (so a tab or a line
 * break in them cannot break the line) and every other field is digits, a sign, a point or a status.
 * Lines are joined by '\n'. Reading such a line takes a few `indexOf`s and no parser: far cheaper
 * per row than JSON arrays (bench/README.md, "Report build profile").
 */
export interface InvoiceLine {
  id: number;
  date: string;
  serviceNumber: number;
  status: 'paid' | 'pending';
  amount: string;
  currency: string;
  number: string;
}

/** The line of one invoice, as the query makes it (tests and benches build pages with it). */
export function invoiceLine(i: InvoiceLine): string {
  const [whole = '0', fraction = ''] = i.amount.replace('-', '').split('.');
  const cents = (i.amount.startsWith('-') ? -1 : 1) * (Number(whole) * 100 + Number((fraction + '00').slice(0, 2)));
  return [i.id, i.date, i.serviceNumber, serialOfDay(i.date), i.status, i.amount, cents, JSON.stringify(i.currency), JSON.stringify(i.number)].join('\t');
}

/** A field written as a JSON string literal: its text (most have no escapes and need no parser). */
const jsonText = (literal: string): string => (literal.indexOf('\\') === -1 ? literal.slice(1, -1) : (JSON.parse(literal) as string));

/** The id and date of a page's last invoice (the next page starts after them). */
export function lastOfPage(text: string): { id: number; date: string } {
  const from = text.lastIndexOf('\n') + 1;
  const tab = text.indexOf('\t', from);
  return { id: Number(text.slice(from, tab)), date: text.slice(tab + 1, text.indexOf('\t', tab + 1)) };
}

/** status → currency → { count, cents } */
type Sums = Map<string, Map<string, { count: number; cents: number }>>;

interface InvoiceCounts {
  paid: number;
  pending: number;
  sums: Sums;
}

const INVOICE_COLUMNS = [
  { header: 'Invoice number', width: 20 },
  { header: 'Service number', width: 16, numFmt: FORMAT.integer },
  { header: 'Date', width: 12, numFmt: FORMAT.date },
  { header: 'Status', width: 10 },
  { header: 'Amount', width: 14, numFmt: FORMAT.money },
  { header: 'Currency', width: 10 },
];

/** The Summary sheet: the range, how many sheets hold the invoices, counts by status, and counts and amounts by status and currency. */
function summaryLines(facts: BuildFacts, { paid, pending, sums }: InvoiceCounts, sheets: number): SummaryLine[] {
  const total = paid + pending;
  const money: Array<string | undefined> = [undefined, undefined, FORMAT.integer, FORMAT.money];
  const day = (ymd: string | undefined) => new Date(`${ymd}T00:00:00.000Z`);
  const lines: SummaryLine[] = [
    { cells: ['Invoices report'], bold: true },
    { cells: ['Start date', day(facts.startDate)], formats: [undefined, FORMAT.date] },
    { cells: ['End date', day(facts.endDate)], formats: [undefined, FORMAT.date] },
    { cells: ['Generated at (UTC)', new Date(facts.generatedAt)], formats: [undefined, FORMAT.dateTime] },
    { cells: ['Sheets of invoices', sheets], formats: [undefined, FORMAT.integer] },
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

/** Adds one invoice to the status and currency sums. */
function count(counts: InvoiceCounts, status: string, currency: string, cents: number): void {
  if (status === 'paid') counts.paid += 1;
  else counts.pending += 1;
  let byCurrency = counts.sums.get(status);
  if (!byCurrency) counts.sums.set(status, (byCurrency = new Map()));
  let sum = byCurrency.get(currency);
  if (!sum) byCurrency.set(currency, (sum = { count: 0, cents: 0 }));
  sum.count += 1;
  sum.cents += cents;
}

/** The invoices table: a page is the query's lines (invoiceLine). */
export const invoiceTable: TableKind<InvoiceCounts, InvoiceTotals> = {
  sheetName: 'Invoices',
  columns: INVOICE_COLUMNS,
  start: () => ({ paid: 0, pending: 0, sums: new Map() }),
  addPage(text, table, counts) {
    for (let pos = 0; pos < text.length; ) {
      let end = text.indexOf('\n', pos);
      if (end === -1) end = text.length;
      const t1 = text.indexOf('\t', pos); // id
      const t2 = text.indexOf('\t', t1 + 1); // date
      const t3 = text.indexOf('\t', t2 + 1); // service number
      const t4 = text.indexOf('\t', t3 + 1); // day
      const t5 = text.indexOf('\t', t4 + 1); // status
      const t6 = text.indexOf('\t', t5 + 1); // amount
      const t7 = text.indexOf('\t', t6 + 1); // cents
      const t8 = text.indexOf('\t', t7 + 1); // currency
      const status = text.slice(t4 + 1, t5);
      const currency = jsonText(text.slice(t7 + 1, t8)).trim();
      const number = jsonText(text.slice(t8 + 1, end));
      const serviceNumber = text.slice(t2 + 1, t3);
      const day = text.slice(t3 + 1, t4);
      const amount = text.slice(t5 + 1, t6);
      table.row(
        (r) =>
          table.text(0, number, r) +
          table.number(1, serviceNumber, r) +
          table.number(2, day, r) +
          table.repeatedText(3, status, r) +
          table.number(4, amount, r) +
          table.repeatedText(5, currency, r),
      );
      count(counts, status, currency, Number(text.slice(t6 + 1, t7)));
      pos = end + 1;
    }
  },
  summary: (counts, facts, sheets) => ({ lines: summaryLines(facts, counts, sheets), widths: [22, 14, 12, 16] }),
  result: ({ paid, pending }) => ({
    rows: paid + pending,
    totals: { total_invoices: paid + pending, paid_invoices: paid, unpaid_invoices: pending },
  }),
};
