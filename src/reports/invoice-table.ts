import type { InvoiceTotals } from './types.ts';
import { FORMAT, type BuildFacts, type SummaryLine, type TableKind } from './workbook.ts';
import { serialOfDay } from './xlsx/xml.ts';

/** One invoice as the invoices report's query makes it: [id, number, service_number, date, status, amount, currency]. */
export type InvoiceTuple = [number, string, number, string, 'paid' | 'pending', string, string];

/** status → currency → { count, cents } */
type Sums = Map<string, Map<string, { count: number; cents: number }>>;

interface InvoiceCounts {
  paid: number;
  pending: number;
  sums: Sums;
}

/** Amount text (`1234.5`, `-3.00`, `7`) to integer cents, exactly: the digits without the point, sign kept. */
function cents(amount: string): number {
  const point = amount.indexOf('.');
  if (point === -1) return Number(amount) * 100;
  return Number(amount.slice(0, point) + (amount.slice(point + 1) + '00').slice(0, 2));
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

/** The invoices table: a page is the query's JSON arrays, one per line, comma-separated (a JSON array's inside). */
export const invoiceTable: TableKind<InvoiceCounts, InvoiceTotals> = {
  sheetName: 'Invoices',
  columns: INVOICE_COLUMNS,
  start: () => ({ paid: 0, pending: 0, sums: new Map() }),
  addPage(text, table, counts) {
    const invoices = JSON.parse(`[${text}]`) as InvoiceTuple[];
    for (const [, number, serviceNumber, date, status, amount, rawCurrency] of invoices) {
      const currency = rawCurrency.trim();
      table.row(
        table.text(0, number) +
          table.number(1, serviceNumber) +
          table.number(2, serialOfDay(date)) +
          table.text(3, status) +
          table.number(4, amount) +
          table.text(5, currency),
      );
      if (status === 'paid') counts.paid += 1;
      else counts.pending += 1;
      let byCurrency = counts.sums.get(status);
      if (!byCurrency) counts.sums.set(status, (byCurrency = new Map()));
      let sum = byCurrency.get(currency);
      if (!sum) byCurrency.set(currency, (sum = { count: 0, cents: 0 }));
      sum.count += 1;
      sum.cents += cents(amount);
    }
  },
  summary: (counts, facts, sheets) => ({ lines: summaryLines(facts, counts, sheets), widths: [22, 14, 12, 16] }),
  result: ({ paid, pending }) => ({
    rows: paid + pending,
    totals: { total_invoices: paid + pending, paid_invoices: paid, unpaid_invoices: pending },
  }),
};
