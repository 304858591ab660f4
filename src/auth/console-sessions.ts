/**
 * Console sessions as credentials (openapi.yaml, "Console"): the cookie a console link sets stands
 * for the key that made the link. Only the SHA-256 of the cookie is stored, as for keys.
 *
 * One ConsoleSessions per process reads them for the gate, the console's shell and its links: it
 * decides whether the console is served over HTTPS (which cookie is read and set), ends sessions
 * idle for 30 minutes, and remembers cookies and link tokens that opened nothing (a bounded
 * in-memory negative cache; a session or link that ended never comes back, so this is always
 * safe), counting each against a per-IP bound so that made-up cookies cost no look-up past it.
 */
import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import { parseCookie, stringifySetCookie } from 'cookie';
import type { Request } from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { callerBucket } from './ip-whitelist.ts';
import type { KeyMode } from './keys.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** `__Host-` (RFC 6265bis): a cookie only a secure page of this host, path `/`, could have set. */
export const SECURE_COOKIE = '__Host-console_session';
/** Over plain HTTP (local development) the prefix cannot be used. */
export const PLAIN_COOKIE = 'console_session';

/** A session lasts at most this long after it starts. */
export const SESSION_LIFETIME_MS = 60 * 60_000;
/** A session not used for this long has ended. */
export const SESSION_IDLE_MS = 30 * 60_000;
/** A session's last use is written at most this often (so the idle end comes up to this much early). */
const SEEN_EVERY_MS = 60_000;

export const cookieHashOf = (cookie: string): string => hash('sha256', cookie, 'hex');

/**
 * The session's CSRF token, derived from its cookie: a page of another origin can neither read the
 * HttpOnly cookie nor, therefore, compute the token; nothing more needs storing.
 */
export function csrfTokenOf(cookie: string): string {
  return createHmac('sha256', cookie).update('client-api-v1 console csrf').digest('base64url');
}

