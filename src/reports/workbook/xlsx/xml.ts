/**
 * SpreadsheetML text for the report writer (src/reports/workbook/writer.ts): escaping and cells.
 */

/**
 * Characters that need care in XML 1.0 text: the five markup characters; the C0 controls XML 1.0
 * cannot hold at all (all but tab, LF and CR), DEL (dropped as exceljs dropped it), and U+FFFE,
 * U+FFFF (not characters); CR, which a parser would read back as LF unless written as a reference.
 */
const CARE = String.raw`[&<>"\u0000-\u0008\u000B-\u001F\u007F\uFFFE\uFFFF]`;
const NEEDS_CARE = new RegExp(CARE);
const CARE_ALL = new RegExp(CARE, 'g');

const REPLACEMENT: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\r': '&#13;' };

/**
 * Text as XML character data (also safe in a double-quoted attribute). Characters XML 1.0 cannot
 * hold are dropped: the free-text rules (src/shared/text.ts) refuse control characters on input,
 * so only older data could carry them.
 */
export function escapeXml(text: string): string {
  if (!NEEDS_CARE.test(text)) return text;
  return text.replace(CARE_ALL, (c) => REPLACEMENT[c] ?? '');
}

/** Leading or trailing white space, which Excel keeps only under xml:space="preserve". */
const EDGE_SPACE = /^\s|\s$/;

/**
 * Text a spreadsheet program may take for a formula once the cell is edited or the sheet saved as
 * CSV (OWASP's CSV injection list), and the fullwidth forms of its leaders (＝ ＋ － ＠), which some
 * spreadsheet programs fold to the ASCII ones: such cells get Excel's quote prefix, which keeps them text.
 */
export const FORMULA_LIKE = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;

/*
 * Every cell names its reference (`r="B7"`): the format lets a reader infer it from the cell's
 * place, but some readers (exceljs among them) fail on a cell without one.
 */

/** What follows `<c r="…"` in an inline-string cell (`t="inlineStr"`); `style` is its xf index (0: none). */
export function textCellTail(text: string, style: number): string {
  const s = style === 0 ? '' : ` s="${style}"`;
  const t = EDGE_SPACE.test(text) ? '<t xml:space="preserve">' : '<t>';
  return `${s} t="inlineStr"><is>${t}${escapeXml(text)}</t></is></c>`;
}

/** An inline-string cell at `ref`. */
export function textCell(text: string, style: number, ref: string): string {
  return `<c r="${ref}"${textCellTail(text, style)}`;
}

/** What follows `<c r="…"` in a number cell, up to its value. */
export const numberCellHead = (style: number): string => (style === 0 ? '><v>' : ` s="${style}"><v>`);

/** A number cell at `ref`; `value` is already the number's text (a JS number's or the database's decimal). */
export function numberCell(value: string | number, style: number, ref: string): string {
  return `<c r="${ref}"${numberCellHead(style)}${value}</v></c>`;
}

/** Days from Excel's day 0 (1899-12-30, the 1900 date system) to 1970-01-01. */
const EPOCH_SERIAL = 25569;
const MS_PER_DAY = 86_400_000;

/** A UTC instant as Excel's date serial number (days and fraction), as exceljs wrote it. */
export const serialOfTime = (ms: number): number => EPOCH_SERIAL + ms / MS_PER_DAY;

/** `YYYY-MM-DD` as Excel's serial number of that day. */
export function serialOfDay(ymd: string): number {
  return serialOfTime(Date.UTC(Number(ymd.slice(0, 4)), Number(ymd.slice(5, 7)) - 1, Number(ymd.slice(8, 10))));
}

/** Column letters of a 1-based column number (1 → A, 27 → AA). */
export function columnName(n: number): string {
  let name = '';
  for (let c = n; c > 0; c = Math.floor((c - 1) / 26)) name = String.fromCharCode(65 + ((c - 1) % 26)) + name;
  return name;
}

export const XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
export const MAIN_NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
export const REL_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
