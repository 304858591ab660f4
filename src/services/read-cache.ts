/**
 * Integrators poll lists and most polls find nothing new, while a list's round trip to the database
 * is most of its cost (bench/README.md). So a client never misses its own change: every live write
 * awaits `changed()` before answering, which drops in-flight reads too and reaches every API process
 * through Redis first; with the subscription down nothing is cached; and changes made outside the
 * API (CLI imports, SQL) show within `ttlMs`.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';

/** The pub/sub channel that carries the id of a broker whose services changed. */
export const SERVICES_CHANGED_CHANNEL = 'capi:services-changed';

/** Entries kept before the cache starts over (a bound on memory, not a working-set size). */
const MAX_ENTRIES = 2000;

export interface Loaded<T> {
  value: T;
  /** The value is stale from this instant on (e.g. a scheduled cancellation falls due). */
  until?: Date | null;
}

/** True while a value `read()` returned would still be served from the cache as it is. */
export type Freshness = () => boolean;

export interface ServiceReadCache {
  /** The cached answer for this broker and key, or `load()`'s (one load in flight per key). */
  read<T>(brokerId: string, key: string, load: () => Promise<Loaded<T>>): Promise<T>;
  /**
   * For an object `read()` returned from the cache: until when it stays the answer (no change of
   * the broker's services, its time not up). Undefined for anything not cached.
   */
  freshness(value: object): Freshness | undefined;
  /** Call after the commit, await before answering. Never rejects: an unpublished change shows within the TTL. */
  changed(brokerId: string): Promise<void>;
  close(): Promise<void>;
}

interface Entry {
  value: Promise<unknown>;
  until: number;
}

export interface ServiceReadCacheOptions {
  /** How long an answer may be reused; 0 turns the cache off. */
  ttlMs: number;
  /** The request Redis client: publishes changes; its duplicate subscribes to them. */
  redis: Redis;
  logger: Logger;
}

/** The cached answers of one process, by broker and key. */
class Answers {
  private readonly brokers = new Map<string, Map<string, Entry>>();
  private size = 0;
  /** Counts drops of each broker's answers and of all of them: a freshness check compares two numbers. */
  private readonly drops = new Map<string, number>();
  private clears = 0;

  /**
   * Taken before a load: a check that holds until `until` unless this broker's answers are dropped
   * from now on, a drop during the load included. It holds no answer, so it may outlive one.
   */
  freshUntilDropped(brokerId: string): (until: number) => Freshness {
    const drops = this.drops.get(brokerId) ?? 0;
    const clears = this.clears;
    return (until) => () => this.clears === clears && (this.drops.get(brokerId) ?? 0) === drops && Date.now() < until;
  }

  get(brokerId: string, key: string): Entry | undefined {
    return this.brokers.get(brokerId)?.get(key);
  }

  /** Keeps `entry`; returns a function that forgets it again (if it is still the one kept). */
  set(brokerId: string, key: string, entry: Entry): () => void {
    if (this.size >= MAX_ENTRIES) this.clear();
    const mine = this.brokers.get(brokerId) ?? new Map<string, Entry>();
    this.brokers.set(brokerId, mine);
    if (!mine.has(key)) this.size += 1;
    mine.set(key, entry);
    return () => {
      if (this.brokers.get(brokerId)?.get(key) !== entry) return;
      mine.delete(key);
      this.size -= 1;
    };
  }

  drop(brokerId: string): void {
    this.drops.set(brokerId, (this.drops.get(brokerId) ?? 0) + 1);
    const entries = this.brokers.get(brokerId);
    if (!entries) return;
    this.size -= entries.size;
    this.brokers.delete(brokerId);
  }

  clear(): void {
    this.clears += 1;
    this.drops.clear();
    this.brokers.clear();
    this.size = 0;
  }
}

export function createServiceReadCache(options: ServiceReadCacheOptions): ServiceReadCache {
  const { ttlMs, redis, logger } = options;
  const answers = new Answers();
  const freshness = new WeakMap<object, Freshness>();
  let subscribed = false;
  let closed = false;

  const subscriber = ttlMs > 0
    ? subscribeToChanges(redis, logger, {
        subscribed: () => {
          answers.clear();
          subscribed = !closed;
        },
        lost: () => {
          subscribed = false;
          answers.clear();
        },
        changed: (brokerId) => answers.drop(brokerId),
      })
    : undefined;

  return {
    async read<T>(brokerId: string, key: string, load: () => Promise<Loaded<T>>): Promise<T> {
      if (!subscribed) return (await load()).value;
      const started = Date.now();
      const hit = answers.get(brokerId, key);
      if (hit && hit.until > started) return hit.value as Promise<T>;
      const fresh = answers.freshUntilDropped(brokerId);
      const loaded = load();
      const entry: Entry = { value: loaded.then((r) => r.value), until: started + ttlMs };
      // Requests that share this load see its failure; nobody else must (no unhandled rejection).
      entry.value.catch(() => {});
      const forget = answers.set(brokerId, key, entry);
      try {
        const { value, until } = await loaded;
        if (until) entry.until = Math.min(entry.until, until.getTime());
        if (entry.until <= Date.now()) forget();
        else if (typeof value === 'object' && value !== null) freshness.set(value, fresh(entry.until));
        return value;
      } catch (err) {
        // A failed read is not kept: the next request asks again.
        forget();
        throw err;
      }
    },

    freshness: (value) => freshness.get(value),

    async changed(brokerId) {
      answers.drop(brokerId);
      if (!subscriber) return;
      // Redis writes the subscribers in the same pass as this answer, so almost always ahead of the
      // client's next request; a Redis descheduled between those writes lets another process serve
      // the old page once (seen in CI, Node 24): an acknowledgement from each subscriber would close it.
      await redis.publish(SERVICES_CHANGED_CHANNEL, brokerId).catch((err: unknown) => {
        logger.warn({ err, brokerId }, 'services cache: change not published; other API processes see it within their cache time');
      });
    },

    async close() {
      closed = true;
      subscribed = false;
      answers.clear();
      subscriber?.disconnect();
    },
  };
}

/**
 * A connection of its own (a subscribed client can send nothing else), which keeps retrying while
 * Redis is away; the cache is off from `lost` until `subscribed` again.
 */
function subscribeToChanges(
  redis: Redis,
  logger: Logger,
  on: { subscribed(): void; lost(): void; changed(brokerId: string): void },
): Redis {
  const subscriber = redis.duplicate({ enableAutoPipelining: false, enableOfflineQueue: true, maxRetriesPerRequest: null, commandTimeout: undefined });
  const subscribe = (): void => {
    subscriber.subscribe(SERVICES_CHANGED_CHANNEL).then(
      () => on.subscribed(),
      (err: unknown) => logger.debug({ err }, 'services cache: subscription failed; retried on reconnect'),
    );
  };
  subscriber.on('message', (_channel: string, brokerId: string) => on.changed(brokerId));
  subscriber.on('ready', subscribe);
  subscriber.on('close', () => on.lost());
  subscriber.on('error', (err) => logger.debug({ err }, 'services cache subscriber error'));
  return subscriber;
}
