/**
 * Shutdown order, each step bounded: /readyz 503 while still serving (SHUTDOWN_DELAY_MS, for load
 * balancers) → in-flight requests finish → buffered logs → job workers → database → redis-server.
 * Everything that still needs the database stops before it, and in role `all` the worker runs
 * through the drain, so a report accepted before the signal is still built and mailed.
 *
 * E-mails go AT LEAST ONCE: a recipient is marked `sent` only after the SMTP server accepted, so a
 * worker dying in between leaves a stalled BullMQ job another worker sends again. A duplicate is
 * possible; a silently lost e-mail is not.
 */
import http from 'node:http';
import https from 'node:https';
import express, { type Express } from 'express';
import { appLoaded, createApp } from '../app.ts';
import { createGate, gateSettings } from '../auth/gate.ts';
import { checkSetup, loadConfig, type Config, type Role } from '../config.ts';
import { openDatabase, type Database } from '../db/client.ts';
import { checkCredentialsKey, loadCredentialsKey } from '../db/credentials.ts';
import { startDatabaseProcess } from '../db/process.ts';
import { loadedOnce, type AppDeps } from '../deps.ts';
import { loadContract } from '../http/contract.ts';
import { useEntityTagSecret } from '../http/conditional.ts';
import { closeDataDir, protectDataDir } from '../shared/data-dir.ts';
import { requestId } from '../http/request-id.ts';
import { createJobs, type CreateJobsOptions } from '../background.ts';
import { createLogger, type Logger } from '../logger.ts';
import { registerOps } from '../ops/health.ts';
import { registerProcess, sharedSettingsOf } from '../ops/process-registry.ts';
import { requestRedis, startRedis, waitUntilReady, type RedisEndpoint } from '../redis.ts';
import { createServiceReadCache } from '../services/read-cache.ts';
import { openChunkReader } from '../reports/index.ts';
import { flushTracing, startTracing } from '../shared/tracing.ts';
import { listen, type ServerTimeouts } from './server.ts';

export type { Role };

export interface Runtime {
  config: Config;
  logger: Logger;
  database: Database;
  redisEndpoint: RedisEndpoint;
  /** The HTTP(S) server (roles `all` and `api`). */
  server?: http.Server | https.Server;
  url?: string;
  /**
   * Stops accepting, finishes in-flight requests and running jobs, flushes logs, closes everything.
   * `preStopMs`: first answer `/readyz` 503 this long while still serving (SIGTERM: SHUTDOWN_DELAY_MS).
   */
  shutdown(reason: string, options?: { preStopMs?: number }): Promise<void>;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  /** Bound on draining in-flight requests before connections are cut (default REPORT_WAIT_MS + 5 s). */
  shutdownTimeoutMs?: number;
  /** Header/body/keep-alive bounds of the HTTP server (tests shorten them). */
  serverTimeouts?: Partial<ServerTimeouts>;
  /** Where log lines go (default stdout); tests capture them. */
  logDestination?: NodeJS.WritableStream;
  /** How long the job workers may finish running jobs at shutdown (default src/jobs': 10 s). */
  jobsCloseTimeoutMs?: number;
  /** Open the embedded PGlite in this process instead of a child process (where one is unwanted). */
  embeddedDatabaseInProcess?: boolean;
}

/** The database of this role: the embedded one's process (npm start only: src/config.ts `checkSetup`), or DATABASE_URL. */
async function openRuntimeDatabase(config: Config, logger: Logger, env: NodeJS.ProcessEnv, options: StartOptions): Promise<Database> {
  const log = (message: string) => logger.debug({ component: 'migrate' }, message);
  if (!config.databaseUrl && !options.embeddedDatabaseInProcess) {
    return startDatabaseProcess({ dataDir: config.dataDir, logger, env, queryTimeoutMs: config.dbStatementTimeoutMs });
  }
  return openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, log, statementTimeoutMs: config.dbStatementTimeoutMs });
}

/**
 * A worker has no API port; with METRICS_PORT set it serves /healthz, /readyz and /metrics (its
 * e-mail counters live in this process) on that port, on HOST. Returns its closer.
 */
