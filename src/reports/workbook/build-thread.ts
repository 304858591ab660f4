/**
 * The build thread's side of a report build (started by build.ts, which says why two modes).
 * Direct (`init.direct` set): the thread reads the pages and stores the chunks through a
 * connection of its own, so a build's garbage stays in this thread's heap. Relayed: pages come in
 * (`page`, then `end`) and the bytes go back (`bytes`, a transferred ArrayBuffer; `taken` once a
 * page is in the zip, the caller's credit for another). Either way `done` comes last (direct: with
 * what was stored); any error is thrown out of the thread.
 */
import { finished } from 'node:stream/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { CONNECT_TIMEOUT_MS } from '../../db/connect-timeout.ts';
import { OneQueryAtATimeClient } from '../../db/one-at-a-time.ts';
import { collectGarbage } from './gc.ts';
import { lowerThreadPriority } from '../../shared/threads.ts';
import { invoiceTable } from './invoice-table.ts';
import { pagesOf, type PageRow, type PageScope } from './pages.ts';
import { serviceTable } from './service-table.ts';
import { TableWriter, XlsxWriter, type BuildFacts, type TableKind } from './writer.ts';
import { INSERT_CHUNK_SQL, WorkbookWriter, type StoredWorkbook } from './store.ts';

/** Where a direct build stores its workbook: the run's chunks of `build`, and whether to keep a copy. */
export interface StoreTarget {
  runId: string;
  build: string;
  /** A workbook no larger than this comes back whole (for attaching); 0: never. */
  keepUpTo: number;
  /** Bytes per stored chunk (WORKBOOK_CHUNK_BYTES by default; tests use a few). */
  chunkBytes?: number;
}

export interface DirectBuild {
  /** node-postgres connection string: PostgreSQL, or the embedded database's socket. */
  url: string;
  /** Bound on each query, as the process's own pool has it. */
  queryTimeoutMs?: number;
  scope: PageScope;
  target: StoreTarget;
}

export interface ThreadInit {
  kind: 'invoices' | 'services';
  facts: BuildFacts;
  rowsPerSheet: number;
  direct?: DirectBuild;
}

export type ToThread = { type: 'page'; text: string } | { type: 'end' };
export type FromThread =
  | { type: 'bytes'; data: ArrayBuffer }
  | { type: 'taken' }
  | { type: 'done'; rows: number; totals: unknown; sheets: number; stored?: StoredWorkbook; kept?: SharedArrayBuffer };

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

/** A workbook being written: the zip, the table's sheets and the counts for the Summary. */
function startWorkbook(init: ThreadInit) {
  const kind = TABLES[init.kind];
  const writer = new XlsxWriter(new Date(init.facts.generatedAt));
  writer.onError(fail);
  const table = new TableWriter(writer, kind.sheetName, kind.columns, init.rowsPerSheet);
  const counts = kind.start();
  return {
    writer,
    addPage: async (text: string) => {
      kind.addPage(text, table, counts);
      await table.flush();
    },
    finish: () => {
      table.finish();
      const { lines, widths } = kind.summary(counts, init.facts, table.sheets);
      writer.addSummarySheet('Summary', lines, widths);
      writer.finish();
    },
    result: () => ({ ...kind.result(counts), sheets: table.sheets }),
  };
}

/**
 * A build's buffers (socket reads, sheet XML, deflate output, stored chunks) outlive this thread's
 * small young generation and wait for a full collection, which V8 starts only after several times
 * this many. A full collection of the thread's small heap once they pass this bound keeps the
 * process's peak lower at a small cost in time (bench/README.md). Without `--expose-gc` (tests),
 * nothing happens.
 */
const BUFFER_BOUND_BYTES = 16 * 1024 * 1024;

function collectPastBufferBound(): void {
  if (process.memoryUsage().arrayBuffers > BUFFER_BOUND_BYTES) collectGarbage();
}

async function runDirect(port: NonNullable<typeof parentPort>, init: ThreadInit, direct: DirectBuild): Promise<void> {
  // The chunks are stored while the next page is read, on this one connection.
  const client = new OneQueryAtATimeClient({
    connectionString: direct.url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    ...(direct.queryTimeoutMs === undefined ? {} : { query_timeout: direct.queryTimeoutMs }),
  });
  client.on('error', fail);
  await client.connect();
  try {
    const { target } = direct;
    // node-postgres sends a Buffer as a binary parameter: the chunk's bytes as they are, no base64.
    const insert = async (runId: string, build: string, seq: number, data: Uint8Array<ArrayBuffer>) => {
      await client.query(INSERT_CHUNK_SQL, [runId, build, seq, Buffer.from(data.buffer, data.byteOffset, data.byteLength)]);
    };
    const out = new WorkbookWriter(insert, target.runId, target.build, target.chunkBytes, target.keepUpTo);
    out.on('error', fail);
    const workbook = startWorkbook(init);
    workbook.writer.output.on('error', fail).pipe(out);
    const stored = finished(out);
    const query = async (sql: string, params: unknown[]) => (await client.query<PageRow>(sql, params)).rows;
    for await (const text of pagesOf(direct.scope, query)) {
      await workbook.addPage(text);
      collectPastBufferBound();
    }
    workbook.finish();
    await stored;
    const kept = out.kept();
    port.postMessage({
      type: 'done',
      ...workbook.result(),
      stored: out.stored(),
      ...(kept ? { kept: kept.buffer as SharedArrayBuffer } : {}),
    } satisfies FromThread);
  } finally {
    await client.end().catch(() => undefined);
  }
}

function run(port: NonNullable<typeof parentPort>, init: ThreadInit): void {
  if (init.direct) {
    runDirect(port, init, init.direct).catch(fail);
    return;
  }
  const workbook = startWorkbook(init);
  forwardBytes(workbook.writer, port, () => port.postMessage({ type: 'done', ...workbook.result() } satisfies FromThread));

  const handle = async (message: ToThread): Promise<void> => {
    if (message.type === 'page') {
      await workbook.addPage(message.text);
      collectPastBufferBound();
      port.postMessage({ type: 'taken' } satisfies FromThread);
      return;
    }
    workbook.finish();
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
