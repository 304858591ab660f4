import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import type { Config } from '../config.ts';
import type { AuthContext } from '../http/auth-context.ts';
import { hasScope } from '../http/auth-context.ts';
import type { OperationInfo } from '../http/contract.ts';
import { ApiError, notFound, serviceUnavailable } from '../http/errors.ts';
import type { Logger } from '../logger.ts';
import { cachedScrub, scrubPath } from '../ops/redact.ts';
import { createApiLog, loggedError, type ApiLog, type ApiLogOptions } from './api-log.ts';
import { callerBucket, displayIp } from './ip-whitelist.ts';
import { createAuthFailureLimiter, type AuthFailureLimiter, type AuthFailureLimits } from './auth-failures.ts';
import { createKeyStore, type KeyStore, type NegativeCacheOptions, type StoredKey } from './key-store.ts';
import { createConsoleSessions, csrfTokenMatches, type ConsoleRefusal, type ConsoleSessionOptions, type ConsoleSessions } from './console-sessions.ts';
import { bearerToken, hashApiKey, hashesEqual, isScope, modeOfKey, type KeyMode } from './keys.ts';
import { createKeyRateLimiter, RATE_LIMIT_WINDOW_SECONDS, setRateLimitHeaders, type KeyRateLimiter, type RateLimitState } from './rate-limit.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export interface GateDeps {
  prisma: ReadClient;
  /** The fail-fast request client (src/redis.ts requestRedis). */
  redis: Redis;
  logger: Logger;
  /** How long a key row may be reused in process; 0 looks every request up (default 2000 ms). */
  keyCacheMs?: number;
  /** Unknown keys remembered briefly (default: off; the runtime passes the configured one). */
  negativeCache?: NegativeCacheOptions;
  /** The opt-in bound on failed authentications per caller IP (default: off). */
  authFailures?: AuthFailureLimits;
  /** API processes sharing the limits (RATE_LIMIT_API_PROCESSES): while Redis is unusable each allows its share (default 1). */
  apiProcesses?: number;
  /** API log buffering (flush interval and size threshold). */
  apiLog?: ApiLogOptions;
  /** Console sessions: HTTPS by PUBLIC_BASE_URL, the per-IP bound and negative cache of unknown cookies. */
  console?: Omit<ConsoleSessionOptions, 'now'>;
  /** Clock, for tests of expiry (console sessions' idle and absolute ends too). */
  now?: () => Date;
}

/** Methods that change nothing: a console call of any other needs the session's CSRF token. */
const SAFE_METHODS = new Set(['GET', 'HEAD']);

export interface Gate {
  /** Authentication, IP whitelist, rate limit, scope check and API logging, in that order. */
  gate: RequestHandler;
  apiLog: Pick<ApiLog, 'flush' | 'close' | 'pending'>;
  keys: Pick<KeyStore, 'invalidate' | 'unknownCount'>;
  /** The console sessions this gate reads, for the console's own pages (src/console) to read the same way. */
  consoleSessions: ConsoleSessions;
}