async function serveWorkerMetrics(
  port: string,
  config: Config,
  parts: { prisma: Database['prisma']; redis: ReturnType<typeof requestRedis>; logger: Logger; queueNames: readonly string[] },
  serverTimeouts: StartOptions['serverTimeouts'],
): Promise<() => Promise<void>> {
  const ops = express();
  ops.disable('x-powered-by');
  ops.use(requestId);
  registerOps(ops, parts, { queueNames: parts.queueNames });
  const listening = await listen(ops, { port: Number(port), host: config.host, tlsCertFile: undefined, tlsKeyFile: undefined }, serverTimeouts);
  parts.logger.info({ url: listening.url }, 'worker metrics listening');
  return async () => {
    ops.locals.draining = true;
    await listening.close(1000);
  };
}

/** Connections stay alive meanwhile: closing them would only bring their clients back on new ones. */
async function drainThenClose(
  app: Express,
  listening: Awaited<ReturnType<typeof listen>>,
  logger: Logger,
  preStopMs: number,
  drainBoundMs: number,
): Promise<void> {
  app.locals.draining = true;
  if (preStopMs > 0) {
    logger.info({ preStopMs }, 'readiness withdrawn; still serving until the pre-stop delay ends');
    await new Promise((resolve) => setTimeout(resolve, preStopMs));
  }
  const cut = await listening.close(drainBoundMs);
  if (cut > 0) logger.warn({ connections: cut, boundMs: drainBoundMs }, 'in-flight requests cut at the shutdown bound');
  else logger.info('http server drained');
}

/** The API's parts around the process's database, Redis and jobs; each part with a lifetime adds its closer. */
function appDeps(
  base: Pick<AppDeps, 'config' | 'logger' | 'contract' | 'prisma' | 'redis' | 'jobs' | 'readChunk'>,
  closers: Array<[string, () => Promise<void>]>,
): AppDeps {
  const { config, logger, prisma, redis } = base;
  const gate = createGate({ prisma, redis, logger, ...gateSettings(config) });
  // Flushed after the server has stopped, so the entries of the last requests are kept.
  closers.push(['api log', () => gate.apiLog.close()]);
  const serviceReads = createServiceReadCache({ ttlMs: config.servicesCacheMs, redis, logger });
  closers.push(['services cache', () => serviceReads.close()]);
  return { ...base, gate: gate.gate, consoleSessions: gate.consoleSessions, flushApiLog: gate.apiLog.flush, serviceReads, ...loadedOnce(config, prisma) };
}

/** Closed after the HTTP server (closers run in reverse), so workbook reads in flight finish. */
async function startJobs(
  role: Role,
  parts: Pick<CreateJobsOptions, 'redisEndpoint' | 'config' | 'logger'> & { database: Database },
  options: StartOptions,
  closers: Array<[string, () => Promise<void>]>,
) {
  const { database, config } = parts;
  const workbookReads = openChunkReader({ prisma: database.prisma, url: database.databaseUrl, queryTimeoutMs: config.dbStatementTimeoutMs });
  closers.push(['workbook reads', () => workbookReads.close()]);
  const jobs = createJobs({
    ...parts,
    prisma: database.prisma,
    chunkReader: workbookReads,
    mode: role === 'all' ? 'both' : role === 'api' ? 'producer' : 'worker',
    ...(options.jobsCloseTimeoutMs !== undefined ? { closeTimeoutMs: options.jobsCloseTimeoutMs } : {}),
  });
  closers.push(['jobs', () => jobs.close()]);
  if (role !== 'api') await jobs.startWorkers();
  return { jobs, workbookReads };
}

/**
 * The credentials key (CREDENTIALS_KEY, or the key file under DATA_DIR) against the fingerprint
 * the database recorded at its first start (recorded now when there is none): a process with
 * another key is refused before it serves or takes a job.
 */
async function checkKeyAgainstDatabase(config: Config, database: Database, logger: Logger): Promise<void> {
  const source = { envKey: config.credentialsKey, dataDir: config.dataDir };
  const key = await loadCredentialsKey(source);
  const outcome = await checkCredentialsKey(database.prisma, key, source);
  // The key every process shares: so are the ETags made under a key derived from it.
  useEntityTagSecret(key);
  logger.info({ component: 'credentials' }, outcome === 'recorded' ? 'credentials key fingerprint recorded in the database' : 'credentials key matches the database');
}

