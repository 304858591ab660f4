/**
 * A generic adapter over BullMQ: named queues on one Redis, jobs added under fixed ids, and
 * workers that run the processors they are handed. It knows nothing of what the jobs do.
 */
import { Queue, Worker, type Job, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import type { RedisEndpoint } from '../redis.ts';
import { redisHealth } from '../shared/redis-health.ts';
import { jobTelemetry } from '../shared/tracing.ts';

export const DEFAULT_PREFIX = 'capi';

/** Finished jobs are kept a while for operators (`bull` UIs), then dropped; the database keeps the record. */
const KEEP: Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'> = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 5000 },
};

/** A job still to run or running. */
const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

export type Processor = (job: Job) => Promise<unknown>;

export interface WorkerSpec {
  process: Processor;
  concurrency: number;
}

export interface JobQueuesOptions {
  redisEndpoint: RedisEndpoint;
  /** BullMQ key prefix; all processes on one Redis must share it. Default `capi`. */
  prefix?: string;
  queues: readonly string[];
  logger: Logger;
  /** The wait before a job's next try (`backoff: { type: 'retry' }`), from the tries made so far. */
  retryDelayMs: (attemptsMade: number) => number;
  /** How soon a job of a worker that died is handed to another (its lock's duration). */
  stalledAfterMs: number;
  /** How long `close()` waits for running jobs before forcing the workers to stop (default 10 s). */
  closeTimeoutMs?: number;
}

export interface JobQueues {
  readonly prefix: string;
  /**
   * Adds a job. Under a fixed `jobId`, a live job of that id is left as it is (BullMQ ignores an
   * add whose id it still holds) and a finished or failed one is removed first.
   */
  add(queue: string, name: string, data: object, options: JobsOptions): Promise<void>;
  /** Whether the job of that id is still to run or running. */
  isLive(queue: string, jobId: string): Promise<boolean>;
  /** Starts one worker per queue named in `workers`; resolves when they are ready. */
  startWorkers(workers: Record<string, WorkerSpec>): Promise<void>;
  /** True from the start of `close()` on. */
  isClosing(): boolean;
  /** Closes workers (waiting for active jobs, bounded), queues and connections. */
  close(): Promise<void>;
}

export function createJobQueues(options: JobQueuesOptions): JobQueues {
  const { redisEndpoint, logger: log } = options;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  let closing = false;
  const isClosing = () => closing;
  // A fail-fast connection (a Redis outage answers at once instead of hanging a request) shared by every queue.
  const producerRedis = new Redis({
    ...redisEndpoint.options,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    commandTimeout: 3000,
    retryStrategy: (times) => (closing ? null : Math.min(times * 100, 1000)),
  });
  producerRedis.on('error', (err) => log.debug({ err }, 'producer redis error'));
  const health = redisHealth(producerRedis);
  // Connected but unanswered: a stall. Not yet connected, or down, is BullMQ's own case (it waits for
  // the first connection; a lost one fails at once without the offline queue).
  const stalled = () => producerRedis.status === 'ready' && !health.usable();
  // skipVersionCheck: BullMQ keeps a timed-out start-up INFO as a permanent failure of the queue, so a
  // busy start would fail every later job; the workers still check the Redis version.
  const queues = new Map(
    options.queues.map((name) => [name, new Queue(name, { connection: producerRedis, prefix, defaultJobOptions: KEEP, skipVersionCheck: true, telemetry: jobTelemetry() })]),
  );
  for (const q of queues.values()) q.on('error', (err) => log.debug({ err }, 'queue error'));
  const queue = (name: string): Queue => {
    const q = queues.get(name);
    if (!q) throw new Error(`no queue ${name}`);
    return q;
  };
  let workers: Worker[] = [];

  async function add(name: string, jobName: string, data: object, jobOptions: JobsOptions): Promise<void> {
    return unlessStalled(stalled, () => addNow(name, jobName, data, jobOptions));
  }

  async function addNow(name: string, jobName: string, data: object, jobOptions: JobsOptions): Promise<void> {
    const q = queue(name);
    if (jobOptions.jobId !== undefined) {
      const state = await q.getJobState(jobOptions.jobId);
      if (LIVE_STATES.has(state)) return;
      if (state !== 'unknown') await q.remove(jobOptions.jobId).catch(() => undefined);
    }
    await q.add(jobName, data, jobOptions);
  }

  async function startWorkers(specs: Record<string, WorkerSpec>): Promise<void> {
    for (const name of Object.keys(specs)) queue(name);
    workers = Object.entries(specs).map(([name, spec]) => newWorker(options, prefix, isClosing, name, spec));
    for (const w of workers) w.on('error', (err) => log.warn({ err }, 'worker error'));
    await Promise.all(workers.map((w) => w.waitUntilReady()));
  }

  async function close(): Promise<void> {
    // Workers first (they finish their active jobs), then everything that feeds them. Bounded: with
    // Redis gone, BullMQ's close would wait forever, so after the grace period everything is forced.
    closing = true;
    const grace = options.closeTimeoutMs ?? 10_000;
    // BullMQ's close cannot be turned into a forced one once started, so choose up front: with Redis
    // unreachable, a graceful close would wait forever for the blocked fetch loops.
    const redisUp = producerRedis.status === 'ready';
    const graceful = await withTimeout(Promise.allSettled(workers.map((w) => w.close(!redisUp))), redisUp ? grace : 1000);
    if (!graceful) log.warn('job workers did not stop in time');
    await withTimeout(Promise.allSettled([...queues.values()].map((q) => q.close())), graceful && redisUp ? grace : 1000);
    for (const w of workers) void w.disconnect().catch(() => undefined);
    producerRedis.disconnect();
  }

  return {
    prefix,
    add,
    isLive: (name, jobId) => unlessStalled(stalled, async () => LIVE_STATES.has(await queue(name).getJobState(jobId))),
    startWorkers,
    isClosing,
    close,
  };
}

