import type { Response } from 'express';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { knownHeader, setKnownHeader } from '../http/known-headers.ts';

/** Every key's limit is counted over a fixed window of this many seconds. */
export const RATE_LIMIT_WINDOW_SECONDS = 60;
/** Redis key prefix of the per-key counters (`rl:key:<key id>`), shared by every API process. */
export const RATE_LIMIT_PREFIX = 'rl:key';

/** Where a key stands in its current window. */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Whole seconds until the window resets (at least 1 while a window is open). */
  resetSeconds: number;
  /** True when this request went over the limit. */
  exceeded: boolean;
}

export class RateLimitUnavailableError extends Error {
  constructor(cause: unknown) {
    super('the rate limiter could not reach Redis', { cause });
    this.name = 'RateLimitUnavailableError';
  }
}

function stateOf(res: RateLimiterRes | null, limit: number, exceeded: boolean): RateLimitState {
  if (res === null) return { limit, remaining: limit, resetSeconds: RATE_LIMIT_WINDOW_SECONDS, exceeded };
  const ms = res.msBeforeNext > 0 ? res.msBeforeNext : RATE_LIMIT_WINDOW_SECONDS * 1000;
  return {
    limit,
    remaining: Math.max(0, limit - res.consumedPoints),
    resetSeconds: Math.max(1, Math.ceil(ms / 1000)),
    exceeded,
  };
}

export interface KeyRateLimiter {
  /** Counts one request against the key (also when it is over the limit: it still counts). */
  consume(keyId: string, limit: number): Promise<RateLimitState>;
  /** Undefined when the count needs Redis (then call `consume`); throws, as consume rejects, while Redis is down. */
  tryConsume(keyId: string, limit: number): RateLimitState | undefined;
  /** Reads the key's window without counting a request (for a request refused before step 3). */
  peek(keyId: string, limit: number): Promise<RateLimitState>;
  /**
   * Gives one counted request back to this process's block (a `304`, which costs nothing); the
   * key's state after it, or undefined when the window it was counted in has ended.
   */
  refund(keyId: string, limit: number): RateLimitState | undefined;
}

/** A claim takes at most this share of a key's limit from Redis at once... */
const LEASE_SHARE = 32;
/** ...and at most this many requests. */
const MAX_LEASE = 100;
/** Keys whose lease is kept before the table starts over (a bound on memory). */
const MAX_LEASES = 50_000;

/** A key with a limit under 64 is counted request by request. */
export function leaseSize(limit: number, counted: number): number {
  return Math.max(1, Math.min(MAX_LEASE, Math.floor((limit - counted) / LEASE_SHARE)));
}

/** Requests of the key's current window this process has claimed from Redis. */
interface Lease {
  limit: number;
  /** When the window resets (ms since the epoch, this process's clock). */
  resetsAt: number;
  /** The key's count in Redis after this process's last claim (its unused requests included). */
  counted: number;
  /** Claimed requests not used yet. */
  left: number;
}

/** One rate-limiter-flexible limiter per distinct limit, all on the same Redis key per API key. */
function limitersOn(redis: Redis): (limit: number) => RateLimiterRedis {
  const limiters = new Map<number, RateLimiterRedis>();
  return (limit) => {
    let limiter = limiters.get(limit);
    if (!limiter) {
      limiter = new RateLimiterRedis({
        storeClient: redis,
        keyPrefix: RATE_LIMIT_PREFIX,
        points: limit,
        duration: RATE_LIMIT_WINDOW_SECONDS,
        rejectIfRedisNotReady: true,
      });
      limiters.set(limit, limiter);
    }
    return limiter;
  };
}

function stateOfLease(lease: Lease, exceeded: boolean): RateLimitState {
  return {
    limit: lease.limit,
    remaining: Math.max(0, lease.limit - (lease.counted - lease.left)),
    resetSeconds: Math.max(1, Math.ceil((lease.resetsAt - Date.now()) / 1000)),
    exceeded,
  };
}

/** The key's lease if it is for this limit and its window; a stale one is dropped. */
function currentLeaseIn(leases: Map<string, Lease>, keyId: string, limit: number): Lease | undefined {
  const lease = leases.get(keyId);
  if (lease && (lease.limit !== limit || lease.resetsAt <= Date.now())) {
    leases.delete(keyId);
    return undefined;
  }
  return lease;
}