/** Starts the API, the job worker, or both in one process, on the settings of the README's "Configuration". */
export async function startRuntime(role: Role, options: StartOptions = {}): Promise<Runtime> {
  const env = options.env ?? process.env;
  const config = loadConfig(env);
  // The walk below it runs once, after the database is open (a cluster PGlite unpacks is in it).
  closeDataDir(config.dataDir);
  const logger = createLogger(config.logLevel, options.logDestination);
  checkSetup(role, config, env);
  const closers: Array<[string, () => Promise<void>]> = [];
  let preStopMs = 0;
  const closeAll = async (): Promise<void> => {
    for (const [name, close] of closers.reverse()) {
      await close().catch((err: unknown) => logger.error({ err }, `closing ${name} failed`));
    }
    closers.length = 0;
  };
  // Parsed first: it is seconds of synchronous work on a busy machine, and Redis clients made
  // before it would see their first commands time out while the event loop is blocked.
  const contract = role === 'worker' ? undefined : loadContract();
  try {
    // Before the queues and the app are made: they take their spans' hooks when made. Flushed last.
    if (await startTracing(role, env)) closers.push(['tracing', flushTracing]);
    const redisEndpoint = await startRedis(config.redisUrl);
    closers.push(['redis', () => redisEndpoint.stop()]);
    const database = await openRuntimeDatabase(config, logger, env, options);
    closers.push(['database', () => database.close()]);
    // PGlite unpacks a new cluster with its own file modes (0666): narrowed once it is set up.
    void protectDataDir(config.dataDir);
    if (database.appliedMigrations.length > 0) {
      logger.info({ migrations: database.appliedMigrations }, 'applied database migrations');
    }
    await checkKeyAgainstDatabase(config, database, logger);
    // Before it takes a job or listens: a process that disagrees with a live one never starts.
    const registration = await registerProcess(database.prisma, { role, settings: sharedSettingsOf(role, config, redisEndpoint.description), logger });
    closers.push(['process registry', () => registration.close()]);

    const { jobs, workbookReads } = await startJobs(role, { redisEndpoint, database, config, logger }, options, closers);

    const runtime: Runtime = {
      config,
      logger,
      database,
      redisEndpoint,
      shutdown: async (reason, shutdownOptions = {}) => {
        logger.info({ reason }, 'shutting down');
        preStopMs = shutdownOptions.preStopMs ?? 0;
        await closeAll();
        logger.info('stopped');
      },
    };
    const drainBoundMs = options.shutdownTimeoutMs ?? config.reportWaitMs + 5000;
    const redis = requestRedis(redisEndpoint);
    redis.on('error', (err) => logger.debug({ err }, 'request redis error'));
    await waitUntilReady(redis);
    closers.push(['request redis', async () => { redis.disconnect(); }]);

    if (role === 'worker') {
      const metricsPort = env.METRICS_PORT?.trim();
      if (metricsPort) {
        closers.push(['metrics server', await serveWorkerMetrics(metricsPort, config, { prisma: database.prisma, redis, logger, queueNames: jobs.queueNames }, options.serverTimeouts)]);
      }
      logger.info({ redis: redisEndpoint.description, database: database.kind }, 'job worker running');
      return runtime;
    }

    const app = createApp(appDeps({ config, logger, contract: contract!, prisma: database.prisma, redis, jobs, readChunk: workbookReads.read }, closers));
    await appLoaded(app);
    const listening = await listen(app, config, options.serverTimeouts);
    const { server, url } = listening;
    closers.push(['http server', () => drainThenClose(app, listening, logger, preStopMs, drainBoundMs)]);
    logger.info({ url, role, redis: redisEndpoint.description, database: database.kind, docs: `${url}/docs` }, 'Client API v1 listening');
    return { ...runtime, server, url };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** Entry point of the three npm start scripts: start, and stop cleanly on SIGTERM/SIGINT. */
export async function main(role: Role): Promise<void> {
  let runtime: Runtime | undefined;
  let stopping = false;
  let signalWhileStarting: string | undefined;
  const stop = (signal: string) => {
    // Handlers are in place before start-up, so a signal that comes as the server announces it is
    // ready is not the default one that kills the process: it stops the server once started.
    if (!runtime) {
      if (signalWhileStarting) process.exit(1);
      signalWhileStarting = signal;
      return;
    }
    if (stopping) {
      runtime.logger.warn({ signal }, 'second signal: exiting without finishing the shutdown');
      process.exit(1);
    }
    stopping = true;
    // SIGTERM comes from an orchestrator (withdraw readiness first); SIGINT from a terminal (stop now).
    runtime.shutdown(signal, { preStopMs: signal === 'SIGTERM' ? runtime.config.shutdownDelayMs : 0 }).then(
      () => process.exit(0),
      (err: unknown) => {
        runtime!.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    runtime = await startRuntime(role);
  } catch (err) {
    console.error(`client-api-v1: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
  if (signalWhileStarting) stop(signalWhileStarting);
}
