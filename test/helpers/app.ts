import dns from 'node:dns';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import { appLoaded, createApp, type AppOptions } from '../../src/app.ts';
import { createGate, gateSettings } from '../../src/auth/gate.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { loadedOnce, type AppDeps } from '../../src/deps.ts';
import { loadContract } from '../../src/http/contract.ts';
import { createJobs, type Jobs } from '../../src/background.ts';
import { createLogger } from '../../src/logger.ts';
import { requestRedis, startPrivateRedis, waitUntilReady, type RedisEndpoint } from '../../src/redis.ts';
import { createServiceReadCache } from '../../src/services/read-cache.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { openChunkReader } from '../../src/reports/workbook/store.ts';
import type { Database } from '../../src/db/client.ts';
import type { ResolveAll } from '../../src/webhooks/destination.ts';

export interface TestApp {
  app: Express;
  deps: AppDeps;
  /** The whole client, for the tests' own rows (test/helpers/db.ts). */
  prisma: TestDatabase['prisma'];
  redisEndpoint: RedisEndpoint;
  /** The database (its kind and connection string: report builds run as in a server, src/reports/jobs.ts). */
  database: Database;
  jobs: Jobs;
  dataDir: string;
  /** Writes buffered API log entries and last-used times now. */
  flushApiLog(): Promise<void>;
  /** Another app on the same database and Redis (as a second API process), once it has loaded its contract. */
  another(): Promise<Express>;
  close(): Promise<void>;
}

/**
 * The registration check's DNS in tests (there is none beyond this machine): a name under `.example`
 * (RFC 2606, never delegated) resolves to a public documentation-era address, any other name as
 * this machine resolves it (localhost, /etc/hosts) or not at all.
 */
export const exampleNames: ResolveAll = (hostname, options, callback) => {
  if (/\.example$/i.test(hostname)) return callback(null, [{ address: '93.184.216.34', family: 4 }]);
  dns.lookup(hostname, options, callback);
};

export interface TestAppOptions {
  /** DNS of webhook URL registration (default exampleNames). */
  resolveHost?: ResolveAll;
  /** Run the job workers in this process (default true). */
  workers?: boolean;
  /** Passed to createApp (e.g. a module of the test's own). */
  app?: AppOptions;
}

/**
 * One app on a database and a Redis of its own (in-memory PGlite, or a fresh PostgreSQL database
 * when DATABASE_URL is set; a private redis-server), with response validation on.
 */
export async function createTestApp(overrides: Partial<Config> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-test-'));
  const config: Config = {
    ...loadConfig({ NODE_ENV: 'test', DATA_DIR: dataDir }),
    validateResponses: true,
    // Retries of a transient SMTP failure at test speed; the reconciler only where a test asks for it
    // (test files share one database between several job instances with queues of their own).
    mailRetryDelayMs: 50,
    reportReconcileMs: 600_000,
    ...overrides,
  };
  const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  // Whatever was started is stopped again if a later step fails, so a broken set-up fails fast
  // instead of leaving a test file waiting on open handles.
  const cleanups: Array<() => Promise<void> | void> = [() => rmSync(dataDir, { recursive: true, force: true })];
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await Promise.resolve(step()).catch(() => {});
    cleanups.length = 0;
  };
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let redisEndpoint: RedisEndpoint;
  let redis: ReturnType<typeof requestRedis>;
  let jobs: Jobs;
  let contract: ReturnType<typeof loadContract>;
  try {
    db = await createTestDatabase();
    cleanups.push(() => db.drop());
    redisEndpoint = await startPrivateRedis();
    cleanups.push(() => redisEndpoint.stop());
    redis = requestRedis(redisEndpoint);
    // As the runtime does (src/main/runtime.ts): tests that stop Redis would otherwise print
    // ioredis's "Unhandled error event" for each reconnect attempt.
    redis.on('error', (err) => logger.debug({ err }, 'request redis error'));
    cleanups.push(() => redis.disconnect());
    await waitUntilReady(redis);
    contract = loadContract();
    jobs = createJobs({ redisEndpoint, prisma: db.prisma, database: db.db, config, logger, mode: 'both' });
    cleanups.push(() => jobs.close());
    if (options.workers !== false) await jobs.startWorkers();
  } catch (err) {
    await cleanup();
    throw err;
  }
  const downloads = openChunkReader({ prisma: db.prisma, url: db.databaseUrl });
  cleanups.push(() => downloads.close());
  const gates: Array<ReturnType<typeof createGate>> = [];
  const build = (): { app: Express; deps: AppDeps } => {
    const gate = createGate({ prisma: db.prisma, redis, logger, ...gateSettings(config) });
    gates.push(gate);
    const serviceReads = createServiceReadCache({ ttlMs: config.servicesCacheMs, redis, logger });
    cleanups.push(() => serviceReads.close());
    const deps: AppDeps = {
      config, logger, contract, prisma: db.prisma, readChunk: downloads.read, redis, gate: gate.gate, consoleSessions: gate.consoleSessions, flushApiLog: gate.apiLog.flush, jobs, serviceReads,
      resolveHost: options.resolveHost ?? exampleNames, ...loadedOnce(config, db.prisma),
    };
    return { app: createApp(deps, options.app), deps };
  };
  const { app, deps } = build();
  // The contract is loaded before a test starts, as a server loads it before it listens.
  await appLoaded(app).catch(async (err: unknown) => {
    await cleanup();
    throw err;
  });
  return {
    app,
    deps,
    prisma: db.prisma,
    redisEndpoint,
    database: db.db,
    jobs,
    dataDir,
    flushApiLog: async () => {
      for (const g of gates) await g.apiLog.flush();
    },
    another: async () => {
      const { app: other } = build();
      await appLoaded(other);
      return other;
    },
    close: async () => {
      for (const g of gates) await g.apiLog.close();
      await cleanup();
    },
  };
}
