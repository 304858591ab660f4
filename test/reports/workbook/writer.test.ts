/**
 * The report workbook as a reader that did not write it sees it (python3-openpyxl, and exceljs, the
 * library integrators' Node code most often reads workbooks with): typed cells, number formats,
 * the quote prefix on formula-like text, the frozen and filtered header, and a table that continues
 * on further sheets past a sheet's bound (src/reports/workbook.ts; Excel's own bound is 1,048,575
 * data rows, a parameter here so that a few rows show the split).
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { describe, test } from 'node:test';
import ExcelJS from 'exceljs';
import { buildWorkbook } from '../../../src/reports/workbook/build.ts';
import { invoiceLine, type InvoiceLine } from '../../../src/reports/workbook/invoice-table.ts';
import type { InvoiceTotals, ServiceTotals } from '../../../src/reports/types.ts';
import { EXCEL_DATA_ROWS } from '../../../src/reports/workbook/writer.ts';
import { readWorkbook, sheetOf, valuesOf, type CellDump } from '../../helpers/openpyxl.ts';

const GENERATED_AT = Date.UTC(2025, 5, 30, 12, 34, 56, 789);

/** One invoice as the report's query makes it. */
const invoice = (id: number, over: Partial<Omit<InvoiceLine, 'id'>> = {}): InvoiceLine => ({
  id,
  number: over.number ?? `INV-${String(id).padStart(5, '0')}`,
  serviceNumber: 700_000_000 + id,
  date: over.date ?? '2025-06-02',
  status: over.status ?? 'paid',
  amount: over.amount ?? '10.00',
  currency: over.currency ?? 'EUR',
});

/** Invoices as pages of the report's query: a line each. */
function invoicePages(invoices: InvoiceLine[], perPage = 2): string[] {
  const pages: string[] = [];
  for (let i = 0; i < invoices.length; i += perPage) pages.push(invoices.slice(i, i + perPage).map(invoiceLine).join('\n'));
  return pages;
}

async function* each(pages: string[]): AsyncGenerator<string> {
  yield* pages;
}

async function invoicesWorkbook(invoices: InvoiceLine[], rowsPerSheet?: number): Promise<{ xlsx: Buffer; rows: number; totals: InvoiceTotals; sheets: number }> {
  const out = new PassThrough();
  const bytes = buffer(out);
  const facts = { generatedAt: GENERATED_AT, startDate: '2025-06-01', endDate: '2025-06-30' };
  const result = await buildWorkbook<InvoiceTotals>('invoices', facts, each(invoicePages(invoices)), out, rowsPerSheet ? { rowsPerSheet } : {});
  return { xlsx: await bytes, ...result };
}

/** A row's values without the empty cells openpyxl pads short rows with. */
const trimmed = (row: unknown[] | undefined) => {
  const values = [...(row ?? [])];
  while (values.length > 0 && values.at(-1) === null) values.pop();
  return values;
};

const cell = (c: CellDump | null | undefined): CellDump => {
  assert.ok(c, 'a cell');
  return c;
};

describe('formula-like text carries the quote prefix; other text and numbers do not', () => {
  const CELLS: Array<[string, boolean]> = [
    ['=HYPERLINK("http://x","y")', true],
    ['+1+2', true],
    ['-2+3', true],
    ['@SUM(A1)', true],
    ['\t=1', true],
    ['\r=1', true],
    ['\uFF1D1+1', true],
    ['\uFF0B1', true],
    ['\uFF0D1', true],
    ['\uFF20SUM(A1)', true],
    ['Client Ltd', false],
    ['a=b', false],
    [' padded ', false],
    ['<&"\'>', false],
  ];
  test('one row per case, read back by openpyxl', async () => {
    const invoices = CELLS.map(([number], i) => invoice(i + 1, { number }));
    const { xlsx } = await invoicesWorkbook(invoices);
    const sheet = sheetOf(readWorkbook(xlsx), 'Invoices');
    CELLS.forEach(([text, quoted], i) => {
      const c = cell(sheet.rows[i + 1]?.[0]);
      assert.equal(c.value, text, `row ${i + 2}`);
      assert.equal(c.type, 's');
      assert.equal(c.quotePrefix, quoted, JSON.stringify(text));
    });
  });
});

