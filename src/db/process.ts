/**
 * The embedded PGlite in a child process, reached over its unix socket as PostgreSQL would be: its
 * WASM memory never shrinks and its queries would otherwise run on the API's event loop
 * (bench/README.md). The child exits with its parent (the IPC channel closes), is restarted with a
 * back-off when it dies, and ignores SIGINT/SIGTERM: the parent stops it last, after draining
 * requests and jobs that still need the database.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config.ts';
import { createLogger, type Logger } from '../logger.ts';
import { connectPGliteSocket, serveEmbeddedDatabase, type Database, type EmbeddedDatabaseServer } from './client.ts';

type ToParent = { type: 'ready'; migrations: string[] } | { type: 'set-up'; migrations: string[] } | { type: 'failed'; error: string };
type ToChild = { type: 'stop' };

/** The child's entry point: src/main/database.ts under tsx, dist/src/main/database.js when compiled. */
const ENTRY = fileURLToPath(new URL(`../main/database${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));

export interface DatabaseProcessOptions {
  dataDir: string;
  logger: Logger;
  /** Environment of the child (default process.env); DATA_DIR is set from `dataDir`. */
  env?: NodeJS.ProcessEnv;
  /** node-postgres pool size of this process (default 10). */
  poolMax?: number;
  /** Bound on each query the server sends through the socket (DB_STATEMENT_TIMEOUT_MS). */
  queryTimeoutMs?: number;
  /** How long the child may take to open and migrate (default 120 s). */
  startTimeoutMs?: number;
  /** First restart delay after the child died (default 1 s; doubles up to 30 s). */
  restartDelayMs?: number;
  /** How long the child may take to stop before it is killed (default 10 s). */
  stopTimeoutMs?: number;
}

export interface DatabaseProcess extends Database {
  /** The running child's pid (undefined between a crash and its restart). */
  childPid(): number | undefined;
}

/** One child process: it serves (`child`), or it set the cluster up and exited (`setUp`). */
async function spawnDatabaseChild(
  env: NodeJS.ProcessEnv,
  startTimeoutMs: number,
): Promise<{ child: ChildProcess; migrations: string[] } | { setUp: string[] }> {
  // A small young generation: this process only passes rows through, and its RSS counts against the
  // report's memory goal.
  const execArgv = [...process.execArgv.filter((a) => !a.startsWith('--max-semi-space-size')), '--max-semi-space-size=2'];
  const proc = fork(ENTRY, [], { env, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'json' });
  try {
    const answer = await new Promise<ToParent & { type: 'ready' | 'set-up' }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the embedded database process did not start within ${startTimeoutMs} ms`)), startTimeoutMs);
      const done = () => {
        clearTimeout(timer);
        proc.off('message', onMessage);
        proc.off('exit', onExit);
        proc.off('error', onError);
      };
      const onMessage = (m: ToParent) => {
        done();
        if (m.type === 'failed') reject(new Error(m.error));
        else resolve(m);
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        done();
        reject(new Error(`the embedded database process exited (${signal ?? `code ${code}`}) before it was ready`));
      };
      const onError = (err: Error) => {
        done();
        reject(err);
      };
      proc.on('message', onMessage);
      proc.on('exit', onExit);
      proc.on('error', onError);
    });
    if (answer.type === 'ready') return { child: proc, migrations: answer.migrations };
    await new Promise<void>((resolve) => (proc.exitCode !== null || proc.signalCode !== null ? resolve() : proc.once('exit', () => resolve())));
    return { setUp: answer.migrations };
  } catch (err) {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    throw err;
  }
}

/** Asks the child to stop, and kills it when it has not within `timeoutMs`. */
async function stopDatabaseChild(proc: ChildProcess, log: Logger, timeoutMs: number): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  if (proc.connected) proc.send({ type: 'stop' } satisfies ToChild, () => undefined);
  else proc.kill('SIGKILL');
  let timer: NodeJS.Timeout | undefined;
  const killed = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      log.warn('the embedded database process did not stop in time; killing it');
      proc.kill('SIGKILL');
      resolve();
    }, timeoutMs);
  });
  await Promise.race([exited, killed]);
  clearTimeout(timer);
  await exited;
}

