import type { RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { openCredentials, type Credentials } from './db/credentials.ts';
import { loadCatalogue, type Catalogue } from './services/plans.ts';
import { lazy } from './shared/lazy.ts';
import type { Config } from './config.ts';
import type { Contract } from './http/contract.ts';
import type { Jobs } from './background.ts';
import type { ConsoleSessions } from './auth/console-sessions.ts';
import type { Logger } from './logger.ts';
import type { ServiceReadCache } from './services/read-cache.ts';
import type { ReadChunk } from './reports/index.ts';
import type { ResolveAll } from './webhooks/destination.ts';
import type { ReadClient } from './shared/db-errors.ts';

/**
 * What the HTTP app is built from. Everything with a lifetime (database, Redis, queues) is made
 * and closed by src/main; the app only uses it, so tests can build many apps on one set of parts.
 */
export interface AppDeps {
  config: Config;
  logger: Logger;
  contract: Contract;
  prisma: ReadClient;
  /** Reads a stored workbook's chunks (src/reports/workbook/store.ts, openChunkReader): binary through node-postgres where the database has a pool. */
  readChunk: ReadChunk;
  /** Fail-fast Redis client for work inside requests (rate limits). */
  redis: Redis;
  /** Authentication, IP whitelist, rate limit, scope check and API logging, in that order. */
  gate: RequestHandler;
  /** The console sessions the gate reads (createGate's), read the same way by the console's pages. */
  consoleSessions: ConsoleSessions;
  /** Writes the gate's buffered API log entries now (before a read of the request logs). */
  flushApiLog: () => Promise<void>;
  /** The background jobs on BullMQ (src/background.ts): `queues` takes a report's build, `sendMail` an e-mail. */
  jobs: Jobs;
  /** Service list pages and counts held briefly, dropped on every change (src/services/read-cache.ts). */
  serviceReads: ServiceReadCache;
  /** The service-password cipher (CREDENTIALS_KEY or $DATA_DIR/credentials.key), opened on first use. */
  credentials: () => Promise<Credentials>;
  /** The plan catalogue (reference data), read on first use. */
  catalogue: () => Promise<Catalogue>;
  /** DNS for the registration check of webhook URLs (default dns.lookup, bounded); tests answer names of their own. */
  resolveHost?: ResolveAll;
}

/** The parts of AppDeps that are loaded once on first use: the same for every process that serves the API. */
export function loadedOnce(config: Config, prisma: ReadClient): Pick<AppDeps, 'credentials' | 'catalogue'> {
  return {
    credentials: lazy(() => openCredentials({ envKey: config.credentialsKey, dataDir: config.dataDir })),
    catalogue: lazy(() => loadCatalogue(prisma)),
  };
}
