/**
 * Reads a workbook back with python3-openpyxl, a reader that is not the library that wrote it
 * (src/reports/workbook.ts): every sheet's cells with their types, number formats, quote prefix and
 * boldness, and each sheet's frozen pane, filter and column widths, as plain data.
 *
 *   const book = readWorkbook(buffer);
 *   book.sheets[0].rows[1][0] // { value: 'INV-1', type: 's', format: 'General', quotePrefix: false, bold: false }
 *
 * The interpreter is $PYTHON, else the first of /usr/bin/python3 (where Debian's python3-openpyxl
 * installs) and python3 that can import openpyxl; .ci/run installs the package when missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';

export interface CellDump {
  /** Dates (openpyxl turns date-formatted numbers into datetimes) as ISO text without zone, `YYYY-MM-DDTHH:MM:SS[.ffffff]`. */
  value: string | number | boolean | null;
  /** openpyxl's data type: `s` text, `n` number, `d` date, `b` boolean. */
  type: string;
  format: string;
  quotePrefix: boolean;
  bold: boolean;
  fill: string | null;
  bottomBorder: string | null;
}

export interface SheetDump {
  name: string;
  /** Rows from row 1, each with cells from column A; a missing cell is null. */
  rows: Array<Array<CellDump | null>>;
  freezePanes: string | null;
  autoFilter: string | null;
  /** Column letter → width. */
  widths: Record<string, number>;
}

export interface WorkbookDump {
  sheets: SheetDump[];
}

const SCRIPT = String.raw`
import io, json, sys, datetime
from openpyxl import load_workbook
wb = load_workbook(io.BytesIO(sys.stdin.buffer.read()))
def cell(c):
    v = c.value
    if isinstance(v, (datetime.datetime, datetime.date)):
        v = v.isoformat()
    fill = c.fill.fgColor.rgb if c.fill is not None and c.fill.fill_type == 'solid' else None
    return {'value': v, 'type': c.data_type, 'format': c.number_format, 'quotePrefix': bool(c.quotePrefix),
            'bold': bool(c.font.b), 'fill': fill, 'bottomBorder': c.border.bottom.style}
out = []
for ws in wb.worksheets:
    rows = []
    for row in ws.iter_rows():
        rows.append([cell(c) if c.value is not None or c.has_style else None for c in row])
    widths = {k: d.width for k, d in ws.column_dimensions.items() if d.customWidth}
    out.append({'name': ws.title, 'rows': rows, 'freezePanes': ws.freeze_panes, 'autoFilter': ws.auto_filter.ref, 'widths': widths})
json.dump({'sheets': out}, sys.stdout)
`;

let python: string | undefined;

function interpreter(): string {
  if (python) return python;
  const candidates = [process.env.PYTHON, '/usr/bin/python3', 'python3'].filter((p): p is string => !!p);
  for (const candidate of candidates) {
    const r = spawnSync(candidate, ['-c', 'import openpyxl'], { stdio: 'ignore' });
    if (r.status === 0) return (python = candidate);
  }
  throw new Error(`no python3 with openpyxl among ${candidates.join(', ')} (apt-get install python3-openpyxl)`);
}

export function readWorkbook(xlsx: Buffer | Uint8Array): WorkbookDump {
  const json = execFileSync(interpreter(), ['-c', SCRIPT], { input: xlsx, maxBuffer: 256 * 1024 * 1024 });
  return JSON.parse(json.toString('utf8')) as WorkbookDump;
}

/** A sheet by name. */
export function sheetOf(book: WorkbookDump, name: string): SheetDump {
  const sheet = book.sheets.find((s) => s.name === name);
  if (!sheet) throw new Error(`no sheet ${name} among ${book.sheets.map((s) => s.name).join(', ')}`);
  return sheet;
}

/** A sheet's cell values, row by row (null for a missing cell). */
export const valuesOf = (sheet: SheetDump): unknown[][] => sheet.rows.map((row) => row.map((c) => c?.value ?? null));
