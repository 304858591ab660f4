import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { ZipFile } from 'yazl';
import { Styles, type CellLook } from './xlsx/styles.ts';
import { columnName, escapeXml, FORMULA_LIKE, MAIN_NS, numberCell, numberCellHead, REL_NS, serialOfTime, textCell, textCellTail, XML_HEAD } from './xlsx/xml.ts';

/**
 * The report workbooks (`.xlsx`, Office Open XML), written as text and zipped as they stream:
 * a narrow writer of the few things the reports use (typed cells, number formats, the bold filled
 * header, a frozen header row, a filter, column widths, the quote prefix), because exceljs's
 * streaming writer cost most of a build (bench/README.md, "Report build profile (issue 20)").
 * Memory stays flat however many rows there are: a sheet's XML goes into the zip a page at a time.
 */
export interface ColumnSpec {
  header: string;
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

/** Excel's rows per sheet (1,048,576) less the header row: the data rows one table sheet holds. */
export const EXCEL_DATA_ROWS = 1_048_575;

/** Distinct values per column whose cells `repeatedText` keeps (a bound, should a column not repeat after all). */
const REPEATED_VALUES_KEPT = 1000;

/** Fast deflate: the files stay small (repetitive XML) and writing is several times quicker than the default level. */
const ZIP_LEVEL = 1;

/** Characters Excel refuses in a sheet name, and its length limit. */
const SHEET_NAME_REFUSED = /[[\]:*?/\\]/;
const SHEET_NAME_MAX = 31;

export type SummaryCell = string | number | Date | null;
export interface SummaryLine {
  cells: SummaryCell[];
  bold?: boolean;
  header?: boolean;
  /** Number format per cell (by position). */
  formats?: Array<string | undefined>;
}

/** One sheet's XML part in the zip, written as it streams. */
class SheetPart {
  private readonly stream = new PassThrough({ highWaterMark: 1 << 20 });

  constructor(zip: ZipFile, file: string, mtime: Date) {
    zip.addReadStream(this.stream, file, { compressionLevel: ZIP_LEVEL, mtime });
  }

  /** Writes XML; resolves once the zip can take more (its deflate keeps up). */
  async write(xml: string | Buffer): Promise<void> {
    if (!this.stream.write(xml)) await once(this.stream, 'drain');
  }

  /** Writes the last of the XML: `rows` (bytes), then `tail`. */
  end(rows: Buffer[], tail: string): void {
    for (const piece of rows) this.stream.write(piece);
    this.stream.end(tail);
  }
}

/** Bytes per buffer of Utf8Pieces: a few pages of rows. */
const PIECE_BYTES = 1 << 20;

/**
 * Text gathered as UTF-8 bytes, a string at a time. Writing each row's text into a buffer costs a
 * fraction of joining the rows' texts and encoding the whole page: V8 flattens a page-long string of
 * thousands of parts slowly (bench/README.md, "Report build profile"). What `take` hands out are
 * views of a buffer that later text fills further on (never over them), so a buffer serves several
 * takes before the next is allocated.
 */
class Utf8Pieces {
  private pieces: Buffer[] = [];
  private current = Buffer.allocUnsafe(PIECE_BYTES);
  /** Where the bytes not yet taken start in `current`, and where they end. */
  private start = 0;
  private used = 0;

  add(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    if (this.used + text.length * 3 > this.current.length) this.next(text.length * 3);
    this.used += this.current.write(text, this.used);
  }

  /** The bytes gathered so far (each piece never written again). */
  take(): Buffer[] {
    if (this.used > this.start) this.pieces.push(this.current.subarray(this.start, this.used));
    this.start = this.used;
    const pieces = this.pieces;
    this.pieces = [];
    return pieces;
  }

