import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { Config } from '../config.ts';
import type { AuthContext } from '../http/auth-context.ts';
import { hasScope } from '../http/auth-context.ts';
import type { OperationInfo } from '../http/contract.ts';
import { ApiError, notFound, serverError } from '../http/errors.ts';
import type { Logger } from '../logger.ts';
import { cachedScrub, scrubPath } from '../ops/redact.ts';
import { createApiLog, loggedError, type ApiLog, type ApiLogOptions } from './api-log.ts';
import { callerBucket, displayIp } from './ip-whitelist.ts';
import { createAuthFailureLimiter, type AuthFailureLimiter, type AuthFailureLimits } from './auth-failures.ts';
import { createKeyStore, type KeyStore, type NegativeCacheOptions, type StoredKey } from './key-store.ts';
import { consoleCookie, cookieHashOf, csrfTokenMatches, findConsoleSession } from './console-sessions.ts';
import { bearerToken, hashApiKey, hashesEqual, isScope, modeOfKey, type KeyMode } from './keys.ts';
import {
  createKeyRateLimiter,
  RATE_LIMIT_WINDOW_SECONDS,
  RateLimitUnavailableError,
  setRateLimitHeaders,
  type KeyRateLimiter,
  type RateLimitState,
} from './rate-limit.ts';

export interface GateDeps {
  prisma: PrismaClient;
  /** The fail-fast request client (src/redis.ts requestRedis). */
  redis: Redis;
  logger: Logger;
  /** How long a key row may be reused in process; 0 looks every request up (default 2000 ms). */
  keyCacheMs?: number;
  /** Unknown keys remembered briefly (default: off; the runtime passes the configured one). */
  negativeCache?: NegativeCacheOptions;
  /** The opt-in bound on failed authentications per caller IP (default: off). */
  authFailures?: AuthFailureLimits;
  /** API log buffering (flush interval and size threshold). */
  apiLog?: ApiLogOptions;
  /** Clock, for tests of expiry. */
  now?: () => Date;
}

/** Methods that change nothing: a console call of any other needs the session's CSRF token. */
const SAFE_METHODS = new Set(['GET', 'HEAD']);

export interface Gate {
  /** Authentication, IP whitelist, rate limit, scope check and API logging, in that order. */
  gate: RequestHandler;
  apiLog: Pick<ApiLog, 'flush' | 'close' | 'pending'>;
  keys: Pick<KeyStore, 'invalidate' | 'unknownCount'>;
}

/** The gate's settings from the configuration (KEY_NEGATIVE_CACHE_*, AUTH_FAILURES_*). */
export function gateSettings(config: Config): Pick<GateDeps, 'negativeCache' | 'authFailures'> {
  return {
    negativeCache: { ttlMs: config.keyNegativeCacheMs, size: config.keyNegativeCacheSize },
    authFailures: { perIp: config.authFailuresPerIp, windowSeconds: config.authFailuresWindowSeconds },
  };
}

/** Default life of a cached key row: a revoked key stops working within this time everywhere. */
export const DEFAULT_KEY_CACHE_MS = 2000;

const authFailed = (message: string, error?: 'invalid_request' | 'invalid_token'): ApiError =>
  new ApiError('authentication_failed', message, undefined, {
    // RFC 6750: tell the client which scheme is expected, and why the token was refused.
    'WWW-Authenticate': error ? `Bearer realm="api", error="${error}"` : 'Bearer realm="api"',
  });

/** The API log's path column holds at most this many characters. */
const MAX_STORED_PATH = 2048;

/**
 * A path as the API log stores it: scrubbed by the same scrubPath as the log lines' URL
 * (src/ops/redact.ts scrubUrl), as getRequestLog shows it.
 */
const storedPath = cachedScrub((path) => scrubPath(path).slice(0, MAX_STORED_PATH));

/** No query string: it can hold customer data. */
function pathOf(url: string): string {
  const query = url.indexOf('?');
  return storedPath(query === -1 ? url : url.slice(0, query));
}

/** The key a request presents: its hash and the mode its prefix claims. */
interface PresentedKey {
  hash: string;
  claimedMode: KeyMode;
}

/** How many `Authorization` headers came (Node keeps only the first in `req.headers`). */
function authorizationHeaders(raw: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') count++;
  }
  return count;
}

