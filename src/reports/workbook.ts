import { once, type EventEmitter } from 'node:events';
import { finished } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import type ExcelJS from 'exceljs';
import { collectGarbage } from '../gc.ts';

/**
 * Shared look of the report workbooks, written with exceljs's streaming writer (`.xlsx`, Office
 * Open XML; exceljs cannot write the legacy binary `.xls`): rows are committed as they are read,
 * so memory stays flat however many rows there are.
 */
export interface ColumnSpec {
  header: string;
  key: string;
  width: number;
  /** Excel number format for the whole column (dates, money, integers). */
  numFmt?: string;
}

export const FORMAT = {
  integer: '0',
  money: '#,##0.00',
  date: 'yyyy-mm-dd',
  dateTime: 'yyyy-mm-dd hh:mm:ss',
} as const;

const HEADER_FILL: ExcelJS.Fill = { type: 'pattern', pattern: 'solid', fgColor: { argb: 'FFE8EEF7' } };

/**
 * exceljs is loaded on the first workbook, not at start-up: it is ~25 MB of RSS that only the
 * process building reports needs (an API process apart from the worker never loads it).
 */
export async function openWorkbook(out: Writable): Promise<ExcelJS.stream.xlsx.WorkbookWriter> {
  const { default: Excel } = await import('exceljs');
  const workbook = new Excel.stream.xlsx.WorkbookWriter({
    stream: out,
    useStyles: true,
    useSharedStrings: false,
    // Fast deflate: the files stay small (repetitive XML) and writing is quicker than the default level.
    zip: { zlib: { level: 1 } },
  });
  workbook.creator = 'Client API v1';
  workbook.created = new Date();
  return workbook;
}

export interface TableSheet {
  sheet: ExcelJS.Worksheet;
  /** Writes (and commits) one data row; values in column order. */
  addRow(values: Array<string | number | Date | null>): void;
  /**
   * Waits until the zip has taken what was written (call after each batch of rows), and after
   * every GC_EVERY_ROWS rows collects the garbage they left (src/gc.ts).
   */
  drain(): Promise<void>;
}

/**
 * exceljs's streaming writer ignores backpressure: a sheet's XML goes into a PassThrough that feeds
 * the zip, and nothing waits for the deflate behind it, so rows produced faster than they are
 * compressed pile up uncompressed in memory (array buffers reached ~50 MB while building 100,000
 * invoices). Waiting for that PassThrough to drain after each batch bounds the backlog to about
 * one batch. An error of the zip or of the file ends the wait (commit() then reports it).
 */
async function drainSheet(workbook: ExcelJS.stream.xlsx.WorkbookWriter, sheet: ExcelJS.Worksheet): Promise<void> {
  const source = (sheet as unknown as { stream?: { pipes?: Writable[] } }).stream;
  const internals = workbook as unknown as { zip?: EventEmitter; stream?: EventEmitter };
  for (const destination of source?.pipes ?? []) {
    if (!destination.writableNeedDrain || destination.destroyed) continue;
    const done = new AbortController();
    const failed = [internals.zip, internals.stream]
      .filter((e): e is EventEmitter => e !== undefined)
      .map((e) => once(e, 'error', { signal: done.signal }));
    try {
      await Promise.race([once(destination, 'drain', { signal: done.signal }), ...failed]);
    } catch (err) {
      if (!done.signal.aborted) throw err;
    } finally {
      done.abort();
    }
  }
}

/**
 * Rows between two full GCs while a sheet is written: each row leaves ~300 bytes of sheet XML in
 * promoted buffers that only a full GC frees (src/gc.ts); 25,000 rows keep that under ~10 MB for
 * four GCs per 100,000 rows.
 */
export const GC_EVERY_ROWS = 25_000;

/**
 * Text a spreadsheet program may take for a formula once the cell is edited or the sheet saved as
 * CSV (OWASP's CSV injection list): such cells carry Excel's quote prefix, which keeps them text.
 */
const FORMULA_LIKE = /^[=+\-@\t\r]/;