  private next(atLeast: number): void {
    if (this.used > this.start) this.pieces.push(this.current.subarray(this.start, this.used));
    this.current = Buffer.allocUnsafe(Math.max(PIECE_BYTES, atLeast));
    this.start = 0;
    this.used = 0;
  }
}

/** The start of a sheet's XML up to its first row: a frozen header row (table sheets), column widths. */
function sheetHead(widths: number[], frozenHeader: boolean): string {
  const view = frozenHeader
    ? '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>' +
      '<selection pane="bottomLeft"/></sheetView></sheetViews>'
    : '';
  const cols = widths.map((w, i) => `<col min="${i + 1}" max="${i + 1}" width="${w}" customWidth="1"/>`).join('');
  return `${XML_HEAD}<worksheet xmlns="${MAIN_NS}" xmlns:r="${REL_NS}">${view}<sheetFormatPr defaultRowHeight="15"/><cols>${cols}</cols><sheetData>`;
}

function sheetTail(autoFilter: string | undefined): string {
  const filter = autoFilter ? `<autoFilter ref="${autoFilter}"/>` : '';
  return `</sheetData>${filter}<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/></worksheet>`;
}

/** A workbook being written: sheets in order, then `finish()`; its bytes come out of `output`. */
export class XlsxWriter {
  readonly styles = new Styles();
  private readonly zip = new ZipFile();
  private readonly names: string[] = [];

  constructor(private readonly created: Date) {}

  /** The zip's bytes, as they are made. */
  get output(): Readable {
    return this.zip.outputStream as Readable;
  }

  /** Errors of the zip (a part's stream, its deflate). */
  onError(listener: (err: Error) => void): void {
    this.zip.on('error', listener);
  }

  /** Starts the next sheet (its XML head written); the name must be valid and not yet used. */
  openSheet(name: string, widths: number[], frozenHeader: boolean): SheetPart {
    if (!name || name.length > SHEET_NAME_MAX || SHEET_NAME_REFUSED.test(name) || /^'|'$/.test(name)) {
      throw new Error(`invalid sheet name ${JSON.stringify(name)}`);
    }
    if (this.names.some((n) => n.toLowerCase() === name.toLowerCase())) throw new Error(`sheet name ${JSON.stringify(name)} used twice`);
    this.names.push(name);
    const part = new SheetPart(this.zip, `xl/worksheets/sheet${this.names.length}.xml`, this.created);
    void part.write(sheetHead(widths, frozenHeader));
    return part;
  }

  /** A small sheet of label/value lines and tables (the Summary), written whole. */
  addSummarySheet(name: string, lines: SummaryLine[], widths: number[]): void {
    const part = this.openSheet(name, widths, false);
    const rows = lines.map((line, i) => summaryRow(this.styles, line, i + 1));
    part.end([], rows.join('') + sheetTail(undefined));
  }