/** The gate's settings from the configuration (KEY_NEGATIVE_CACHE_*, AUTH_FAILURES_*). */
export function gateSettings(config: Config): Pick<GateDeps, 'negativeCache' | 'authFailures' | 'apiProcesses' | 'console'> {
  return {
    console: { httpsBaseUrl: new URL(config.publicBaseUrl).protocol === 'https:' },
    apiProcesses: config.rateLimitApiProcesses,
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

/** The refusal of a request over its key's limit (or its process's share while Redis is unusable). */
function rateLimitExceeded(state: RateLimitState): ApiError {
  return new ApiError(
    'rate_limit_exceeded',
    `Rate limit exceeded: this API key allows ${state.limit} requests per ${RATE_LIMIT_WINDOW_SECONDS} seconds; retry after ${state.resetSeconds} seconds`,
    { limit: state.limit, window_seconds: RATE_LIMIT_WINDOW_SECONDS, retry_after: state.resetSeconds },
    { 'Retry-After': String(state.resetSeconds) },
  );
}

/** What one gate works with, made once. */
interface GateParts {
  prisma: ReadClient;
  logger: Logger;
  keys: KeyStore;
  limiter: KeyRateLimiter;
  failures: AuthFailureLimiter | undefined;
  apiLog: ApiLog;
  /** One context per cached key row (read-only for the handlers), not one per request. */
  contexts: WeakMap<StoredKey, AuthContext>;
  /** One rate-limit refund per cached key row, as the contexts. */
  refunds: WeakMap<StoredKey, (res: Response) => void>;
  consoleSessions: ConsoleSessions;
}

const SESSION_ENDED: Record<ConsoleRefusal, string> = {
  unknown: 'Invalid console session: open a new console link',
  used: 'Invalid console session: open a new console link',
  expired: 'This console session has expired (a session lasts an hour): open a new console link',
  idle: 'This console session has expired after 30 minutes without use: open a new console link',
  signed_out: 'This console session was signed out: open a new console link',
};

/**
 * Step 1 for a console call: the session's cookie names a started session that has not ended, and
 * its key. An IP over the console's bound on unknown cookies is refused before any look-up.
 */
async function sessionKey(g: GateParts, cookie: string, ip: string | undefined, at: Date): Promise<PresentedKey> {
  const session = await g.consoleSessions.find(cookie, ip, at);
  if ('limited' in session) {
    const { retryAfter, limit, windowSeconds } = session.limited;
    throw new ApiError(
      'rate_limit_exceeded',
      `Too many unknown or ended console sessions from this IP address: at most ${limit} per ${windowSeconds} seconds; retry after ${retryAfter} seconds`,
      { reason: 'auth_failures_per_ip', limit, window_seconds: windowSeconds, retry_after: retryAfter },
      { 'Retry-After': String(retryAfter) },
    );
  }
  if ('refused' in session) throw authFailed(SESSION_ENDED[session.refused]);
  return { hash: session.found.keyHash, claimedMode: session.found.mode };
}

/**
 * The 401, or a 429 once the caller IP is over AUTH_FAILURES_PER_IP. Only failures count, so a
 * valid key from the same IP still passes; the counter never turns a 401 into an outage's answer.
 */
async function refusal(g: GateParts, err: unknown, req: Request, res: Response): Promise<unknown> {
  if (!g.failures || !(err instanceof ApiError) || err.code !== 'authentication_failed') return err;
  try {
    const state = await g.failures.fail(callerBucket(req.ip));
    if (!state.exceeded) return err;
    return new ApiError(
      'rate_limit_exceeded',
      `Too many failed authentications from this IP address: at most ${state.limit} per ${state.windowSeconds} seconds; retry after ${state.retryAfter} seconds`,
      { reason: 'auth_failures_per_ip', limit: state.limit, window_seconds: state.windowSeconds, retry_after: state.retryAfter },
      { 'Retry-After': String(state.retryAfter) },
    );
  } catch (cause) {
    g.logger.warn({ err: cause, requestId: res.locals.requestId }, 'failed-authentication counter unavailable');
    return err;
  }
}

/** Every answer of an authenticated request goes to the API log once it is sent. */
function logAnswer(g: GateParts, req: Request, res: Response, key: StoredKey, at: Date, started: number, viaConsole: boolean): void {
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
      viaConsole,
    });
  });
}

/** Step 2's refusal still says where the key stands, without counting the request. */
async function headersWithoutCounting(g: GateParts, res: Response, key: StoredKey): Promise<void> {
  try {
    setRateLimitHeaders(res, await g.limiter.peek(key.id, key.rateLimit));
  } catch (err) {
    g.logger.warn({ err }, 'rate limit state unavailable for a refused request');
  }
}

/** What a `304` calls: the request's unit of rate limit back, and the headers saying so. */
function refundOf(g: GateParts, key: StoredKey, counted: RateLimitState): (res: Response) => void {
  const give = (counter?: RateLimitState) => (res: Response) => {
    const state = g.limiter.refund(key.id, key.rateLimit, counter);
    if (state) setRateLimitHeaders(res, state);
  };
  // A request counted by the insurance has one of its own; one counted from a block shares the key's.
  if (counted.insured) return give(counted);
  let refund = g.refunds.get(key);
  if (!refund) {
    refund = give();
    g.refunds.set(key, refund);
  }
  return refund;
}

function contextOf(g: GateParts, key: StoredKey): AuthContext {
  let auth = g.contexts.get(key);
  if (!auth) {
    auth = authContextOf(key);
    g.contexts.set(key, auth);
  }
  return auth;
}