export function csrfTokenMatches(cookie: string, sent: string | undefined): boolean {
  if (sent === undefined) return false;
  const expected = Buffer.from(csrfTokenOf(cookie));
  const given = Buffer.from(sent);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** What the gate needs of a started session: the key it stands for, and its end. */
export interface ConsoleSessionKey {
  keyHash: string;
  mode: KeyMode;
  expiresAt: Date;
}

/** Why a cookie or link opens nothing; each is for good (a made-up value never becomes real). */
export type ConsoleRefusal = 'unknown' | 'expired' | 'idle' | 'signed_out' | 'used';

/** The answer of a look-up: what was found, why nothing was, or that the caller's IP is over its bound. */
export type ConsoleLookup<T> = { found: T } | { refused: ConsoleRefusal } | { limited: { retryAfter: number; limit: number; windowSeconds: number } };

export interface ConsoleSessionOptions {
  /** PUBLIC_BASE_URL is `https:`: the console is served over HTTPS whatever the socket says. */
  httpsBaseUrl?: boolean;
  /** Unknown or ended cookies and link tokens one caller IP (IPv6: its /64) may present per minute (default 30). */
  failuresPerIpPerMinute?: number;
  /** How long such a value is remembered (default 10 minutes), and how many at most (default 10,000). */
  unknownTtlMs?: number;
  unknownSize?: number;
  /** Clock, for tests of the idle and absolute ends. */
  now?: () => Date;
}

export interface ConsoleSessions {
  readonly now: () => Date;
  /** Whether this request reaches the console over HTTPS: then only the `__Host-` cookie is read and set. */
  secure(req: Request): boolean;
  /** The session cookie's value, or undefined when the request carries none (of the name in use). */
  cookieOf(req: Request): string | undefined;
  /** The `Set-Cookie` value that sets `cookie` (or, undefined, removes it) for this request's scheme. */
  setCookie(req: Request, cookie: string | undefined): string;
  /** The started session of `cookie`, not ended at `at` (its last use recorded), or why not. */
  find(cookie: string, ip: string | undefined, at: Date): Promise<ConsoleLookup<ConsoleSessionKey>>;
  /** Ends the session of `cookie` at `at` (sign out); false when it had no session to end. */
  signOut(cookie: string, at: Date): Promise<boolean>;
  /** Before looking `hash` (a link token's) up: the caller's IP over its bound, or `hash` known to open nothing. */
  admit(hash: string, ip: string | undefined): Promise<ConsoleLookup<undefined>>;
  /** `hash` opened nothing, for good: remembered, and counted against the caller's IP. */
  refuse(hash: string, ip: string | undefined, why: ConsoleRefusal): Promise<ConsoleLookup<never>>;
  /** How many refused values are remembered now. */
  readonly unknownCount: number;
}

const WINDOW_SECONDS = 60;

/** Refused values, one TTL for all so insertion order is expiry order (as the key store's UnknownKeys). */
class Refused {
  private readonly until = new Map<string, { until: number; why: ConsoleRefusal }>();

  constructor(private readonly ttlMs: number, private readonly max: number) {}

  get size(): number {
    return this.until.size;
  }

  get(hash: string): ConsoleRefusal | undefined {
    const hit = this.until.get(hash);
    if (hit === undefined) return undefined;
    if (hit.until > Date.now()) return hit.why;
    this.until.delete(hash);
    return undefined;
  }

  remember(hash: string, why: ConsoleRefusal): void {
    if (this.ttlMs <= 0 || this.max <= 0) return;
    this.until.delete(hash);
    while (this.until.size >= this.max) {
      const oldest = this.until.keys().next().value;
      if (oldest === undefined) break;
      this.until.delete(oldest);
    }
    this.until.set(hash, { until: Date.now() + this.ttlMs, why });
  }
}

interface SessionRow {
  expiresAt: Date | null;
  startedAt: Date | null;
  lastSeenAt: Date | null;
  signedOutAt: Date | null;
  apiKey: { keyHash: string; mode: KeyMode };
}

/** Why a started session no longer stands at `at`, or undefined while it does. */
function endOf(row: SessionRow, at: Date): ConsoleRefusal | undefined {
  if (row.expiresAt === null || row.startedAt === null) return 'unknown';
  if (row.signedOutAt !== null) return 'signed_out';
  if (row.expiresAt.getTime() <= at.getTime()) return 'expired';
  if ((row.lastSeenAt ?? row.startedAt).getTime() + SESSION_IDLE_MS <= at.getTime()) return 'idle';
  return undefined;
}

/**
 * Values that opened nothing, remembered, and the per-IP count of them: past the bound an IP's
 * console cookies and links are refused before any look-up (in memory: each process its own).
 */
class Unknowns {
  private readonly refused: Refused;
  private readonly failures: RateLimiterMemory;

  constructor(private readonly perIp: number, ttlMs: number, size: number) {
    this.refused = new Refused(ttlMs, size);
    this.failures = new RateLimiterMemory({ keyPrefix: 'console-failures', points: perIp, duration: WINDOW_SECONDS });
  }

  get size(): number {
    return this.refused.size;
  }

  private limited(msBeforeNext: number): ConsoleLookup<never> {
    return { limited: { retryAfter: Math.max(1, Math.ceil(msBeforeNext / 1000)), limit: this.perIp, windowSeconds: WINDOW_SECONDS } };
  }

  async admit(hash: string, ip: string | undefined): Promise<ConsoleLookup<undefined>> {
    const bucket = callerBucket(ip);
    const state = await this.failures.get(bucket);
    if (state !== null && state.consumedPoints >= this.perIp) return this.limited(state.msBeforeNext);
    const why = this.refused.get(hash);
    return why === undefined ? { found: undefined } : this.count(bucket, why);
  }

  refuse(hash: string, ip: string | undefined, why: ConsoleRefusal): Promise<ConsoleLookup<never>> {
    this.refused.remember(hash, why);
    return this.count(callerBucket(ip), why);
  }

  /** Remembered without counting (a sign-out is no failure). */
  remember(hash: string, why: ConsoleRefusal): void {
    this.refused.remember(hash, why);
  }

  private async count(bucket: string, why: ConsoleRefusal): Promise<ConsoleLookup<never>> {
    try {
      await this.failures.consume(bucket);
      return { refused: why };
    } catch (err) {
      if (err instanceof RateLimiterRes) return this.limited(err.msBeforeNext);
      throw err;
    }
  }
}

export function createConsoleSessions(prisma: ReadClient, options: ConsoleSessionOptions = {}): ConsoleSessions {
  const now = options.now ?? (() => new Date());
  const httpsBaseUrl = options.httpsBaseUrl === true;
  const unknowns = new Unknowns(options.failuresPerIpPerMinute ?? 30, options.unknownTtlMs ?? 10 * 60_000, options.unknownSize ?? 10_000);
  const admit = unknowns.admit.bind(unknowns);
  const refuse = unknowns.refuse.bind(unknowns);
  const secure = (req: Request) => httpsBaseUrl || req.secure;

  return {
    now,
    secure,
    cookieOf(req) {
      const header = req.headers.cookie;
      if (header === undefined || !header.includes('console_session')) return undefined;
      // Over HTTPS only the prefixed cookie: a sibling subdomain can plant `console_session`, not `__Host-`.
      return parseCookie(header)[secure(req) ? SECURE_COOKIE : PLAIN_COOKIE];
    },
    setCookie(req, cookie) {
      const https = secure(req);
      // `__Host-` needs Secure, which a browser keeps only from an HTTPS answer.
      return stringifySetCookie(https ? SECURE_COOKIE : PLAIN_COOKIE, cookie ?? '', {
        httpOnly: true,
        sameSite: 'strict',
        path: '/',
        secure: https,
        maxAge: cookie === undefined ? 0 : SESSION_LIFETIME_MS / 1000,
      });
    },
    async find(cookie, ip, at) {
      const cookieHash = cookieHashOf(cookie);
      const admitted = await admit(cookieHash, ip);
      if (!('found' in admitted)) return admitted;
      const row = await prisma.consoleSession.findUnique({
        where: { cookieHash },
        select: { expiresAt: true, startedAt: true, lastSeenAt: true, signedOutAt: true, apiKey: { select: { keyHash: true, mode: true } } },
      });
      const ended = row ? endOf(row, at) : 'unknown';
      if (ended !== undefined || !row) return refuse(cookieHash, ip, ended ?? 'unknown');
      if ((row.lastSeenAt ?? row.startedAt!).getTime() + SEEN_EVERY_MS <= at.getTime()) {
        await prisma.consoleSession.updateMany({ where: { cookieHash, OR: [{ lastSeenAt: null }, { lastSeenAt: { lt: at } }] }, data: { lastSeenAt: at } });
      }
      return { found: { keyHash: row.apiKey.keyHash, mode: row.apiKey.mode, expiresAt: row.expiresAt! } };
    },
    async signOut(cookie, at) {
      const cookieHash = cookieHashOf(cookie);
      const { count: ended } = await prisma.consoleSession.updateMany({ where: { cookieHash, signedOutAt: null }, data: { signedOutAt: at } });
      unknowns.remember(cookieHash, 'signed_out');
      return ended === 1;
    },
    admit,
    refuse,
    get unknownCount() {
      return unknowns.size;
    },
  };
}
