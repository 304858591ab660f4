import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts a worker thread from `file`, a module named by the caller's own extension (`.ts` under
 * tsx, `.js` from dist/). On Node 20 tsx's loader does not reach worker threads, so a `.ts` thread
 * registers it before it loads its TypeScript.
 */
export function startThread(file: URL, options: WorkerOptions): Worker {
  if (path.extname(fileURLToPath(file)) !== '.ts') return new Worker(file, options);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const code = `import(${tsx}).then(({ register }) => { register(); return import(${JSON.stringify(file.href)}); })`;
  return new Worker(code, { ...options, eval: true });
}

/** `./name.ts` or `./name.js` beside `from` (an `import.meta.url`), by `from`'s own extension. */
export function siblingModule(from: string, name: string): URL {
  return new URL(`./${name}${path.extname(fileURLToPath(from))}`, from);
}

const BACKGROUND_NICE = 10;

/**
 * Called inside a worker thread doing background work (report builds, e-mail encoding): below the
 * API's priority. On Linux a thread has a nice value of its own, so this lowers only the calling
 * thread, and while background work keeps the cores busy other brokers' requests are served first.
 * Elsewhere (macOS) the same call would lower the whole process, the API with it, so it is skipped;
 * where it is not permitted (a container that forbids it) the work runs as it is.
 */
export function lowerThreadPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    os.setPriority(BACKGROUND_NICE);
  } catch {
    // Not permitted here: no harm, only no precedence for requests.
  }
}
