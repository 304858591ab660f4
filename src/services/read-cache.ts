/**
 * Integrators poll lists and most polls find nothing new, while a list's round trip to the database
 * is most of its cost (bench/README.md). So a client never misses its own change: every live write
 * awaits `changed()` before answering, which drops in-flight reads too and reaches every API process
 * through Redis first; with the subscription down nothing is cached; and changes made outside the
 * API (CLI imports, SQL) show within `ttlMs`.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { redisHealth } from '../shared/redis-health.ts';

/**
 * The pub/sub channel of change notices, `<process tag> <sequence> <broker id>`: every receiver drops
 * the broker's pages, then acknowledges on the sender's ack channel. A name of its own, so a process of
 * the previous version never reads a notice as a broker id and a sender never waits for its silence.
 */
export const SERVICES_CHANGED_CHANNEL = 'capi:services-change-notices';

/** Followed by a process's tag: where that process hears the sequences of its notices acknowledged. */
const ACK_CHANNEL_PREFIX = 'capi:services-change-acks:';

/**
 * The previous version's channel (the bare broker id, never acknowledged). Notices go out and are heard
 * on it too, so during a rolling deploy no process of either version misses the other's changes; it can
 * go once no process of that version runs.
 */
const LEGACY_CHANNEL = 'capi:services-changed';

/** The longest `changed()` waits for every API process to drop a broker's pages; past it the TTL bounds staleness. */
export const ACK_WAIT_MS = 250;

/** How often each process publishes a heartbeat on the notice channel (it hears its own, echoed). */
export const HEARTBEAT_MS = 250;

/**
 * A process serves nothing from its cache once the last message its subscription heard is this old:
 * a stalled Redis (connections open, nothing answers) stops heartbeats and notices alike. A write
 * whose PUBLISH goes unanswered waits this long before answering, so by then no process serves a
 * page it loaded before the write (plus a receiver's event-loop lag in handling a message).
 */
export const LIVENESS_MS = 4 * HEARTBEAT_MS;

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
  /**
   * Call after the commit, await before answering: resolves once every API process has dropped the
   * broker's pages, or after `ackWaitMs`. Never rejects: an unpublished change shows within the TTL.
   */
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
  /** The longest `changed()` waits for the other processes' acknowledgements (default ACK_WAIT_MS). */
  ackWaitMs?: number;
  /** Heartbeat period and the silence past which nothing is served from the cache (HEARTBEAT_MS, LIVENESS_MS). */
  heartbeatMs?: number;
  livenessMs?: number;
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

/** The acknowledgements one change notice is owed; `settled` is false if the wait ran out first. */
class Acks {
  received = 0;
  /** PUBLISH's answer: how many subscribers received the notice (unknown until it answers). */
  owed = Number.POSITIVE_INFINITY;
  readonly settled: Promise<boolean>;
  private finish!: (inTime: boolean) => void;

  constructor(waitMs: number) {
    this.settled = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), waitMs);
      this.finish = (inTime) => {
        clearTimeout(timer);
        resolve(inTime);
      };
    });
  }

  expect(receivers: number): void {
    this.owed = receivers;
    if (this.received >= this.owed) this.finish(true);
  }

  acknowledged(): void {
    this.received += 1;
    if (this.received >= this.owed) this.finish(true);
  }

  /** Nothing more will come (not published, or the cache closed). */
  stop(): void {
    this.finish(true);
  }
}

/** This process's change notices: each is sent with a sequence and waits for its acknowledgements. */
class Notices {
  readonly tag = randomUUID();
  private sequence = 0;
  /** Notices still owed acknowledgements, by sequence. */
  private readonly waiting = new Map<string, Acks>();

  constructor(
    private readonly redis: Redis,
    private readonly logger: Logger,
    private readonly waitMs: number,
  ) {}

  /**
   * PUBLISH's answer does not mean the receivers have dropped their pages: Redis writes their copies
   * in the same pass, in no promised order, and each handles its copy only when its event loop gets
   * there (CI once saw another process serve the old page). So each receiver acknowledges after
   * dropping, and this waits for as many acknowledgements as PUBLISH counts receivers, at most
   * `waitMs`. Unless `listening` (our subscription is up) none can reach us: then it only publishes.
   */
  async send(brokerId: string, listening: boolean): Promise<boolean> {
    // Resolves true unless PUBLISH was still unanswered when the wait ended (see `changed()`).
    const seq = String((this.sequence += 1));
    const acks = new Acks(this.waitMs);
    /** Whether PUBLISH answered or failed: still pending when the wait ends means a stalled Redis. */
    let answered = false;
    if (listening) this.waiting.set(seq, acks);
    Promise.all([
      this.redis.publish(SERVICES_CHANGED_CHANNEL, `${this.tag} ${seq} ${brokerId}`),
      this.redis.publish(LEGACY_CHANNEL, brokerId),
    ]).then(
      ([receivers]) => {
        answered = true;
        acks.expect(listening ? receivers : 0);
      },
      (err: unknown) => {
        answered = true;
        this.logger.warn({ err, brokerId }, 'services cache: change not published; other API processes see it within their cache time');
        acks.stop();
      },
    );
    const inTime = await acks.settled;
    this.waiting.delete(seq);
    if (!inTime) {
      this.logger.warn(
        { brokerId, receivers: Number.isFinite(acks.owed) ? acks.owed : 'PUBLISH unanswered', acknowledged: acks.received, waitedMs: this.waitMs },
        'services cache: not every API process acknowledged the change in time; they show it within their cache time',
      );
    }
    return answered;
  }

