import type { Response } from 'express';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { redisHealth, type RedisHealth } from '../shared/redis-health.ts';
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
  /** Counted by this process's insurance limiter alone (Redis unusable); `limit` is then this process's share. */
  insured?: true;
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
  /** Counts one request against the key (also when it is over the limit: it still counts); never rejects for an outage. */
  consume(keyId: string, limit: number): Promise<RateLimitState>;
  /** One request from this process's block without a wait, or undefined (then call `consume`). */
  tryConsume(keyId: string, limit: number): RateLimitState | undefined;
  /** Reads the key's window without counting a request (for a request refused before step 3). */
  peek(keyId: string, limit: number): Promise<RateLimitState>;
  /**
   * Gives the request counted as `counted` back (a `304`, which costs nothing): to this process's
   * block, or to the insurance that counted it. The key's state after it, or undefined when the
   * window it was counted in has ended.
   */
  refund(keyId: string, limit: number, counted?: RateLimitState): RateLimitState | undefined;
}

export interface KeyRateLimiterOptions {
  /** API processes sharing the limits (RATE_LIMIT_API_PROCESSES): each one's insurance allows limit / this. */
  apiProcesses?: number;
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

/** What one API process allows a key in a window while Redis is unusable (documented in docs/operations.md). */
export function insuredLimit(limit: number, apiProcesses: number): number {
  return Math.max(1, Math.floor(limit / apiProcesses));
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

/**
 * rate-limiter-flexible's insurance limiter, which counts in this process whatever the Redis
 * limiter could not: one point a request, though the Redis limiter was asked for a block. It
 * remembers its own answers, so a block is never taken from one of them.
 */
class Insurance extends RateLimiterMemory {
  private readonly answers = new WeakSet<RateLimiterRes>();

  override async consume(key: string | number, _points?: number, options?: { [key: string]: unknown }): Promise<RateLimiterRes> {
    try {
      return this.mark(await super.consume(key, 1, options));
    } catch (err) {
      throw err instanceof RateLimiterRes ? this.mark(err) : err;
    }
  }

  override async get(key: string | number, options?: { [key: string]: unknown }): Promise<RateLimiterRes | null> {
    const res = await super.get(key, options);
    return res && this.mark(res);
  }

  answered(res: RateLimiterRes | null): boolean {
    return res !== null && this.answers.has(res);
  }

  private mark(res: RateLimiterRes): RateLimiterRes {
    this.answers.add(res);
    return res;
  }
}

/** The Redis limiter of one limit and its insurance (a RateLimiterRedis has one `points`). */
interface Limiters {
  main: RateLimiterRedis;
  insurance: Insurance;
  /** The insurance's points: this process's share of the limit. */
  insured: number;
}

/** One pair per distinct limit, all on the same Redis key per API key. */
function limitersOn(redis: Redis, apiProcesses: number): (limit: number) => Limiters {
  const limiters = new Map<number, Limiters>();
  return (limit) => {
    let pair = limiters.get(limit);
    if (!pair) {
      const insured = insuredLimit(limit, apiProcesses);
      const insurance = new Insurance({ keyPrefix: RATE_LIMIT_PREFIX, points: insured, duration: RATE_LIMIT_WINDOW_SECONDS });
      const main = new RateLimiterRedis({
        storeClient: redis,
        keyPrefix: RATE_LIMIT_PREFIX,
        points: limit,
        duration: RATE_LIMIT_WINDOW_SECONDS,
        rejectIfRedisNotReady: true,
        insuranceLimiter: insurance,
      });
      pair = { main, insurance, insured };
      limiters.set(limit, pair);
    }
    return pair;
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

/** What one count came to: `granted` of its points fit under the limit; `state` is set when the insurance counted it. */
interface Counted {
  res: RateLimiterRes;
  granted: number;
  insuredState?: RateLimitState;
}

/** Adds `points` to the key's count in Redis, or one to the insurance's (Redis unusable, or failing). */
async function count(limiters: Limiters, health: RedisHealth, keyId: string, limit: number, points: number): Promise<Counted> {
  const { main, insurance, insured } = limiters;
  let res: RateLimiterRes;
  let over = false;
  try {
    res = health.usable() ? await main.consume(keyId, points) : await insurance.consume(keyId);
  } catch (err) {
    if (!(err instanceof RateLimiterRes)) throw err;
    res = err;
    over = true;
  }
  if (insurance.answered(res)) return { res, granted: over ? 0 : 1, insuredState: { ...stateOf(res, insured, over), insured: true } };
  return { res, granted: over ? Math.max(0, limit - (res.consumedPoints - points)) : points };
}

/**
 * One count per key in Redis, shared by all API processes; a limiter per distinct limit on the same
 * Redis key, so changing a limit keeps the count. Requests are claimed in blocks, since the round
 * trip was an authenticated request's largest cost (bench/README.md): all processes together never
 * pass the limit, but a 429 may come up to one block per process early. While Redis is unusable
 * (src/redis.ts redisHealth: down, or stalled for 600 ms) nothing is sent to it and nothing is served
 * from a block: each request is counted by the limiter's insurance in this process, at the limit's
 * share `insuredLimit`; a command that fails is counted there too, by the library.
 */
export function createKeyRateLimiter(redis: Redis, options: KeyRateLimiterOptions = {}): KeyRateLimiter {
  const health = redisHealth(redis);
  const limiterFor = limitersOn(redis, options.apiProcesses ?? 1);
  const leases = new Map<string, Lease>();
  const claims = new Map<string, Promise<RateLimitState | undefined>>();
  const currentLease = (keyId: string, limit: number) => currentLeaseIn(leases, keyId, limit);

  /** A block for the key; or, when the insurance counted the claim, the claiming request's state. */
  function claim(keyId: string, limit: number, counted: number): Promise<RateLimitState | undefined> {
    const size = leaseSize(limit, counted);
    const claiming = count(limiterFor(limit), health, keyId, limit, size)
      .then(({ res, granted, insuredState }) => {
        if (insuredState) return insuredState;
        if (leases.size >= MAX_LEASES) leases.clear();
        const ms = res.msBeforeNext > 0 ? res.msBeforeNext : RATE_LIMIT_WINDOW_SECONDS * 1000;
        leases.set(keyId, { limit, resetsAt: Date.now() + ms, counted: res.consumedPoints, left: granted });
        return undefined;
      })
      .finally(() => claims.delete(keyId));
    claims.set(keyId, claiming);
    return claiming;
  }

  function tryConsume(keyId: string, limit: number): RateLimitState | undefined {
    if (!health.usable()) return undefined;
    const lease = currentLease(keyId, limit);
    if (!lease || lease.left <= 0) return undefined;
    lease.left -= 1;
    return stateOfLease(lease, false);
  }

  async function consume(keyId: string, limit: number): Promise<RateLimitState> {
    for (;;) {
      if (!health.usable()) return (await count(limiterFor(limit), health, keyId, limit, 1)).insuredState!;
      const served = tryConsume(keyId, limit);
      if (served) return served;
      const lease = currentLease(keyId, limit);
      if (lease && lease.counted >= limit) {
        // Over the limit: this request is counted too, and refused.
        const { res, insuredState } = await count(limiterFor(limit), health, keyId, limit, 1);
        if (insuredState) return insuredState;
        lease.counted = Math.max(lease.counted, res.consumedPoints);
        return stateOf(res, limit, true);
      }
      const pending = claims.get(keyId);
      if (pending) {
        await pending;
        continue;
      }
      const insured = await claim(keyId, limit, lease?.counted ?? 0);
      if (insured) return insured;
      const claimed = leases.get(keyId);
      if (claimed && claimed.left === 0) return stateOfLease(claimed, true);
    }
  }

  return {
    tryConsume,
    consume,
    refund(keyId, limit, counted) {
      if (counted?.insured) {
        limiterFor(limit).insurance.reward(keyId, 1).catch(() => undefined);
        return { ...counted, remaining: Math.min(counted.limit, counted.remaining + 1) };
      }
      // Redis holds the block's count already: the unit goes back to the block, for this process's next request.
      const lease = currentLease(keyId, limit);
      if (!lease) return undefined;
      lease.left += 1;
      return stateOfLease(lease, false);
    },
    async peek(keyId, limit) {
      const { main, insurance, insured } = limiterFor(limit);
      const res = health.usable() ? await main.get(keyId) : await insurance.get(keyId);
      return insurance.answered(res) ? { ...stateOf(res, insured, false), insured: true } : stateOf(res, limit, false);
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
