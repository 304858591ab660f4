/**
 * Each worker process's heartbeat: a Redis key with a short expiry, renewed every second while the
 * process runs. Its webhook leases name the process, so a worker whose key has gone missing can have
 * its leases released long before they lapse (src/webhooks/dispatcher.ts decides when).
 */
import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../logger.ts';

/** How often the key is renewed. */
export const HEARTBEAT_MS = 1000;
/** The key's expiry: a few missed renewals (a busy event loop, a slow Redis) before it is gone. */
export const HEARTBEAT_TTL_MS = 3000;

export interface WorkerLiveness {
  /** This process's worker id, written on the leases it holds. */
  readonly workerId: string;
  /** Which of these workers' keys are in Redis now; throws when Redis cannot tell. */
  alive(workerIds: readonly string[]): Promise<Set<string>>;
  /** Renews this process's key every HEARTBEAT_MS until closed. */
  start(): void;
  /** Stops renewing (the key expires by itself) and disconnects. */
  close(): Promise<void>;
}

export function createRedisLiveness(options: { redis: RedisOptions; prefix: string; log: Logger }): WorkerLiveness {
  const workerId = randomUUID();
  const key = (id: string) => `${options.prefix}:webhooks:worker:${id}`;
  // Fail-fast, like the queues' producer connection: a check while Redis is away fails at once.
  const redis = new Redis({ ...options.redis, maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, commandTimeout: 2000, lazyConnect: true });
  redis.on('error', (err) => options.log.debug({ err }, 'heartbeat redis error'));
  let connecting: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<unknown> = Promise.resolve();
  let closed = false;
  const ready = async (): Promise<void> => {
    if (redis.status === 'ready') return;
    if (redis.status === 'wait') connecting ??= redis.connect().finally(() => (connecting = undefined));
    await connecting;
  };
  return {
    workerId,
    async alive(workerIds) {
      if (workerIds.length === 0) return new Set();
      await ready();
      const found = await redis.mget(...workerIds.map(key));
      return new Set(workerIds.filter((_, i) => found[i] !== null));
    },
    start() {
      if (timer || closed) return;
      const beat = (): void => {
        beating = ready()
          .then(() => redis.set(key(workerId), '1', 'PX', HEARTBEAT_TTL_MS))
          .catch((err: unknown) => options.log.debug({ err }, 'heartbeat not renewed'));
        timer = setTimeout(beat, HEARTBEAT_MS);
        timer.unref();
      };
      beat();
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await beating;
      redis.disconnect();
    },
  };
}
