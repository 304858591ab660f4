/**
 * The process-wide last resort (issue 45 item 4): an uncaught exception or unhandled rejection
 * leaves the process in a state nothing can vouch for, so it is logged with its stack, counted,
 * and the process exits with EXIT_UNCAUGHT for its supervisor to restart (docs/operations.md).
 * The count outlives the process in DATA_DIR, since the process that counts it never serves
 * another scrape: the next process of the role starts its counter from the file.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLogger, type Logger } from '../logger.ts';
import { uncaughtExceptions } from './metrics.ts';

/** EX_SOFTWARE of sysexits.h: not a refused start-up (1), not a signal. */
export const EXIT_UNCAUGHT = 70;

/** How long the log gets to flush before the process exits anyway. */
export const FLUSH_BOUND_MS = 1000;

interface CountFile {
  count: number;
  last?: { at: string; message: string };
}

/** The file that carries a role's count across restarts. */
export function countFileOf(dataDir: string, role: string): string {
  return path.join(dataDir, `uncaught-exceptions-${role}.json`);
}

function readCount(file: string): number {
  try {
    const { count } = JSON.parse(readFileSync(file, 'utf8')) as CountFile;
    return Number.isSafeInteger(count) && count > 0 ? count : 0;
  } catch {
    return 0; // no file yet, or one that cannot be read: counted from zero
  }
}

function writeCount(file: string, content: CountFile): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}`;
  writeFileSync(temporary, JSON.stringify(content), { mode: 0o600 });
  renameSync(temporary, file);
}

export interface LastResortOptions {
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** Ends the process (tests replace it). */
  exit?: (code: number) => void;
}

/** Installs the handler once per process, for `role` (the entry point's: api, worker, all). */
export function exitOnUncaught(role: string, options: LastResortOptions = {}): void {
  const env = options.env ?? process.env;
  const dataDir = path.resolve(env.DATA_DIR?.trim() || './var');
  const file = countFileOf(dataDir, role);
  // Its own logger, whatever LOG_LEVEL says (even `silent`): this line is the one that must be seen.
  const logger = options.logger ?? createLogger('error');
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let count = readCount(file);
  uncaughtExceptions.inc(count);
  let crashing = false;
  // Node reports an unhandled rejection here too (its default --unhandled-rejections=throw), with origin 'unhandledRejection'.
  process.on('uncaughtException', (err, origin) => {
    if (crashing) return; // a second one while flushing: the exit is already under way
    crashing = true;
    count += 1;
    uncaughtExceptions.inc();
    const message = err instanceof Error ? err.message : String(err);
    try {
      writeCount(file, { count, last: { at: new Date().toISOString(), message: message.slice(0, 500) } });
    } catch (writeErr) {
      logger.error({ err: writeErr, file }, 'could not record the uncaught exception count');
    }
    logger.fatal({ err, origin, role, uncaughtExceptions: count, exitCode: EXIT_UNCAUGHT }, 'uncaught exception: exiting for the supervisor to restart the process');
    // Whatever ends the process meanwhile ends it as a failure.
    process.exitCode = EXIT_UNCAUGHT;
    const timer = setTimeout(() => exit(EXIT_UNCAUGHT), FLUSH_BOUND_MS);
    logger.flush(() => {
      clearTimeout(timer);
      exit(EXIT_UNCAUGHT);
    });
  });
}
