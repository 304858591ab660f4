/**
 * The one place the server asks for a full garbage collection: the build thread once its buffers
 * pass a bound (build-thread.ts), and the API after a workbook's download (delivery/downloads.ts).
 * A workbook's short-lived buffers outlive the young generation, and V8 frees them only at its next
 * full collection: that slack, not live data, made most of a report's peak RSS (bench/README.md).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isMainThread } from 'node:worker_threads';

/**
 * V8's flags are the process's, not a thread's: when each build thread switched --expose-gc on and
 * off again, one thread's "off" could fall between another's "on" and its taking of `gc` (issue 45:
 * `ReferenceError: gc is not defined`). So only the main thread switches it, once, and leaves it
 * on, as `node --expose-gc` would (which a Worker's execArgv refuses): every thread made after
 * this module's import (build.ts imports it) has `gc` as a global. Node's own main context was
 * made before, so the main thread takes `gc` from a new context and keeps no global `gc`.
 */
function takeGc(): (() => void) | undefined {
  const global = (globalThis as { gc?: () => void }).gc;
  if (global) return global;
  if (!isMainThread) return undefined;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

const gc = takeGc();

/** True where a collection can be asked for (every thread made after the main thread loaded this module). */
export const canCollect = gc !== undefined;

/** A full collection; nothing in a thread made before the main thread loaded this module. */
export function collectGarbage(): void {
  gc?.();
}
