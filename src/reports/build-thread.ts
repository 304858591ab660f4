/**
 * The build thread's side of a report build (started by src/reports/build.ts): turns the pages of
 * rows it is handed into the workbook and hands the workbook's bytes back, in order.
 *
 * Messages in: `{ type: 'page', text }` in table order, then `{ type: 'end' }`.
 * Messages out: `{ type: 'bytes', data }` (a transferred ArrayBuffer), `{ type: 'taken' }` once a
 * page's rows are in the zip's input (the caller's credit to send another), and `{ type: 'done',
 * rows, totals, sheets }` after the last byte. Any error is thrown out of the thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority } from '../shared/threads.ts';
import { invoiceTable } from './invoice-table.ts';
import { serviceTable } from './service-table.ts';
import { TableWriter, XlsxWriter, type BuildFacts, type TableKind } from './workbook.ts';

export interface ThreadInit {
  kind: 'invoices' | 'services';
  facts: BuildFacts;
  rowsPerSheet: number;
}

export type ToThread = { type: 'page'; text: string } | { type: 'end' };
export type FromThread =
  | { type: 'bytes'; data: ArrayBuffer }
  | { type: 'taken' }
  | { type: 'done'; rows: number; totals: unknown; sheets: number };

const TABLES: Record<ThreadInit['kind'], TableKind<unknown, unknown>> = {
  invoices: invoiceTable as TableKind<unknown, unknown>,
  services: serviceTable as TableKind<unknown, unknown>,
};

/** Output is handed over in pieces of about this size (fewer messages; each piece is copied once). */
const BYTES_PER_MESSAGE = 256 * 1024;

function fail(err: unknown): void {
  // Thrown outside any promise so that it reaches the caller as the Worker's 'error' event.
  setImmediate(() => {
    throw err;
  });
}

/** Sends the zip's output to the caller in pieces of its own memory (zlib's chunks share buffers, so they are copied, then transferred). */
function forwardBytes(writer: XlsxWriter, port: NonNullable<typeof parentPort>, onEnd: () => void): void {
  let pieces: Buffer[] = [];
  let size = 0;
  const send = () => {
    const data = new Uint8Array(size);
    let at = 0;
    for (const p of pieces) {
      data.set(p, at);
      at += p.length;
    }
    pieces = [];
    size = 0;
    port.postMessage({ type: 'bytes', data: data.buffer } satisfies FromThread, [data.buffer]);
  };
  writer.output.on('data', (chunk: Buffer) => {
    pieces.push(chunk);
    size += chunk.length;
    if (size >= BYTES_PER_MESSAGE) send();
  });
  writer.output.on('end', () => {
    if (size > 0) send();
    onEnd();
  });
  writer.output.on('error', fail);
}

function run(port: NonNullable<typeof parentPort>, init: ThreadInit): void {
  const kind = TABLES[init.kind];
  const writer = new XlsxWriter(new Date(init.facts.generatedAt));
  writer.onError(fail);
  const table = new TableWriter(writer, kind.sheetName, kind.columns, init.rowsPerSheet);
  const counts = kind.start();
  forwardBytes(writer, port, () => port.postMessage({ type: 'done', ...kind.result(counts), sheets: table.sheets } satisfies FromThread));

  const handle = async (message: ToThread): Promise<void> => {
    if (message.type === 'page') {
      kind.addPage(message.text, table, counts);
      await table.flush();
      port.postMessage({ type: 'taken' } satisfies FromThread);
      return;
    }
    table.finish();
    const { lines, widths } = kind.summary(counts, init.facts, table.sheets);
    writer.addSummarySheet('Summary', lines, widths);
    writer.finish();
  };
  // One message at a time, in order.
  let work = Promise.resolve();
  port.on('message', (message: ToThread) => {
    work = work.then(() => handle(message)).catch(fail);
  });
}

if (parentPort) {
  lowerThreadPriority();
  run(parentPort, workerData as ThreadInit);
}