/**
 * One count per key in Redis, shared by all API processes; a limiter per distinct limit (a
 * RateLimiterRedis has one `points`) on the same Redis key, so changing a limit keeps the count.
 * Requests are claimed in blocks, since the round trip was an authenticated request's largest cost
 * (bench/README.md): all processes together never pass the limit, but a 429 may come up to one block
 * per process early. Nothing is served from a lease while Redis is down: an outage is an immediate error.
 */
export function createKeyRateLimiter(redis: Redis): KeyRateLimiter {
  const limiterFor = limitersOn(redis);
  const leases = new Map<string, Lease>();
  const claims = new Map<string, Promise<void>>();
  const currentLease = (keyId: string, limit: number) => currentLeaseIn(leases, keyId, limit);

  /** Adds `points` to the key's count; `granted` is how many of them fit under the limit. */
  async function count(keyId: string, limit: number, points: number): Promise<{ res: RateLimiterRes; granted: number }> {
    try {
      return { res: await limiterFor(limit).consume(keyId, points), granted: points };
    } catch (err) {
      if (err instanceof RateLimiterRes) return { res: err, granted: Math.max(0, limit - (err.consumedPoints - points)) };
      throw new RateLimitUnavailableError(err);
    }
  }

  function claim(keyId: string, limit: number, counted: number): Promise<void> {
    const size = leaseSize(limit, counted);
    const claiming = count(keyId, limit, size)
      .then(({ res, granted }) => {
        if (leases.size >= MAX_LEASES) leases.clear();
        const ms = res.msBeforeNext > 0 ? res.msBeforeNext : RATE_LIMIT_WINDOW_SECONDS * 1000;
        leases.set(keyId, { limit, resetsAt: Date.now() + ms, counted: res.consumedPoints, left: granted });
      })
      .finally(() => claims.delete(keyId));
    claims.set(keyId, claiming);
    return claiming;
  }

  /** One request from the key's current lease, without Redis, or undefined when that needs Redis. */
  function tryConsume(keyId: string, limit: number): RateLimitState | undefined {
    if (redis.status !== 'ready') throw new RateLimitUnavailableError(new Error(`Redis connection is ${redis.status}`));
    const lease = currentLease(keyId, limit);
    if (!lease || lease.left <= 0) return undefined;
    lease.left -= 1;
    return stateOfLease(lease, false);
  }

  return {
    tryConsume,
    refund(keyId, limit) {
      // Redis holds the block's count already: the unit goes back to the block, for this process's next request.
      const lease = currentLease(keyId, limit);
      if (!lease) return undefined;
      lease.left += 1;
      return stateOfLease(lease, false);
    },
    async consume(keyId, limit) {
      for (;;) {
        const served = tryConsume(keyId, limit);
        if (served) return served;
        const lease = currentLease(keyId, limit);
        if (lease && lease.counted >= limit) {
          // Over the limit: this request is counted too, and refused.
          const { res } = await count(keyId, limit, 1);
          lease.counted = Math.max(lease.counted, res.consumedPoints);
          return stateOf(res, limit, true);
        }
        const pending = claims.get(keyId);
        if (pending) {
          await pending;
          continue;
        }
        await claim(keyId, limit, lease?.counted ?? 0);
        const claimed = leases.get(keyId);
        if (claimed && claimed.left === 0) return stateOfLease(claimed, true);
      }
    },
    async peek(keyId, limit) {
      try {
        return stateOf(await limiterFor(limit).get(keyId), limit, false);
      } catch (err) {
        throw new RateLimitUnavailableError(err);
      }
    },
  };
}

/** The de-facto X-RateLimit-* trio and the IETF draft's `RateLimit-Policy` / `RateLimit` fields. */
export function setRateLimitHeaders(res: Response, state: RateLimitState): void {
  setKnownHeader(res, LIMIT, String(state.limit));
  setKnownHeader(res, REMAINING, String(state.remaining));
  setKnownHeader(res, RESET, String(state.resetSeconds));
  setKnownHeader(res, POLICY, `"default";q=${state.limit};w=${RATE_LIMIT_WINDOW_SECONDS}`);
  setKnownHeader(res, RATE_LIMIT, `"default";r=${state.remaining};t=${state.resetSeconds}`);
}

// Their values are integers and fixed text: nothing setHeader's checks could refuse.
const LIMIT = knownHeader('X-RateLimit-Limit');
const REMAINING = knownHeader('X-RateLimit-Remaining');
const RESET = knownHeader('X-RateLimit-Reset');
const POLICY = knownHeader('RateLimit-Policy');
const RATE_LIMIT = knownHeader('RateLimit');
