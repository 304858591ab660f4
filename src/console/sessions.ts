/**
 * Console links and the sessions they start (openapi.yaml, "Console"). Only SHA-256 hashes of the
 * link's token and of the session's cookie are stored; the gate reads sessions back
 * (src/auth/console-sessions.ts).
 */
import { hash, randomBytes } from 'node:crypto';
import { cookieHashOf, csrfTokenOf, findConsoleSession } from '../auth/console-sessions.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** A link opens a session for this long after it is made, once. */
export const LINK_LIFETIME_MS = 10 * 60_000;
/** A session lasts at most this long after it starts. */
export const SESSION_LIFETIME_MS = 60 * 60_000;

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

/**
 * Starts the session of the link whose token is `token`, if the link is unused and unexpired and
 * its key valid. One conditional UPDATE: of two browsers opening the same link, one wins.
 */
export async function startConsoleSession(prisma: ReadClient, token: string, now: Date): Promise<StartedSession | undefined> {
  if (!TOKEN_PATTERN.test(token)) return undefined;
  const cookie = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + SESSION_LIFETIME_MS);
  const { count } = await prisma.consoleSession.updateMany({
    where: {
      startTokenHash: sha256(token),
      startedAt: null,
      linkExpiresAt: { gt: now },
      apiKey: { active: true, revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
    },
    data: { startedAt: now, cookieHash: cookieHashOf(cookie), expiresAt },
  });
  return count === 1 ? { cookie, expiresAt } : undefined;
}

/** Sessions and links over a day past their end: nothing reads them any more. */
export async function deleteEndedConsoleSessions(prisma: ReadClient, now: Date): Promise<number> {
  const before = new Date(now.getTime() - 24 * 60 * 60_000);
  const { count } = await prisma.consoleSession.deleteMany({
    where: { OR: [{ expiresAt: { lt: before } }, { startedAt: null, linkExpiresAt: { lt: before } }] },
  });
  return count;
}

/** Whether `token` names a link that would start a session now (the start page's check; uses nothing up). */
export async function linkOpens(prisma: ReadClient, token: string, now: Date): Promise<boolean> {
  if (!TOKEN_PATTERN.test(token)) return false;
  const row = await prisma.consoleSession.findFirst({
    where: { startTokenHash: sha256(token), startedAt: null, linkExpiresAt: { gt: now }, apiKey: { active: true, revokedAt: null } },
    select: { id: true },
  });
  return row !== null;
}

/** What the console's page shows of its session: whose console, in which mode, until when. */
export interface ConsoleSessionView {
  csrfToken: string;
  mode: 'live' | 'test';
  brokerName: string;
  expiresAt: Date;
}

/** The started, unexpired session of a request's cookie with a valid key, or undefined. */
export async function consoleSessionOf(prisma: ReadClient, cookie: string | undefined, now: Date): Promise<ConsoleSessionView | undefined> {
  if (cookie === undefined) return undefined;
  const session = await findConsoleSession(prisma, cookieHashOf(cookie));
  if (!session || session.expiresAt <= now) return undefined;
  const key = await prisma.apiKey.findUnique({
    where: { keyHash: session.keyHash },
    select: { active: true, revokedAt: true, expiresAt: true, broker: { select: { name: true } } },
  });
  if (!key || !key.active || key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= now)) return undefined;
  return { csrfToken: csrfTokenOf(cookie), mode: session.mode, brokerName: key.broker.name, expiresAt: session.expiresAt };
}