/** The same style with Excel's quote prefix (`quotePrefix="1"`, written by the exceljs patch in patches/). */
const asText = (style: Partial<ExcelJS.Style>): Partial<ExcelJS.Style> => ({ ...style, quotePrefix: true }) as Partial<ExcelJS.Style>;

/**
 * A data sheet: typed columns, bold header row frozen at the top. Call `finishTable` after the rows.
 *
 * Every cell of a column gets the same style object: exceljs dedupes styles per object (a WeakMap),
 * so a shared object costs nothing per cell, while column styles would make exceljs build and
 * serialize a new style for every cell (about three times slower for 100,000 rows).
 */
export function addTableSheet(workbook: ExcelJS.stream.xlsx.WorkbookWriter, name: string, columns: ColumnSpec[]): TableSheet {
  const sheet = workbook.addWorksheet(name, { views: [{ state: 'frozen', xSplit: 0, ySplit: 1 }] });
  sheet.columns = columns.map((c) => ({ header: c.header, key: c.key, width: c.width }));
  const header = sheet.getRow(1);
  const headerStyle: Partial<ExcelJS.Style> = { font: { bold: true }, fill: HEADER_FILL, border: { bottom: { style: 'thin' } } };
  header.eachCell((cell) => {
    cell.style = headerStyle;
  });
  header.commit();
  const plain: Partial<ExcelJS.Style> = {};
  let rows = 0;
  let collectedAt = 0;
  const styles = columns.map((c) => (c.numFmt ? ({ numFmt: c.numFmt } as Partial<ExcelJS.Style>) : plain));
  const quoted = styles.map(asText);
  return {
    sheet,
    addRow(values) {
      const row = sheet.addRow(values);
      for (let i = 0; i < styles.length; i++) {
        const value = values[i];
        row.getCell(i + 1).style = typeof value === 'string' && FORMULA_LIKE.test(value) ? quoted[i]! : styles[i]!;
      }
      row.commit();
      rows += 1;
    },
    async drain() {
      await drainSheet(workbook, sheet);
      if (rows - collectedAt >= GC_EVERY_ROWS) {
        collectedAt = rows;
        collectGarbage();
      }
    },
  };
}

/** Adds the filter over the whole table (header plus `rows` data rows) and commits the sheet. */
export function finishTable({ sheet }: TableSheet, columnCount: number, rows: number): void {
  sheet.autoFilter = { from: { row: 1, column: 1 }, to: { row: rows + 1, column: columnCount } };
  (sheet as unknown as { commit(): void }).commit();
}

export type SummaryCell = string | number | Date | null;

/** A small sheet of label/value lines and tables; `formats` maps a column (1-based) to a number format per row. */
export function addSummarySheet(
  workbook: ExcelJS.stream.xlsx.WorkbookWriter,
  name: string,
  lines: Array<{ cells: SummaryCell[]; bold?: boolean; header?: boolean; formats?: Array<string | undefined> }>,
  widths: number[],
): void {
  const sheet = workbook.addWorksheet(name);
  sheet.columns = widths.map((width) => ({ width }));
  for (const line of lines) {
    const row = sheet.addRow(line.cells);
    line.formats?.forEach((fmt, i) => {
      if (fmt) row.getCell(i + 1).numFmt = fmt;
    });
    if (line.bold || line.header) row.font = { bold: true };
    if (line.header) {
      row.eachCell((cell) => {
        cell.fill = HEADER_FILL;
        cell.border = { bottom: { style: 'thin' } };
      });
    }
    row.commit();
  }
  (sheet as unknown as { commit(): void }).commit();
}

/** Commits the workbook and waits until `out` has taken (and flushed) every byte. */
export async function commitWorkbook(workbook: ExcelJS.stream.xlsx.WorkbookWriter, out: Writable): Promise<void> {
  const flushed = finished(out);
  await workbook.commit();
  await flushed;
}

/** `YYYY-MM-DD` as a date cell (midnight UTC, which exceljs stores as that calendar day). */
export const dateCell = (ymd: string): Date => new Date(`${ymd}T00:00:00.000Z`);
