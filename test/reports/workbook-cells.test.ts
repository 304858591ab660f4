/**
 * Cells that a spreadsheet program could take for a formula (OWASP CSV injection: text starting with
 * `=`, `+`, `-`, `@`, tab or CR) are written with Excel's quote prefix, so they stay text when edited
 * or exported; other text and numbers are written as they are (src/reports/workbook.ts).
 */
import assert from 'node:assert/strict';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import JSZip from 'jszip';
import { addTableSheet, commitWorkbook, finishTable, openWorkbook } from '../../src/reports/workbook.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'capi-workbook-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const CELLS: Array<[string | number, boolean]> = [
  ['=HYPERLINK("http://x","y")', true],
  ['+1+2', true],
  ['-2+3', true],
  ['@SUM(A1)', true],
  ['\t=1', true],
  ['\r=1', true],
  ['Client Ltd', false],
  ['a=b', false],
  [-5, false],
];

test('formula-like text cells carry quotePrefix="1"; others do not', async () => {
  const file = path.join(dir, 'cells.xlsx');
  const out = createWriteStream(file);
  const workbook = await openWorkbook(out);
  const table = addTableSheet(workbook, 'Cells', [{ header: 'Value', key: 'value', width: 30 }]);
  for (const [value] of CELLS) table.addRow([value]);
  finishTable(table, 1, CELLS.length);
  await commitWorkbook(workbook, out);

  const zip = await JSZip.loadAsync(readFileSync(file));
  const styles = await zip.file('xl/styles.xml')!.async('string');
  const xfs = [...(/<cellXfs[^>]*>([\s\S]*?)<\/cellXfs>/.exec(styles)?.[1] ?? '').matchAll(/<xf [^>]*?\/?>/g)].map((m) => m[0]);
  const sheet = await zip.file('xl/worksheets/sheet1.xml')!.async('string');
  const rows = [...sheet.matchAll(/<row r="(\d+)"[^>]*>([\s\S]*?)<\/row>/g)].filter((m) => m[1] !== '1');
  assert.equal(rows.length, CELLS.length);
  rows.forEach((row, i) => {
    const [value, quoted] = CELLS[i]!;
    const styleIndex = Number(/ s="(\d+)"/.exec(row[2]!)?.[1] ?? 0);
    const xf = xfs[styleIndex] ?? '';
    assert.equal(/quotePrefix="1"/.test(xf), quoted, `${JSON.stringify(value)}: ${xf}`);
  });
});
