import type { Response } from 'express';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

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
  /** Reads the key's window without counting a request (for a request refused before step 3). */
  peek(keyId: string, limit: number): Promise<RateLimitState>;
}

/**
 * A fixed-window limiter per key in Redis (rate-limiter-flexible's atomic Lua INCR + TTL), so all
 * API processes share one count per key. Each key has its own limit, and a RateLimiterRedis has
 * one `points` value, so there is one limiter per distinct limit; they all use the same Redis key
 * per API key, so changing a key's limit keeps its current count.
 *
 * The Redis client is the fail-fast one (no offline queue, short timeouts) and the limiter
 * refuses at once while it is not connected, so a Redis outage is an immediate error.
 */
export function createKeyRateLimiter(redis: Redis): KeyRateLimiter {
  const limiters = new Map<number, RateLimiterRedis>();
  const limiterFor = (limit: number): RateLimiterRedis => {
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

  return {
    async consume(keyId, limit) {
      try {
        return stateOf(await limiterFor(limit).consume(keyId, 1), limit, false);
      } catch (err) {
        if (err instanceof RateLimiterRes) return stateOf(err, limit, true);
        throw new RateLimitUnavailableError(err);
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

/**
 * The rate-limit headers of every response after authentication: the de-facto X-RateLimit-*
 * trio and the IETF draft's structured `RateLimit-Policy` / `RateLimit` fields.
 */
export function setRateLimitHeaders(res: Response, state: RateLimitState): void {
  res.setHeader('X-RateLimit-Limit', String(state.limit));
  res.setHeader('X-RateLimit-Remaining', String(state.remaining));
  res.setHeader('X-RateLimit-Reset', String(state.resetSeconds));
  res.setHeader('RateLimit-Policy', `"default";q=${state.limit};w=${RATE_LIMIT_WINDOW_SECONDS}`);
  res.setHeader('RateLimit', `"default";r=${state.remaining};t=${state.resetSeconds}`);
}
