/** A JSON array of objects or a CSV with a header; messages number data rows from 1, the header not counted. */
import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import { CliError, ImportRowError, oneLine } from './errors.ts';

export type RawRecord = Record<string, unknown>;

export interface FieldSpec {
  /** Fields every row must carry (a CSV must have these columns). */
  required: readonly string[];
  /** Fields a row may carry. */
  optional?: readonly string[];
}

export async function readImportFile(file: string): Promise<unknown[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new CliError(code === 'ENOENT' ? `file not found: ${file}` : `cannot read ${file}: ${oneLine(e)}`);
  }
  return parseImportText(text);
}

/** JSON when the text starts with `[` or `{` (after a BOM and white space), CSV otherwise. */
export function parseImportText(text: string): unknown[] {
  const body = text.replace(/^\uFEFF/, '');
  const first = body.trimStart()[0];
  if (first === '[' || first === '{') {
    let data: unknown;
    try {
      data = JSON.parse(body);
    } catch (e) {
      throw new CliError(`the file is not valid JSON: ${oneLine(e)}`);
    }
    if (!Array.isArray(data)) throw new CliError('a JSON import file must be an array of objects, one per row');
    return data;
  }
  return parseCsv(body);
}

function parseCsv(text: string): RawRecord[] {
  let records: string[][];
  try {
    records = parse(text, { bom: true, skip_empty_lines: true, relax_column_count: true, trim: true });
  } catch (e) {
    throw new CliError(`the file is not valid CSV: ${oneLine(e)}`);
  }
  const header = records[0];
  if (header === undefined) return [];
  const names = header.map((h) => h.trim().toLowerCase());
  const seen = new Set<string>();
  for (const name of names) {
    if (name === '') throw new CliError('CSV header has an empty column name');
    if (seen.has(name)) throw new CliError(`CSV header names the column "${name}" twice`);
    seen.add(name);
  }
  const rows: RawRecord[] = [];
  for (let i = 1; i < records.length; i++) {
    const fields = records[i]!;
    if (fields.length !== names.length) {
      throw new ImportRowError(i, undefined, `has ${fields.length} fields, the header has ${names.length}`);
    }
    const row: RawRecord = {};
    names.forEach((name, j) => {
      row[name] = fields[j];
    });
    rows.push(row);
  }
  return rows;
}

/** Keyed by lower-cased names; blank optional fields are dropped. */
export function checkRowShape(value: unknown, row: number, spec: FieldSpec): RawRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ImportRowError(row, undefined, 'must be an object with the fields ' + spec.required.join(', '));
  }
  const known = new Set([...spec.required, ...(spec.optional ?? [])]);
  const out: RawRecord = {};
  for (const [key, v] of Object.entries(value)) {
    const name = key.trim().toLowerCase();
    if (!known.has(name)) {
      throw new ImportRowError(row, key, `unknown field (expected ${[...known].join(', ')})`);
    }
    if (v === null || v === undefined || (typeof v === 'string' && v.trim() === '')) continue;
    out[name] = v;
  }
  for (const name of spec.required) {
    if (!(name in out)) throw new ImportRowError(row, name, 'is missing or empty');
  }
  return out;
}