/** Step 1a: one well-formed `Authorization: Bearer <key>` header, or a 401. */
function presentedKey(req: Request): PresentedKey {
  if (authorizationHeaders(req.rawHeaders) > 1) {
    throw authFailed('Ambiguous credentials: send exactly one Authorization header', 'invalid_request');
  }
  const header = req.headers.authorization;
  if (header === undefined || header.trim() === '') {
    throw authFailed('Missing API key: send it as "Authorization: Bearer <API_KEY>"');
  }
  const token = bearerToken(header);
  if (token === undefined) {
    throw authFailed('Malformed Authorization header: expected "Bearer <API_KEY>"', 'invalid_request');
  }
  const claimedMode = modeOfKey(token);
  if (claimedMode === undefined) throw authFailed('Invalid API key', 'invalid_token');
  return { hash: hashApiKey(token), claimedMode };
}

/** Step 1b: the row found for the presented key is that key, valid now, or a 401. */
function verifiedKey(key: StoredKey | undefined, presented: PresentedKey, now: Date): StoredKey {
  // The look-up is by an index on the hash; the constant-time comparison is the check itself.
  if (!key || !hashesEqual(key.keyHash, presented.hash) || key.mode !== presented.claimedMode) {
    throw authFailed('Invalid API key', 'invalid_token');
  }
  if (!key.active || key.revokedAt !== null) throw authFailed('This API key has been revoked', 'invalid_token');
  if (key.expiresAt !== null && key.expiresAt.getTime() <= now.getTime()) {
    throw authFailed('This API key has expired', 'invalid_token');
  }
  return key;
}

/**
 * A console call that changes something carries the session's CSRF token, and is not made from
 * another site's page (Fetch Metadata), on top of the SameSite=Strict cookie.
 */
function checkConsoleCall(req: Request, res: Response, cookie: string): void {
  res.locals.viaConsole = true;
  if (SAFE_METHODS.has(req.method)) return;
  const site = req.headers['sec-fetch-site'];
  const token = req.headers['x-csrf-token'];
  if ((site !== undefined && site !== 'same-origin') || !csrfTokenMatches(cookie, typeof token === 'string' ? token : undefined)) {
    throw new ApiError('insufficient_permissions', 'A console call that changes something must carry the session\'s CSRF token in X-CSRF-Token', {
      reason: 'csrf_token',
    });
  }
}

/** Step 2: a restricted key (live or sandbox) only answers callers on its whitelist. */
function checkIp(key: StoredKey, ip: string | undefined): void {
  if (!key.ipRestricted) return;
  if (key.whitelist.rules.length === 0) {
    throw new ApiError('insufficient_permissions', 'This API key is restricted to an IP whitelist, which is empty', {
      reason: 'ip_not_allowed',
      ip: displayIp(ip),
    });
  }
  if (!key.whitelist.allows(ip)) {
    throw new ApiError('insufficient_permissions', 'The caller IP address is not on this API key\'s whitelist', {
      reason: 'ip_not_allowed',
      ip: displayIp(ip),
    });
  }
}

/** Step 4: the operation's scopes (any one of them; admin:full always does). */
function checkScopes(auth: AuthContext, operation: OperationInfo): void {
  if (operation.scopes.length === 0 || hasScope(auth, ...operation.scopes.filter(isScope))) return;
  throw new ApiError(
    'insufficient_permissions',
    `This API key lacks the scope this operation requires (one of: ${operation.scopes.join(', ')})`,
    { required_scopes: operation.scopes },
  );
}

function authContextOf(key: StoredKey): AuthContext {
  return {
    keyId: key.id,
    keyName: key.name,
    mode: key.mode,
    // A scope this version does not know (a row written by a newer one) grants nothing here.
    scopes: key.scopes.filter(isScope),
    brokerId: key.broker.id,
    brokerName: key.broker.name,
    brokerApproval: key.broker.approval,
  };
}

/** Step 3 for a request refused at step 2: the headers still say where the key stands, uncounted. */
async function headersWithoutCounting(res: Response, limiter: KeyRateLimiter, key: StoredKey, logger: Logger) {
  try {
    setRateLimitHeaders(res, await limiter.peek(key.id, key.rateLimit));
  } catch (err) {
    logger.warn({ err }, 'rate limit state unavailable for a refused request');
  }
}

