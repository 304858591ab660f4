/**
 * Console sessions as credentials (openapi.yaml, "Console"): the cookie a console link sets stands
 * for the key that made the link. Only the SHA-256 of the cookie is stored, as for keys.
 */
import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import { parseCookie } from 'cookie';
import type { Request } from 'express';
import type { KeyMode } from './keys.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** `__Host-` (RFC 6265bis): a cookie only a secure page of this host, path `/`, could have set. */
export const SECURE_COOKIE = '__Host-console_session';
/** Over plain HTTP (local development) the prefix cannot be used. */
export const PLAIN_COOKIE = 'console_session';

/** The session's cookie value, or undefined when the request carries none. */
export function consoleCookie(req: Request): string | undefined {
  const header = req.headers.cookie;
  if (header === undefined || !header.includes('console_session')) return undefined;
  const cookies = parseCookie(header);
  return cookies[SECURE_COOKIE] ?? cookies[PLAIN_COOKIE];
}

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

/** The started session whose cookie hashes to `cookieHash`, or undefined. */
export async function findConsoleSession(prisma: ReadClient, cookieHash: string): Promise<ConsoleSessionKey | undefined> {
  const row = await prisma.consoleSession.findUnique({
    where: { cookieHash },
    select: { expiresAt: true, apiKey: { select: { keyHash: true, mode: true } } },
  });
  if (!row || row.expiresAt === null) return undefined;
  return { keyHash: row.apiKey.keyHash, mode: row.apiKey.mode, expiresAt: row.expiresAt };
}
