import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** On Node 20 tsx's loader does not reach worker threads, so a `.ts` thread registers it first. */
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
 * So background threads (report builds, e-mail) yield the cores to requests. Only Linux gives a
 * thread its own nice value; elsewhere it would lower the whole process, the API with it.
 */
export function lowerThreadPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    os.setPriority(BACKGROUND_NICE);
  } catch {
    // Not permitted here: no harm, only no precedence for requests.
  }
}