/** What the gate's steps work with, made once per gate. */
interface GateParts {
  logger: Logger;
  limiter: KeyRateLimiter;
  failures: AuthFailureLimiter | undefined;
  apiLog: ApiLog;
  /** One context per cached key row (read-only for the handlers), not one per request. */
  contexts: WeakMap<StoredKey, AuthContext>;
  /** One rate-limit refund per cached key row, as the contexts. */
  refunds: WeakMap<StoredKey, (res: Response) => void>;
}

/** What a `304` calls: the request's unit of rate limit back, and the headers saying so. */
function refundOf(g: GateParts, key: StoredKey): (res: Response) => void {
  let refund = g.refunds.get(key);
  if (!refund) {
    refund = (res) => {
      const state = g.limiter.refund(key.id, key.rateLimit);
      if (state) setRateLimitHeaders(res, state);
    };
    g.refunds.set(key, refund);
  }
  return refund;
}

/** Steps 3 and 4 once the request is counted; `next` exactly once. */
function afterCount(g: GateParts, req: Request, res: Response, next: NextFunction, key: StoredKey, state: RateLimitState): void {
  try {
    setRateLimitHeaders(res, state);
    if (state.exceeded) {
      throw new ApiError(
        'rate_limit_exceeded',
        `Rate limit exceeded: this API key allows ${state.limit} requests per ${RATE_LIMIT_WINDOW_SECONDS} seconds; retry after ${state.resetSeconds} seconds`,
        { limit: state.limit, window_seconds: RATE_LIMIT_WINDOW_SECONDS, retry_after: state.resetSeconds },
        { 'Retry-After': String(state.resetSeconds) },
      );
    }
    let auth = g.contexts.get(key);
    if (!auth) {
      auth = authContextOf(key);
      g.contexts.set(key, auth);
    }
    const { operation } = res.locals;
    if (!operation) throw notFound(`No endpoint ${req.method} ${req.baseUrl + req.path}`);
    checkScopes(auth, operation);
    // A console call's context is its own (the cached one is shared by every call of the key).
    res.locals.auth = res.locals.viaConsole === true ? { ...auth, viaConsole: true } : auth;
    res.locals.refundRateLimit = refundOf(g, key);
  } catch (err) {
    next(err);
    return;
  }
  next();
}

function limiterFailed(g: GateParts, res: Response, next: NextFunction, err: unknown): void {
  if (err instanceof RateLimitUnavailableError) {
    g.logger.error({ err: err.cause, requestId: res.locals.requestId }, 'rate limiter unavailable');
    next(serverError());
    return;
  }
  next(err);
}

/**
 * The 401, or a 429 once the caller IP is over AUTH_FAILURES_PER_IP. Only failures count, so a valid
 * key from the same IP still passes; without Redis the 401 stands (the bound is only a protection).
 */
function refuse(g: GateParts, req: Request, res: Response, next: NextFunction, err: unknown): void {
  if (!g.failures || !(err instanceof ApiError) || err.code !== 'authentication_failed') {
    next(err);
    return;
  }
  g.failures.fail(callerBucket(req.ip)).then(
    (state) => {
      if (!state.exceeded) {
        next(err);
        return;
      }
      next(
        new ApiError(
          'rate_limit_exceeded',
          `Too many failed authentications from this IP address: at most ${state.limit} per ${state.windowSeconds} seconds; retry after ${state.retryAfter} seconds`,
          { reason: 'auth_failures_per_ip', limit: state.limit, window_seconds: state.windowSeconds, retry_after: state.retryAfter },
          { 'Retry-After': String(state.retryAfter) },
        ),
      );
    },
    (cause: unknown) => {
      g.logger.warn({ err: cause, requestId: res.locals.requestId }, 'failed-authentication counter unavailable');
      next(err);
    },
  );
}

