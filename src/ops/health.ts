/**
 * No key needed: bind the API to a private address or filter these paths at the proxy if they must
 * not be public. /readyz also answers 503 once shutdown begins, so a load balancer stops sending.
 * /readyz is about this process alone (its database and Redis): a missing worker or a backlog shows
 * in /metrics (backlog.ts) and must never take an API out of a load balancer.
 */
import type { Express, Response } from 'express';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { DEFAULT_PREFIX } from '../jobs/index.ts';
import { backlogRefresher } from './backlog.ts';
import { refreshQueueDepth, registry, type CountableQueue } from './metrics.ts';
import { refreshWorkersAlive } from './process-registry.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** Each readiness probe gets this long before its dependency counts as down. */
export const READY_TIMEOUT_MS = 2000;

export type CheckState = 'ok' | 'down';

export interface OpsOptions {
  /** Per-check bound of /readyz (default READY_TIMEOUT_MS). */
  readyTimeoutMs?: number;
  /** BullMQ prefix of the queues whose depth /metrics reports (default the jobs' `capi`). */
  queuePrefix?: string;
  /** The queues whose depth /metrics reports (the jobs' `queueNames`; none when not given). */
  queueNames?: readonly string[];
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function probe(check: () => Promise<unknown>, ms: number): Promise<CheckState> {
  try {
    await within(check(), ms);
    return 'ok';
  } catch {
    return 'down';
  }
}

function unavailable(res: Response, message: string, details: Record<string, unknown>): void {
  res.status(503).setHeader('Retry-After', '5');
  res.json({ success: false, error: { code: 'service_unavailable', message, details } });
}

/** Mounts /healthz, /readyz and /metrics on `app` (before /api and the validator). */
export function registerOps(app: Express, deps: { prisma: ReadClient; redis: Redis; logger: Logger }, options: OpsOptions = {}): void {
  const readyTimeoutMs = options.readyTimeoutMs ?? READY_TIMEOUT_MS;
  const started = Date.now();

  app.get('/healthz', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json({ success: true, data: { status: 'ok', uptime_seconds: Math.floor((Date.now() - started) / 1000) } });
  });

  app.get('/readyz', async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    if (req.app.locals.draining === true) {
      unavailable(res, 'Shutting down: not accepting new work', { reason: 'shutting_down' });
      return;
    }
    const [database, redis] = await Promise.all([
      probe(() => deps.prisma.$queryRaw`SELECT 1`, readyTimeoutMs),
      probe(() => deps.redis.ping(), readyTimeoutMs),
    ]);
    const checks = { database, redis };
    if (database === 'ok' && redis === 'ok') {
      res.json({ success: true, data: { status: 'ready', checks } });
      return;
    }
    const down = Object.entries(checks).filter(([, s]) => s === 'down').map(([name]) => name);
    unavailable(res, `Not ready: ${down.join(' and ')} not answering`, { checks });
  });

  // BullMQ keeps a failed connection set-up (its version check timing out) as a permanent error, so
  // the check is skipped (the workers make it) and handles are made anew after a failed scrape.
  let queues: Array<Queue & CountableQueue> | undefined;
  const queuesOf = (): CountableQueue[] =>
    (queues ??= (options.queueNames ?? []).map((name) => {
      const q = new Queue(name, { connection: deps.redis, prefix: options.queuePrefix ?? DEFAULT_PREFIX, skipVersionCheck: true });
      q.on('error', (err) => deps.logger.debug({ err }, 'metrics queue error'));
      return q;
    }));

  const refreshBacklog = backlogRefresher(deps.prisma);
  app.get('/metrics', async (_req, res) => {
    const [depth, backlog, alive] = await Promise.all([refreshQueueDepth(queuesOf()), refreshBacklog(), refreshWorkersAlive(deps.prisma)]);
    if (!backlog) deps.logger.debug('backlog gauges unavailable for /metrics');
    if (!alive) deps.logger.debug('workers_alive unavailable for /metrics');
    if (!depth) {
      deps.logger.debug('queue depth unavailable for /metrics');
      const stale = queues ?? [];
      queues = undefined;
      // Shared connection: close() leaves the request Redis client open.
      for (const q of stale) void q.close().catch(() => undefined);
    }
    res.setHeader('Cache-Control', 'no-store');
    res.type(registry.contentType).send(await registry.metrics());
  });
}
