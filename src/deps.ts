import type { RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import type { PrismaClient } from '../generated/prisma/client.ts';
import type { Config } from './config.ts';
import type { Contract } from './http/contract.ts';
import type { Jobs } from './jobs/index.ts';
import type { Logger } from './logger.ts';
import type { ServiceReadCache } from './services/read-cache.ts';

/**
 * What the HTTP app is built from. Everything with a lifetime (database, Redis, queues) is made
 * and closed by src/main; the app only uses it, so tests can build many apps on one set of parts.
 */
export interface AppDeps {
  config: Config;
  logger: Logger;
  contract: Contract;
  prisma: PrismaClient;
  /** Fail-fast Redis client for work inside requests (rate limits). */
  redis: Redis;
  /** Authentication, IP whitelist, rate limit, scope check and API logging, in that order. */
  gate: RequestHandler;
  /** Reports and e-mail on BullMQ (src/jobs): `runReport` waits for a report's outcome, `sendMail` enqueues. */
  jobs: Jobs;
  /** Service list pages and counts held briefly, dropped on every change (src/services/read-cache.ts). */
  serviceReads: ServiceReadCache;
}