/** Steps 1b to 4 for the row the presented key's hash found; `next` exactly once. */
function admit(
  g: GateParts,
  req: Request,
  res: Response,
  next: NextFunction,
  found: StoredKey | undefined,
  presented: PresentedKey,
  at: Date,
  started: number,
  consoleCookie?: string,
): void {
  let key: StoredKey;
  try {
    key = verifiedKey(found, presented, at);
  } catch (err) {
    refuse(g, req, res, next, err);
    return;
  }

  g.apiLog.touch(key.id, at);
  const ip = req.ip;
  res.once('finish', () => {
    g.apiLog.record({
      at,
      apiKeyId: key.id,
      brokerId: key.broker.id,
      mode: key.mode,
      method: req.method,
      path: pathOf(req.originalUrl),
      status: res.statusCode,
      ip: displayIp(ip),
      durationMs: Math.round(performance.now() - started),
      requestId: String(res.locals.requestId ?? ''),
      operation: res.locals.operation?.operationId ?? null,
      ...loggedError(res.locals.error),
      idempotencyReplayed: res.locals.idempotencyReplayed === true,
      viaConsole: consoleCookie !== undefined,
    });
  });

  try {
    if (consoleCookie !== undefined) checkConsoleCall(req, res, consoleCookie);
    checkIp(key, ip);
  } catch (err) {
    void headersWithoutCounting(res, g.limiter, key, g.logger).then(() => next(err));
    return;
  }

  // A busy key's request is counted from this process's block without a wait; otherwise Redis.
  let state: RateLimitState | undefined;
  try {
    state = g.limiter.tryConsume(key.id, key.rateLimit);
  } catch (err) {
    limiterFailed(g, res, next, err);
    return;
  }
  if (state) {
    afterCount(g, req, res, next, key, state);
    return;
  }
  g.limiter.consume(key.id, key.rateLimit).then(
    (counted) => afterCount(g, req, res, next, key, counted),
    (err: unknown) => limiterFailed(g, res, next, err),
  );
}


/**
 * 1. authentication (401) · 2. IP whitelist (403) · 3. rate limit (429, still counted) · 4. scope (403).
 * A request refused at step 2 uses none of the key's quota, so a leaked key used from elsewhere
 * cannot starve its owner.
 */
export function createGate(deps: GateDeps): Gate {
  const { logger } = deps;
  const now = deps.now ?? (() => new Date());
  const keys = createKeyStore(deps.prisma, deps.keyCacheMs ?? DEFAULT_KEY_CACHE_MS, deps.negativeCache);
  const limiter = createKeyRateLimiter(deps.redis);
  const failures = deps.authFailures ? createAuthFailureLimiter(deps.redis, deps.authFailures) : undefined;
  const apiLog = createApiLog(deps.prisma, logger, deps.apiLog);
  const contexts = new WeakMap<StoredKey, AuthContext>();
  const refunds = new WeakMap<StoredKey, (res: Response) => void>();

  const g: GateParts = { logger, limiter, failures, apiLog, contexts, refunds };

  /** Steps 1b to 4 for the key `presented` names: its row from the cache, else looked up; `next` exactly once. */
  const admitKey = (req: Request, res: Response, next: NextFunction, presented: PresentedKey, at: Date, started: number, cookie?: string): void => {
    const cached = keys.cached(presented.hash);
    if (cached) {
      admit(g, req, res, next, cached, presented, at, started, cookie);
      return;
    }
    keys.findByHash(presented.hash).then(
      (found) => admit(g, req, res, next, found, presented, at, started, cookie),
      (err: unknown) => next(err),
    );
  };

  /** Step 1 for a console call: the session's cookie names a started, unexpired session and its key. */
  const viaConsole = (req: Request, res: Response, next: NextFunction, cookie: string, at: Date, started: number): void => {
    findConsoleSession(deps.prisma, cookieHashOf(cookie)).then(
      (session) => {
        if (!session) return refuse(g, req, res, next, authFailed('Invalid console session: open a new console link'));
        if (session.expiresAt.getTime() <= at.getTime()) {
          return refuse(g, req, res, next, authFailed('This console session has expired: open a new console link'));
        }
        admitKey(req, res, next, { hash: session.keyHash, claimedMode: session.mode }, at, started, cookie);
      },
      (err: unknown) => next(err),
    );
  };

  // Not async: a cached key counted from this process's block passes without a microtask turn.
  const gate: RequestHandler = (req, res, next) => {
    const started = performance.now();
    const at = now();
    // The key itself always wins: a console cookie is read only from a request without one.
    if (req.headers.authorization === undefined) {
      const cookie = consoleCookie(req);
      if (cookie !== undefined) {
        viaConsole(req, res, next, cookie, at, started);
        return;
      }
    }
    let presented: PresentedKey;
    try {
      presented = presentedKey(req);
    } catch (err) {
      refuse(g, req, res, next, err);
      return;
    }
    admitKey(req, res, next, presented, at, started);
  };

  return {
    gate,
    apiLog: { flush: apiLog.flush, close: apiLog.close, pending: apiLog.pending },
    keys: {
      invalidate: keys.invalidate,
      get unknownCount() {
        return keys.unknownCount;
      },
    },
  };
}