/** A child that serves; when one had to create the cluster or migrate first, it exits and the next one serves. */
async function spawnServingChild(env: NodeJS.ProcessEnv, startTimeoutMs: number, log: Logger): Promise<{ child: ChildProcess; migrations: string[] }> {
  const first = await spawnDatabaseChild(env, startTimeoutMs);
  if ('child' in first) return first;
  log.info({ migrations: first.setUp }, 'embedded database set up; reopening it in a fresh process');
  const second = await spawnDatabaseChild(env, startTimeoutMs);
  if ('child' in second) return { child: second.child, migrations: [...first.setUp, ...second.migrations] };
  throw new Error('the embedded database process asked to be reopened twice');
}

export async function startDatabaseProcess(options: DatabaseProcessOptions): Promise<DatabaseProcess> {
  const log = options.logger.child({ component: 'database-process' });
  const env = { ...(options.env ?? process.env), DATA_DIR: options.dataDir };
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  const firstDelay = options.restartDelayMs ?? 1000;
  let child: ChildProcess | undefined;
  let stopping = false;
  let restartTimer: NodeJS.Timeout | undefined;
  let delay = firstDelay;

  const spawnChild = () => spawnServingChild(env, startTimeoutMs, log);

  const watch = (proc: ChildProcess) => {
    const upSince = Date.now();
    proc.once('exit', (code, signal) => {
      if (child === proc) child = undefined;
      if (stopping) return;
      // A child that ran a while before dying starts again quickly; one that keeps dying backs off.
      if (Date.now() - upSince > 60_000) delay = firstDelay;
      log.error({ code, signal, restartInMs: delay }, 'the embedded database process exited; restarting it');
      scheduleRestart();
    });
  };

  const scheduleRestart = () => {
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (stopping) return;
      spawnChild().then(
        ({ child: proc }) => {
          if (stopping) {
            stopChild(proc).catch(() => undefined);
            return;
          }
          child = proc;
          watch(proc);
          log.warn({ pid: proc.pid }, 'the embedded database process is serving again');
        },
        (err: unknown) => {
          log.error({ err }, 'the embedded database process could not be restarted');
          delay = Math.min(delay * 2, 30_000);
          scheduleRestart();
        },
      );
    }, delay);
    restartTimer.unref();
    delay = Math.min(delay * 2, 30_000);
  };

  const stopChild = (proc: ChildProcess) => stopDatabaseChild(proc, log, options.stopTimeoutMs ?? 10_000);

  const first = await spawnChild();
  child = first.child;
  watch(first.child);
  log.info({ pid: first.child.pid }, 'embedded database process serving');
  const connection = connectPGliteSocket(options.dataDir, options.poolMax ?? 10, options.queryTimeoutMs);
  let closing: Promise<void> | undefined;
  return {
    ...connection,
    appliedMigrations: first.migrations,
    childPid: () => child?.pid,
    close: () =>
      (closing ??= (async () => {
        stopping = true;
        clearTimeout(restartTimer);
        try {
          await connection.close();
        } finally {
          if (child) await stopChild(child);
        }
      })()),
  };
}

/** The child's side (src/main/database.ts): serve until the parent says stop or is gone. */
export async function runDatabaseProcess(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = loadConfig(env);
  const logger = createLogger(config.logLevel).child({ component: 'database' });
  const send = process.send?.bind(process);
  if (!send) {
    console.error('client-api-v1: the database process is started by npm start, not by hand');
    process.exit(1);
  }
  // The parent decides when the database may go: it still needs it while it drains.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => logger.debug({ signal }, 'signal ignored: the server stops this process'));
  let server: EmbeddedDatabaseServer;
  try {
    const served = await serveEmbeddedDatabase({
      dataDir: config.dataDir,
      log: (message) => logger.debug({ component: 'migrate' }, message),
      reopenAfterSetUp: true,
    });
    if ('setUp' in served) {
      send({ type: 'set-up', migrations: served.setUp } satisfies ToParent, () => process.exit(0));
      return;
    }
    server = served;
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    send({ type: 'failed', error } satisfies ToParent, () => process.exit(1));
    return;
  }
  let stopped = false;
  const stop = (reason: string) => {
    if (stopped) return;
    stopped = true;
    logger.info({ reason }, 'closing the embedded database');
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'closing the embedded database failed');
        process.exit(1);
      },
    );
  };
  process.on('message', (m: ToChild) => {
    if (m?.type === 'stop') stop('the server asked');
  });
  process.on('disconnect', () => stop('the server process is gone'));
  send({ type: 'ready', migrations: server.appliedMigrations } satisfies ToParent);
  if (!process.connected) stop('the server process is gone');
}
