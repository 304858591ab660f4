/**
 * Console links and the sessions they start (openapi.yaml, "Console"). Only SHA-256 hashes of the
 * link's token and of the session's cookie are stored; the gate reads sessions back
 * (src/auth/console-sessions.ts), and so do the pages here, through the same ConsoleSessions.
 */
import { hash, randomBytes } from 'node:crypto';
import { cookieHashOf, csrfTokenOf, SESSION_LIFETIME_MS, type ConsoleLookup, type ConsoleSessions } from '../auth/console-sessions.ts';
import { displayIp, IpWhitelist } from '../auth/ip-whitelist.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** A link opens a session for this long after it is made, once. */
export const LINK_LIFETIME_MS = 10 * 60_000;

const TOKEN_PREFIX = 'cst_';
/** 32 random bytes in base64url: the shape of every link token; anything else is refused unread. */
const TOKEN_PATTERN = /^cst_[A-Za-z0-9_-]{43}$/;

const sha256 = (text: string): string => hash('sha256', text, 'hex');

export interface ConsoleLink {
  token: string;
  expiresAt: Date;
}

/** A new single-use link for the key `apiKeyId`: its token is shown once, in the link. */
export async function createConsoleLink(prisma: ReadClient, apiKeyId: string, now: Date): Promise<ConsoleLink> {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + LINK_LIFETIME_MS);
  await prisma.consoleSession.create({ data: { apiKeyId, startTokenHash: sha256(token), linkExpiresAt: expiresAt, createdAt: now } });
  return { token, expiresAt };
}

export interface StartedSession {
  /** The session cookie's value: set once in the browser, never stored. */
  cookie: string;
  expiresAt: Date;
}

/** What the console's pages need to know of a caller: where it is, and when. */
export interface ConsoleCaller {
  ip: string | undefined;
  at: Date;
}

/** A key's IP whitelist refused the caller: the console's pages answer as the API would (403). */
export interface IpRefused {
  ipRefused: string;
}

/** The key conditions of a link or session that still works at `now`. */
const validKey = (now: Date) => ({ active: true, revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] });

const KEY_CHECK = { select: { ipRestricted: true, ipWhitelist: true } } as const;

/** Undefined when the key answers `ip` (as the gate's step 2), else the refusal. */
function ipCheck(key: { ipRestricted: boolean; ipWhitelist: string[] }, ip: string | undefined): IpRefused | undefined {
  if (!key.ipRestricted || new IpWhitelist(key.ipWhitelist).allows(ip)) return undefined;
  return { ipRefused: displayIp(ip) };
}

/**
 * Whether `token` names a link that would start a session for this caller now (the start page's
 * check; uses nothing up). A link that opens nothing is remembered and counted against the IP.
 */
export async function linkOpens(prisma: ReadClient, sessions: ConsoleSessions, token: string, caller: ConsoleCaller): Promise<ConsoleLookup<undefined> | IpRefused> {
  const tokenHash = sha256(token);
  const admitted = await sessions.admit(tokenHash, caller.ip);
  if (!('found' in admitted)) return admitted;
  if (!TOKEN_PATTERN.test(token)) return sessions.refuse(tokenHash, caller.ip, 'unknown');
  const row = await prisma.consoleSession.findFirst({
    where: { startTokenHash: tokenHash, startedAt: null, linkExpiresAt: { gt: caller.at }, apiKey: validKey(caller.at) },
    select: { apiKey: KEY_CHECK },
  });
  if (row === null) return sessions.refuse(tokenHash, caller.ip, 'used');
  return ipCheck(row.apiKey, caller.ip) ?? { found: undefined };
}

/**
 * Starts the session of the link whose token is `token`, if the link is unused and unexpired, its
 * key valid and answering this caller's IP. One conditional UPDATE: of two browsers opening the
 * same link, one wins.
 */
export async function startConsoleSession(prisma: ReadClient, sessions: ConsoleSessions, token: string, caller: ConsoleCaller): Promise<ConsoleLookup<StartedSession> | IpRefused> {
  const opens = await linkOpens(prisma, sessions, token, caller);
  if (!('found' in opens)) return opens;
  const { at } = caller;
  const cookie = randomBytes(32).toString('base64url');
  const expiresAt = new Date(at.getTime() + SESSION_LIFETIME_MS);
  const { count } = await prisma.consoleSession.updateMany({
    where: { startTokenHash: sha256(token), startedAt: null, linkExpiresAt: { gt: at }, apiKey: validKey(at) },
    data: { startedAt: at, lastSeenAt: at, cookieHash: cookieHashOf(cookie), expiresAt },
  });
  if (count !== 1) return sessions.refuse(sha256(token), caller.ip, 'used');
  return { found: { cookie, expiresAt } };
}

/** Sessions and links over a day past their end: nothing reads them any more. */
export async function deleteEndedConsoleSessions(prisma: ReadClient, now: Date): Promise<number> {
  const before = new Date(now.getTime() - 24 * 60 * 60_000);
  const { count } = await prisma.consoleSession.deleteMany({
    where: { OR: [{ expiresAt: { lt: before } }, { startedAt: null, linkExpiresAt: { lt: before } }] },
  });
  return count;
}

/** What the console's page shows of its session: whose console, in which mode, until when. */
export interface ConsoleSessionView {
  csrfToken: string;
  mode: 'live' | 'test';
  brokerName: string;
  expiresAt: Date;
}

/**
 * The session of a request's cookie, as the gate would admit it (not ended, its key valid and
 * answering the caller's IP), or why not; undefined without a cookie.
 */
export async function consoleSessionOf(
  prisma: ReadClient,
  sessions: ConsoleSessions,
  cookie: string | undefined,
  caller: ConsoleCaller,
): Promise<ConsoleLookup<ConsoleSessionView> | IpRefused | undefined> {
  if (cookie === undefined) return undefined;
  const session = await sessions.find(cookie, caller.ip, caller.at);
  if (!('found' in session)) return session;
  const key = await prisma.apiKey.findUnique({
    where: { keyHash: session.found.keyHash },
    select: { active: true, revokedAt: true, expiresAt: true, ...KEY_CHECK.select, broker: { select: { name: true } } },
  });
  if (!key || !key.active || key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= caller.at)) return { refused: 'expired' };
  const refused = ipCheck(key, caller.ip);
  if (refused) return refused;
  return { found: { csrfToken: csrfTokenOf(cookie), mode: session.found.mode, brokerName: key.broker.name, expiresAt: session.found.expiresAt } };
}