describe('the invoices sheet', () => {
  test('typed cells and number formats, a bold filled header with a bottom border, frozen below the header, filtered, widths', async () => {
    const { xlsx } = await invoicesWorkbook([
      invoice(1, { amount: '120.50', date: '2025-06-02' }),
      invoice(2, { status: 'pending', amount: '-3.00', date: '2025-06-20', currency: 'USD' }),
      invoice(3, { amount: '7', date: '2025-06-28' }),
    ]);
    const book = readWorkbook(xlsx);
    assert.deepEqual(book.sheets.map((s) => s.name), ['Invoices', 'Summary']);
    const sheet = sheetOf(book, 'Invoices');
    assert.equal(sheet.freezePanes, 'A2');
    assert.equal(sheet.autoFilter, 'A1:F4');
    assert.deepEqual(sheet.widths, { A: 20, B: 16, C: 12, D: 10, E: 14, F: 10 });
    assert.deepEqual(valuesOf(sheet), [
      ['Invoice number', 'Service number', 'Date', 'Status', 'Amount', 'Currency'],
      ['INV-00001', 700_000_001, '2025-06-02T00:00:00', 'paid', 120.5, 'EUR'],
      ['INV-00002', 700_000_002, '2025-06-20T00:00:00', 'pending', -3, 'USD'],
      ['INV-00003', 700_000_003, '2025-06-28T00:00:00', 'paid', 7, 'EUR'],
    ]);
    for (const header of sheet.rows[0]!) {
      const c = cell(header);
      assert.equal(c.bold, true);
      assert.equal(c.fill, 'FFE8EEF7');
      assert.equal(c.bottomBorder, 'thin');
    }
    const [number, service, date, status, amount, currency] = sheet.rows[1]!.map(cell);
    assert.deepEqual(
      [number!.format, service!.format, date!.format, status!.format, amount!.format, currency!.format],
      ['General', '0', 'yyyy-mm-dd', 'General', '#,##0.00', 'General'],
    );
    assert.equal(date!.type, 'd');
    assert.equal(amount!.type, 'n');
  });

  test('exceljs reads the same values', async () => {
    const { xlsx } = await invoicesWorkbook([invoice(1, { amount: '120.50' }), invoice(2, { status: 'pending' })]);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(xlsx as unknown as ArrayBuffer);
    const sheet = workbook.getWorksheet('Invoices')!;
    assert.deepEqual((sheet.getRow(2).values as unknown[]).slice(1), ['INV-00001', 700_000_001, new Date('2025-06-02T00:00:00Z'), 'paid', 120.5, 'EUR']);
    assert.equal(sheet.getRow(3).getCell(4).value, 'pending');
    assert.equal(workbook.getWorksheet('Summary')!.getCell('B9').value, 1);
  });
});

