import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Worker } from 'node:worker_threads';
import { siblingModule, startThread } from '../shared/threads.ts';
import type { FromThread, ThreadInit, ToThread } from './build-thread.ts';
import { EXCEL_DATA_ROWS, type BuildFacts } from './workbook.ts';

/**
 * A report build runs its per-row work (parsing the rows, writing the sheet XML, zipping) in a
 * worker thread, because a build is seconds of CPU and `npm start` runs the API in the same process:
 * on the API's thread it held every other broker's requests. The database stays on this thread
 * (the embedded PGlite is one in-process session a thread cannot open again), so this side only
 * reads pages of rows and hands them over, and writes the bytes that come back into `out`.
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