  /** Writes the workbook's other parts and closes the zip; `output` ends after the last byte. */
  finish(): void {
    const add = (file: string, xml: string) => this.zip.addBuffer(Buffer.from(xml), file, { compressionLevel: ZIP_LEVEL, mtime: this.created });
    const sheets = this.names.map((name, i) => `<sheet name="${escapeXml(name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('');
    add('xl/workbook.xml', `${XML_HEAD}<workbook xmlns="${MAIN_NS}" xmlns:r="${REL_NS}"><bookViews><workbookView/></bookViews><sheets>${sheets}</sheets></workbook>`);
    add('xl/styles.xml', this.styles.xml());
    add('xl/_rels/workbook.xml.rels', workbookRels(this.names.length));
    add('[Content_Types].xml', contentTypes(this.names.length));
    add('_rels/.rels', PACKAGE_RELS);
    add('docProps/core.xml', coreProperties(this.created));
    add('docProps/app.xml', APP_PROPERTIES);
    this.zip.end();
  }
}

function summaryRow(styles: Styles, line: SummaryLine, r: number): string {
  if (line.cells.length === 0) return '';
  const bold = line.bold || line.header;
  const cells = line.cells.map((value, i) => {
    if (value === null) return '';
    const look: CellLook = { numFmt: line.formats?.[i], bold: !!bold, header: !!line.header };
    const ref = `${columnName(i + 1)}${r}`;
    if (typeof value === 'string') return textCell(value, styles.of({ ...look, quote: FORMULA_LIKE.test(value) }), ref);
    if (typeof value === 'number') return numberCell(value, styles.of(look), ref);
    return numberCell(serialOfTime(value.getTime()), styles.of(look), ref);
  });
  const rowStyle = bold ? ` s="${styles.of({ bold: true })}" customFormat="1"` : '';
  return `<row r="${r}"${rowStyle}>${cells.join('')}</row>`;
}

const OFFICE_DOC = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const PACKAGE_RELS =
  `${XML_HEAD}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
  `<Relationship Id="rId1" Type="${OFFICE_DOC}/officeDocument" Target="xl/workbook.xml"/>` +
  '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>' +
  `<Relationship Id="rId3" Type="${OFFICE_DOC}/extended-properties" Target="docProps/app.xml"/></Relationships>`;

const APP_PROPERTIES =
  `${XML_HEAD}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">` +
  '<Application>Client API v1</Application></Properties>';

function workbookRels(sheets: number): string {
  const rels = Array.from({ length: sheets }, (_, i) => `<Relationship Id="rId${i + 1}" Type="${OFFICE_DOC}/worksheet" Target="worksheets/sheet${i + 1}.xml"/>`);
  rels.push(`<Relationship Id="rId${sheets + 1}" Type="${OFFICE_DOC}/styles" Target="styles.xml"/>`);
  return `${XML_HEAD}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rels.join('')}</Relationships>`;
}

function contentTypes(sheets: number): string {
  const type = (part: string) => `application/vnd.openxmlformats-officedocument.${part}+xml`;
  const overrides = [
    `<Override PartName="/xl/workbook.xml" ContentType="${type('spreadsheetml.sheet.main')}"/>`,
    ...Array.from({ length: sheets }, (_, i) => `<Override PartName="/xl/worksheets/sheet${i + 1}.xml" ContentType="${type('spreadsheetml.worksheet')}"/>`),
    `<Override PartName="/xl/styles.xml" ContentType="${type('spreadsheetml.styles')}"/>`,
    '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>',
    `<Override PartName="/docProps/app.xml" ContentType="${type('extended-properties')}"/>`,
  ];
  return (
    `${XML_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
    `<Default Extension="xml" ContentType="application/xml"/>${overrides.join('')}</Types>`
  );
}

function coreProperties(created: Date): string {
  const at = `${created.toISOString().slice(0, 19)}Z`;
  return (
    `${XML_HEAD}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ` +
    'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">' +
    `<dc:creator>Client API v1</dc:creator><dcterms:created xsi:type="dcterms:W3CDTF">${at}</dcterms:created>` +
    `<dcterms:modified xsi:type="dcterms:W3CDTF">${at}</dcterms:modified></cp:coreProperties>`
  );
}

/**
 * A data table over as many sheets as it needs (`Invoices`, `Invoices (2)`, …), each of at most
 * `rowsPerSheet` data rows under its own header row, frozen pane, filter, widths and formats.
 * Rows are given as their cells' XML (made with `text`/`number`), gathered per page and written
 * with `flush()`.
 */
export class TableWriter {
  private readonly plain: number[];
  private readonly quoted: number[];
  private readonly numberHeads: string[];
  /** Per column, the text cells already made for values that repeat (statuses, currencies, plans). */
  private readonly repeated: Array<Map<string, string>>;
  private readonly header: string;
  private readonly letters: string[];
  private part: SheetPart | undefined;
  private readonly pending = new Utf8Pieces();
  private rowsInSheet = 0;
  private sheetCount = 0;
  rows = 0;

  constructor(
    private readonly workbook: XlsxWriter,
    private readonly name: string,
    private readonly columns: ColumnSpec[],
    private readonly rowsPerSheet: number = EXCEL_DATA_ROWS,
  ) {
    if (!Number.isInteger(rowsPerSheet) || rowsPerSheet < 1 || rowsPerSheet > EXCEL_DATA_ROWS) throw new Error(`rowsPerSheet must be 1..${EXCEL_DATA_ROWS}`);
    const { styles } = workbook;
    this.plain = columns.map((c) => styles.of({ numFmt: c.numFmt }));
    this.quoted = columns.map((c) => styles.of({ numFmt: c.numFmt, quote: true }));
    this.numberHeads = this.plain.map(numberCellHead);
    this.repeated = columns.map(() => new Map());
    const headerStyle = styles.of({ header: true });
    this.letters = columns.map((_, i) => columnName(i + 1));
    this.header = `<row r="1">${columns.map((c, i) => textCell(c.header, headerStyle, `${this.letters[i]}1`)).join('')}</row>`;
    this.nextSheet();
  }

  /** The sheets holding the table so far. */
  get sheets(): number {
    return this.sheetCount;
  }

  /** A text cell of column `i` (0-based) in sheet row `r`, with the quote prefix when it looks like a formula. */
  text(i: number, value: string, r: number): string {
    return `<c r="${this.letters[i]!}${r}"${textCellTail(value, FORMULA_LIKE.test(value) ? this.quoted[i]! : this.plain[i]!)}`;
  }

  /** `text` for a column of few distinct values: each value's cell is made once. */
  repeatedText(i: number, value: string, r: number): string {
    const made = this.repeated[i]!;
    let tail = made.get(value);
    if (tail === undefined) {
      tail = textCellTail(value, FORMULA_LIKE.test(value) ? this.quoted[i]! : this.plain[i]!);
      if (made.size < REPEATED_VALUES_KEPT) made.set(value, tail);
    }
    return `<c r="${this.letters[i]!}${r}"${tail}`;
  }

  /** A number cell of column `i` in sheet row `r`; `value` may be the number's text. */
  number(i: number, value: string | number, r: number): string {
    return `<c r="${this.letters[i]!}${r}"${this.numberHeads[i]!}${value}</v></c>`;
  }

  /** Appends a row: `cells(r)` makes its cells' XML (with `text`/`number`) for sheet row `r`, in column order. */
  row(cells: (r: number) => string): void {
    if (this.rowsInSheet === this.rowsPerSheet) this.nextSheet();
    this.rowsInSheet += 1;
    this.rows += 1;
    const r = this.rowsInSheet + 1;
    this.pending.add(`<row r="${r}">${cells(r)}</row>`);
  }

  /** Writes the rows appended so far; resolves once the zip can take more. */
  async flush(): Promise<void> {
    for (const piece of this.pending.take()) await this.part!.write(piece);
  }

  /** Ends the last sheet. */
  finish(): void {
    this.endSheet();
  }

  private nextSheet(): void {
    if (this.part) this.endSheet();
    this.sheetCount += 1;
    const name = this.sheetCount === 1 ? this.name : `${this.name} (${this.sheetCount})`;
    this.part = this.workbook.openSheet(name, this.columns.map((c) => c.width), true);
    void this.part.write(this.header);
    this.rowsInSheet = 0;
  }

  private endSheet(): void {
    const filter = `A1:${columnName(this.columns.length)}${this.rowsInSheet + 1}`;
    this.part!.end(this.pending.take(), sheetTail(filter));
  }
}

/** What a report's build knows besides its rows (passed to the build thread, so plain data). */
export interface BuildFacts {
  /** The run's generated_at, as epoch milliseconds. */
  generatedAt: number;
  startDate?: string | undefined;
  endDate?: string | undefined;
  statusFilter?: string | null | undefined;
}

/**
 * One report's table: how a page of rows read from the database (text, as the report's query makes
 * it) becomes table rows and counts, and what the Summary says about them. `A` holds the counts.
 */
export interface TableKind<A, T> {
  sheetName: string;
  columns: ColumnSpec[];
  start(): A;
  addPage(text: string, table: TableWriter, counts: A): void;
  summary(counts: A, facts: BuildFacts, sheets: number): { lines: SummaryLine[]; widths: number[] };
  result(counts: A): { rows: number; totals: T };
}