  /** One heartbeat at a time: with Redis stalled they would pile up until the command timeout. */
  private beating = false;
  heartbeat(): void {
    if (this.beating) return;
    this.beating = true;
    this.redis.publish(SERVICES_CHANGED_CHANNEL, `${this.tag} heartbeat`).then(
      () => { this.beating = false; },
      (err: unknown) => {
        this.beating = false;
        this.logger.debug({ err }, 'services cache: heartbeat not published');
      },
    );
  }

  acknowledged(seq: string): void {
    this.waiting.get(seq)?.acknowledged();
  }

  stopAll(): void {
    for (const acks of this.waiting.values()) acks.stop();
  }
}

export function createServiceReadCache(options: ServiceReadCacheOptions): ServiceReadCache {
  const { ttlMs, redis, logger, ackWaitMs = ACK_WAIT_MS, heartbeatMs = HEARTBEAT_MS, livenessMs = LIVENESS_MS } = options;
  const answers = new Answers();
  const freshness = new WeakMap<object, Freshness>();
  const notices = new Notices(redis, logger, ackWaitMs);
  let subscribed = false;
  let closed = false;
  /** When the subscription last heard anything (a heartbeat, ours included, or a notice). */
  let lastHeard = 0;
  /** The cache is used only while notices are known to arrive: subscribed, heard from lately, and Redis not stalled. */
  const live = (): boolean => subscribed && redisHealth(redis).usable() && Date.now() - lastHeard < livenessMs;

  const subscriber = ttlMs > 0
    ? subscribeToChanges(redis, logger, notices.tag, {
        subscribed: () => {
          answers.clear();
          lastHeard = Date.now();
          subscribed = !closed;
        },
        heard: () => (lastHeard = Date.now()),
        lost: () => {
          subscribed = false;
          answers.clear();
        },
        changed: (brokerId) => answers.drop(brokerId),
        acknowledged: (seq) => notices.acknowledged(seq),
      })
    : undefined;
  const heartbeats = subscriber ? setInterval(() => notices.heartbeat(), heartbeatMs) : undefined;
  heartbeats?.unref();

  return {
    async read<T>(brokerId: string, key: string, load: () => Promise<Loaded<T>>): Promise<T> {
      if (!live()) return (await load()).value;
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
        else if (typeof value === 'object' && value !== null) freshness.set(value, both(live, fresh(entry.until)));
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
      // Returns once every other API process has dropped the broker's pages too (each acknowledges
      // the notice), so the client's next request finds the change wherever it lands; a process
      // silent past the bound shows it within its cache time.
      const started = Date.now();
      // PUBLISH unanswered (Redis stalled): the notice may be lost, but then no heartbeat arrives
      // either; past the liveness bound no process serves a page loaded before this write.
      if (!(await notices.send(brokerId, subscribed))) await sleep(started + livenessMs - Date.now());
    },

    async close() {
      closed = true;
      subscribed = false;
      clearInterval(heartbeats);
      answers.clear();
      notices.stopAll();
      subscriber?.disconnect();
    },
  };
}

const both = (a: Freshness, b: Freshness): Freshness => () => a() && b();

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/**
 * A connection of its own (a subscribed client can send nothing else), which keeps retrying while
 * Redis is away; the cache is off from `lost` until `subscribed` again. Acknowledgements go out on
 * the request client `redis`, to the sender's own ack channel (only the sender hears them).
 */
function subscribeToChanges(
  redis: Redis,
  logger: Logger,
  tag: string,
  on: { subscribed(): void; heard(): unknown; lost(): void; changed(brokerId: string): void; acknowledged(seq: string): void },
): Redis {
  const subscriber = redis.duplicate({ enableAutoPipelining: false, enableOfflineQueue: true, maxRetriesPerRequest: null, commandTimeout: undefined });
  const ackChannel = ACK_CHANNEL_PREFIX + tag;
  const subscribe = (): void => {
    subscriber.subscribe(SERVICES_CHANGED_CHANNEL, ackChannel, LEGACY_CHANNEL).then(
      () => on.subscribed(),
      (err: unknown) => logger.debug({ err }, 'services cache: subscription failed; retried on reconnect'),
    );
  };
  subscriber.on('message', (channel: string, message: string) => {
    on.heard();
    if (channel === ackChannel) return on.acknowledged(message);
    if (channel === LEGACY_CHANNEL) return on.changed(message);
    const [from, seq, brokerId] = message.split(' ');
    if (from === undefined || seq === undefined || brokerId === undefined) return;
    on.changed(brokerId);
    // Our own notice needs no round trip: its arrival here is its acknowledgement.
    if (from === tag) return on.acknowledged(seq);
    redis.publish(ACK_CHANNEL_PREFIX + from, seq).catch((err: unknown) => {
      logger.debug({ err, brokerId }, 'services cache: acknowledgement not sent; the sender stops waiting at its bound');
    });
  });
  subscriber.on('ready', subscribe);
  subscriber.on('close', () => on.lost());
  subscriber.on('error', (err) => logger.debug({ err }, 'services cache subscriber error'));
  return subscriber;
}
