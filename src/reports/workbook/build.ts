import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Worker } from 'node:worker_threads';
import { siblingModule, startThread } from '../../shared/threads.ts';
import type { FromThread, StoreTarget, ThreadInit, ToThread } from './build-thread.ts';
// Imported for its effect: the main thread turns --expose-gc on before any build thread exists.
import './gc.ts';
import { pagesOf, type PageRow, type PageScope } from './pages.ts';
import { EXCEL_DATA_ROWS, type BuildFacts } from './writer.ts';
import { insertChunkWith, WorkbookWriter, type StoredWorkbook } from './store.ts';
import type { ReadClient } from '../../shared/db-errors.ts';

/**
 * A report build runs its per-row work (parsing, sheet XML, zipping) in a worker thread, because a
 * build is seconds of CPU and `npm start` runs the API in the same process. Its two modes, both here:
 * direct, where the thread reads the rows and stores the workbook through a connection of its own
 * (every server, which has PostgreSQL's or the embedded database's socket URL: src/reports/jobs.ts),
 * and relayed, where this side reads the pages and stores the bytes the thread hands back. Relayed
 * stays only because a process that opened PGlite itself without a socket (the tests, the CLI) has
 * no connection string to give the thread; bench/README.md has the measurements of both.
 */
export interface BuildOptions {
  /** Data rows per table sheet (Excel's limit by default; tests use a few). */
  rowsPerSheet?: number;
}

/**
 * The thread's heap: a young generation far smaller than V8's default, because everything a build
 * allocates dies within a page and a large nursery only adds to the process's RSS
 * (bench/README.md, "Report build profile"). BUILD_THREAD_YOUNG_MB overrides it, for the bench.
 */
function threadLimits(): { maxYoungGenerationSizeMb: number } {
  return { maxYoungGenerationSizeMb: Number(process.env.BUILD_THREAD_YOUNG_MB ?? 8) };
}

/** Pages handed to the thread and not yet taken: one being written, one waiting. */
const PAGES_IN_FLIGHT = 2;

export interface BuildResult<T> {
  rows: number;
  totals: T;
  sheets: number;
}

/** What a build reads and what its Summary states: plain data, handed to the thread as it is. */
export interface BuildInput {
  kind: ThreadInit['kind'];
  facts: BuildFacts;
  scope: PageScope;
}

/** The database a build reads and stores through. */
export interface BuildDatabase {
  prisma: ReadClient;
  /** A node-postgres connection string for the build thread's own connection; without it the build is relayed. */
  url?: string | undefined;
  queryTimeoutMs?: number | undefined;
}

/** A stored build: its counts, what was stored, and the workbook whole when it was no larger than `keepUpTo`. */
export interface StoredBuild<T> extends BuildResult<T> {
  stored: StoredWorkbook;
  kept: Buffer | undefined;
}

/** The page queries run through Prisma, on this thread. */
export function prismaPageQuery(prisma: ReadClient) {
  return (sql: string, params: unknown[]) => prisma.$queryRawUnsafe<PageRow[]>(sql, ...params);
}

/**
 * Builds the workbook `input` describes and stores it as `target`'s chunks (store.ts), in
 * the thread through its own connection when `db.url` is set, else relayed through this thread.
 * On failure the chunks written so far stay for the caller to discard.
 */
export async function storeWorkbook<T>(db: BuildDatabase, input: BuildInput, target: StoreTarget, options: BuildOptions = {}): Promise<StoredBuild<T>> {
  if (db.url) {
    const direct = { url: db.url, scope: input.scope, target, ...(db.queryTimeoutMs === undefined ? {} : { queryTimeoutMs: db.queryTimeoutMs }) };
    return buildInThread<T>({ kind: input.kind, facts: input.facts, rowsPerSheet: options.rowsPerSheet ?? EXCEL_DATA_ROWS, direct });
  }
  const out = new WorkbookWriter(insertChunkWith(db.prisma), target.runId, target.build, target.chunkBytes, target.keepUpTo);
  const result = await buildWorkbook<T>(input.kind, input.facts, pagesOf(input.scope, prismaPageQuery(db.prisma)), out, options);
  return { ...result, stored: out.stored(), kept: out.kept() };
}