/** A queue call refused because Redis is stalled (src/shared/redis-health.ts). */
export class QueueUnavailableError extends Error {
  constructor() {
    super('Redis is stalled (connected, not answering): the job was not queued');
  }
}

/** How often a call in flight looks whether Redis has stalled meanwhile. */
const STALL_LOOK_MS = 50;

/**
 * Runs `work` on the producer connection unless Redis is stalled, and gives up on it as soon as the
 * stall detector sees Redis stall (within 1 s), not at the 3 s command timeout: a request that queues
 * a job (a password notice, a report) answers within 2 s of a freeze. What was sent may still run
 * when Redis resumes (reports and deliveries have fixed job ids and reconcilers).
 */
function unlessStalled<T>(stalled: () => boolean, work: () => Promise<T>): Promise<T> {
  if (stalled()) return Promise.reject(new QueueUnavailableError());
  return new Promise<T>((resolve, reject) => {
    const look = setInterval(() => {
      if (!stalled()) return;
      clearInterval(look);
      reject(new QueueUnavailableError());
    }, STALL_LOOK_MS);
    work().then(
      (value) => {
        clearInterval(look);
        resolve(value);
      },
      (err: unknown) => {
        clearInterval(look);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

function newWorker(options: JobQueuesOptions, prefix: string, isClosing: () => boolean, name: string, spec: WorkerSpec): Worker {
  return new Worker(name, spec.process, {
    connection: workerConnection(options.redisEndpoint, isClosing),
    prefix,
    concurrency: spec.concurrency,
    // With tracing on, a job's span joins the trace of whatever queued it (src/shared/tracing.ts).
    telemetry: jobTelemetry(),
    settings: { backoffStrategy: options.retryDelayMs },
    // A job of a worker that died is handed to another within two of these (its lock expires and a
    // stalled-job check sees it); a lock is renewed at half of it.
    lockDuration: options.stalledAfterMs,
    stalledInterval: options.stalledAfterMs,
  });
}

/** Resolves `true` when `promise` settles within `ms`, `false` when the time ran out first. */
export async function withTimeout(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Blocking connections (workers) must retry forever: BullMQ needs `maxRetriesPerRequest: null`. */
function workerConnection(endpoint: RedisEndpoint, closing: () => boolean) {
  return {
    ...endpoint.options,
    maxRetriesPerRequest: null,
    // Forever while running; once close() has begun, a lost connection is given up (otherwise a
    // Redis that is gone keeps the process alive with reconnect timers).
    retryStrategy: (times: number) => (closing() ? null : Math.min(times * 200, 2000)),
  };
}
