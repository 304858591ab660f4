import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { redisHealth } from '../shared/redis-health.ts';

/** Redis key prefix of the per-IP failed-authentication counters, shared by every API process. */
export const AUTH_FAILURES_PREFIX = 'rl:authfail';

export interface AuthFailureLimits {
  /** Failed authentications allowed per IP and window (AUTH_FAILURES_PER_IP); 0 turns the bound off. */
  perIp: number;
  /** The window in seconds (AUTH_FAILURES_WINDOW_SECONDS). */
  windowSeconds: number;
}

/** Where an IP stands after one more failed authentication. */
export interface AuthFailureState {
  exceeded: boolean;
  limit: number;
  windowSeconds: number;
  /** Whole seconds until the IP's window resets (at least 1). */
  retryAfter: number;
}

export interface AuthFailureLimiter {
  /** Counts one failed authentication from `ip` (in this process while Redis is unusable). */
  fail(ip: string): Promise<AuthFailureState>;
}

/**
 * Shared by every API process through Redis; once an IP is over the bound it is blocked in memory
 * (`inMemoryBlockOnConsumed`), so a flood costs no round trip. Only failures count: a shared NAT's valid keys pass.
 * While Redis is unusable (redisHealth) each process counts alone, with the library's insurance
 * limiter, at the bound divided by `apiProcesses`.
 */
export function createAuthFailureLimiter(redis: Redis, limits: AuthFailureLimits, apiProcesses = 1): AuthFailureLimiter | undefined {
  if (limits.perIp <= 0) return undefined;
  const health = redisHealth(redis);
  const insurance = new RateLimiterMemory({
    keyPrefix: AUTH_FAILURES_PREFIX,
    points: Math.max(1, Math.floor(limits.perIp / apiProcesses)),
    duration: limits.windowSeconds,
  });
  const limiter = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: AUTH_FAILURES_PREFIX,
    points: limits.perIp,
    duration: limits.windowSeconds,
    inMemoryBlockOnConsumed: limits.perIp + 1,
    rejectIfRedisNotReady: true,
    insuranceLimiter: insurance,
  });
  const stateOf = (res: RateLimiterRes, exceeded: boolean): AuthFailureState => ({
    exceeded,
    limit: limits.perIp,
    windowSeconds: limits.windowSeconds,
    retryAfter: Math.max(1, Math.ceil((res.msBeforeNext > 0 ? res.msBeforeNext : limits.windowSeconds * 1000) / 1000)),
  });
  return {
    async fail(ip) {
      try {
        return stateOf(await (health.usable() ? limiter : insurance).consume(ip), false);
      } catch (err) {
        if (err instanceof RateLimiterRes) return stateOf(err, true);
        throw err;
      }
    },
  };
}