/** A direct build: the thread does it all; this side waits for its end. The thread never outlives the call. */
async function buildInThread<T>(init: ThreadInit): Promise<StoredBuild<T>> {
  const worker = startThread(siblingModule(import.meta.url, 'build-thread'), { workerData: init, resourceLimits: threadLimits() });
  try {
    const done = await new Promise<Extract<FromThread, { type: 'done' }>>((resolve, reject) => {
      worker.on('message', (m: FromThread) => {
        if (m.type === 'done') resolve(m);
      });
      worker.on('error', reject);
      worker.on('exit', (code) => reject(new Error(`the report build thread stopped (exit code ${code})`)));
    });
    if (!done.stored) throw new Error('the report build thread stored no workbook');
    return { rows: done.rows, totals: done.totals as T, sheets: done.sheets, stored: done.stored, kept: done.kept ? Buffer.from(done.kept) : undefined };
  } finally {
    await worker.terminate();
  }
}

/** What the caller sees of a running build thread: its messages, its end, and a way to wait for either. */
function watch(worker: Worker, out: Writable) {
  const state = { inFlight: 0, result: undefined as BuildResult<unknown> | undefined, failure: undefined as Error | undefined };
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const fail = (err: Error) => {
    state.failure ??= err;
    notify();
  };
  worker.on('message', (m: FromThread) => {
    if (m.type === 'bytes') out.write(Buffer.from(m.data));
    else if (m.type === 'taken') state.inFlight -= 1;
    else state.result = { rows: m.rows, totals: m.totals, sheets: m.sheets };
    notify();
  });
  worker.on('error', fail);
  worker.on('exit', (code) => {
    if (!state.result) fail(new Error(`the report build thread stopped (exit code ${code})`));
  });
  out.on('error', fail);
  out.on('drain', notify);
  /** Resolves when `ready()` holds; rejects with the build's first error. */
  const until = async (ready: () => boolean): Promise<void> => {
    while (!state.failure && !ready()) await new Promise<void>((resolve) => (wake = resolve));
    if (state.failure) throw state.failure;
  };
  return { state, until, stop: () => out.off('drain', notify).off('error', fail) };
}

/**
 * Builds a workbook from `pages` (the report's query's page texts, in table order) into `out`, and
 * ends `out`; resolves once `out` has flushed. Backpressure both ways: a page goes to the thread
 * only while fewer than PAGES_IN_FLIGHT wait there and `out` takes more. On failure `out` is
 * destroyed with the error. The thread never outlives the call.
 */
export async function buildWorkbook<T>(
  kind: ThreadInit['kind'],
  facts: BuildFacts,
  pages: AsyncIterable<string>,
  out: Writable,
  options: BuildOptions = {},
): Promise<BuildResult<T>> {
  const init: ThreadInit = { kind, facts, rowsPerSheet: options.rowsPerSheet ?? EXCEL_DATA_ROWS };
  const worker = startThread(siblingModule(import.meta.url, 'build-thread'), { workerData: init, resourceLimits: threadLimits() });
  const { state, until, stop } = watch(worker, out);
  try {
    for await (const text of pages) {
      await until(() => state.inFlight < PAGES_IN_FLIGHT && !out.writableNeedDrain);
      state.inFlight += 1;
      worker.postMessage({ type: 'page', text } satisfies ToThread);
    }
    worker.postMessage({ type: 'end' } satisfies ToThread);
    await until(() => state.result !== undefined);
    const flushed = finished(out);
    out.end();
    await flushed;
    return state.result as BuildResult<T>;
  } catch (err) {
    // The caller learns of the error from this call; `out` is destroyed with it for its own clean-up.
    out.on('error', () => undefined);
    out.destroy(err as Error);
    throw err;
  } finally {
    stop();
    await worker.terminate();
  }
}