/**
 * One admission, top to bottom; `next` exactly once. It awaits only what it does not hold yet
 * (`x ?? await y`), so a cached key counted from this process's block reaches `next()` in the
 * caller's tick, without a microtask turn (bench/README.md).
 */
async function admit(g: GateParts, req: Request, res: Response, next: NextFunction, at: Date): Promise<void> {
  const started = performance.now();

  // 1. Authentication (401): the key presented; a console cookie is read only from a request without one.
  const cookie = req.headers.authorization === undefined ? g.consoleSessions.cookieOf(req) : undefined;
  let key: StoredKey;
  try {
    const presented = cookie === undefined ? presentedKey(req) : await sessionKey(g, cookie, req.ip, at);
    key = verifiedKey(g.keys.cached(presented.hash) ?? (await g.keys.findByHash(presented.hash)), presented, at);
  } catch (err) {
    next(await refusal(g, err, req, res));
    return;
  }
  g.apiLog.touch(key.id, at);
  logAnswer(g, req, res, key, at, started, cookie !== undefined);

  // 2. IP whitelist (403), and a console call's CSRF token: refused uncounted, with the headers.
  try {
    if (cookie !== undefined) checkConsoleCall(req, res, cookie);
    checkIp(key, req.ip);
  } catch (err) {
    await headersWithoutCounting(g, res, key);
    next(err);
    return;
  }

  // 3. Rate limit (429, counted too): this process's block, else Redis, else (Redis unusable) the insurance.
  let state: RateLimitState;
  try {
    state = g.limiter.tryConsume(key.id, key.rateLimit) ?? (await g.limiter.consume(key.id, key.rateLimit));
  } catch (err) {
    g.logger.error({ err, requestId: res.locals.requestId }, 'rate limiter failed');
    next(serviceUnavailable());
    return;
  }
  setRateLimitHeaders(res, state);
  if (state.exceeded) {
    next(rateLimitExceeded(state));
    return;
  }

  // 4. Scope (403) of the operation the router found (404 for none).
  const auth = contextOf(g, key);
  const { operation } = res.locals;
  if (!operation) {
    next(notFound(`No endpoint ${req.method} ${req.baseUrl + req.path}`));
    return;
  }
  try {
    checkScopes(auth, operation);
  } catch (err) {
    next(err);
    return;
  }
  // A console call's context is its own (the cached one is shared by every call of the key).
  res.locals.auth = cookie !== undefined ? { ...auth, viaConsole: true } : auth;
  res.locals.refundRateLimit = refundOf(g, key, state);
  next();
}

/**
 * 1. authentication (401) · 2. IP whitelist (403) · 3. rate limit (429, still counted) · 4. scope (403).
 * A request refused at step 2 uses none of the key's quota, so a leaked key used from elsewhere
 * cannot starve its owner.
 */
export function createGate(deps: GateDeps): Gate {
  const { logger, prisma } = deps;
  const now = deps.now ?? (() => new Date());
  const keys = createKeyStore(prisma, deps.keyCacheMs ?? DEFAULT_KEY_CACHE_MS, deps.negativeCache);
  const apiLog = createApiLog(prisma, logger, deps.apiLog);
  const g: GateParts = {
    prisma,
    logger,
    keys,
    limiter: createKeyRateLimiter(deps.redis, { apiProcesses: deps.apiProcesses }),
    failures: deps.authFailures ? createAuthFailureLimiter(deps.redis, deps.authFailures, deps.apiProcesses) : undefined,
    apiLog,
    contexts: new WeakMap(),
    refunds: new WeakMap(),
    consoleSessions: createConsoleSessions(prisma, { ...deps.console, now }),
  };
  const gate: RequestHandler = (req, res, next) => {
    admit(g, req, res, next, now()).catch((err: unknown) => logger.error({ err, requestId: res.locals.requestId }, 'request admission failed after next()'));
  };
  return {
    gate,
    apiLog: { flush: apiLog.flush, close: apiLog.close, pending: apiLog.pending },
    consoleSessions: g.consoleSessions,
    keys: {
      invalidate: keys.invalidate,
      get unknownCount() {
        return keys.unknownCount;
      },
    },
  };
}