describe('past a sheet\'s bound the table continues on further sheets', () => {
  test('Excel\'s bound is 1,048,575 data rows under the header row', () => {
    assert.equal(EXCEL_DATA_ROWS, 1_048_576 - 1);
  });

  test('7 invoices at 3 rows a sheet: Invoices, Invoices (2), Invoices (3), each with its header, frozen pane, filter and formats; the Summary says 3 sheets', async () => {
    const invoices = Array.from({ length: 7 }, (_, i) => invoice(i + 1, { date: `2025-06-0${i + 1}`, status: i % 2 ? 'pending' : 'paid' }));
    const { xlsx, rows, sheets, totals } = await invoicesWorkbook(invoices, 3);
    assert.equal(rows, 7);
    assert.equal(sheets, 3);
    assert.deepEqual(totals, { total_invoices: 7, paid_invoices: 4, unpaid_invoices: 3 });
    const book = readWorkbook(xlsx);
    assert.deepEqual(book.sheets.map((s) => s.name), ['Invoices', 'Invoices (2)', 'Invoices (3)', 'Summary']);
    const expected = [[1, 2, 3], [4, 5, 6], [7]];
    expected.forEach((ids, n) => {
      const sheet = book.sheets[n]!;
      assert.equal(sheet.freezePanes, 'A2', sheet.name);
      assert.equal(sheet.autoFilter, `A1:F${ids.length + 1}`, sheet.name);
      assert.equal(sheet.widths.A, 20, sheet.name);
      assert.equal(cell(sheet.rows[0]![0]).value, 'Invoice number', sheet.name);
      assert.equal(cell(sheet.rows[0]![0]).bold, true, sheet.name);
      assert.deepEqual(sheet.rows.slice(1).map((r) => cell(r[0]).value), ids.map((id) => `INV-${String(id).padStart(5, '0')}`), sheet.name);
      for (const row of sheet.rows.slice(1)) assert.equal(cell(row[2]).format, 'yyyy-mm-dd', sheet.name);
    });
    // The row after the bound: the second sheet's first data row is the 4th invoice, whole.
    assert.deepEqual(valuesOf(book.sheets[1]!)[1], ['INV-00004', 700_000_004, '2025-06-04T00:00:00', 'pending', 10, 'EUR']);
    const summary = valuesOf(sheetOf(book, 'Summary'));
    assert.deepEqual(trimmed(summary.find((r) => r[0] === 'Sheets of invoices')), ['Sheets of invoices', 3]);
    assert.deepEqual(trimmed(summary.find((r) => r[0] === 'Total')), ['Total', 7]);
  });

  test('exactly the bound fills one sheet; one more opens the second', async () => {
    const three = await invoicesWorkbook([invoice(1), invoice(2), invoice(3)], 3);
    assert.equal(three.sheets, 1);
    assert.deepEqual(readWorkbook(three.xlsx).sheets.map((s) => s.name), ['Invoices', 'Summary']);
    const four = await invoicesWorkbook([invoice(1), invoice(2), invoice(3), invoice(4)], 3);
    assert.equal(four.sheets, 2);
    assert.deepEqual(valuesOf(readWorkbook(four.xlsx).sheets[1]!), [
      ['Invoice number', 'Service number', 'Date', 'Status', 'Amount', 'Currency'],
      ['INV-00004', 700_000_004, '2025-06-02T00:00:00', 'paid', 10, 'EUR'],
    ]);
  });

  test('the services table splits the same way: Services, Services (2)', async () => {
    const services = Array.from({ length: 5 }, (_, i) => ({
      id: i + 1,
      service_number: 800_000_001 + i,
      plan: 'Basic VPS',
      status: i === 4 ? 'cancelled' : 'active',
      hostname: `host${i + 1}.example.com`,
      customer_email: 'c@example.com',
      customer_name: i === 0 ? null : `=Customer ${i}`,
      billing_cycle: 'monthly',
      created_at: `2025-06-0${i + 1}T10:00:00.000Z`,
    }));
    const out = new PassThrough();
    const bytes = buffer(out);
    const { rows, sheets, totals } = await buildWorkbook<ServiceTotals>(
      'services',
      { generatedAt: GENERATED_AT, statusFilter: null },
      each([JSON.stringify(services.slice(0, 3)), JSON.stringify(services.slice(3))]),
      out,
      { rowsPerSheet: 4 },
    );
    assert.equal(rows, 5);
    assert.equal(sheets, 2);
    assert.deepEqual(totals, { total_services: 5, services_by_status: { pending: 0, active: 4, suspended: 0, cancelled: 1 } });
    const book = readWorkbook(await bytes);
    assert.deepEqual(book.sheets.map((s) => s.name), ['Services', 'Services (2)', 'Summary']);
    const second = book.sheets[1]!;
    assert.equal(second.freezePanes, 'A2');
    assert.equal(second.autoFilter, 'A1:H2');
    assert.deepEqual(valuesOf(second)[1], [800_000_005, 'Basic VPS', 'cancelled', 'host5.example.com', 'c@example.com', '=Customer 4', 'monthly', '2025-06-05T10:00:00']);
    assert.equal(cell(second.rows[1]![5]).quotePrefix, true);
    assert.equal(cell(second.rows[1]![7]).format, 'yyyy-mm-dd hh:mm:ss');
    assert.deepEqual(trimmed(valuesOf(sheetOf(book, 'Summary')).find((r) => r[0] === 'Sheets of services')), ['Sheets of services', 2]);
  });
});
