import { hash, timingSafeEqual } from 'node:crypto';
import { BASE62, randomString } from '../shared/random.ts';

export { isScope, SCOPES, type Scope } from '../shared/scopes.ts';
export type KeyMode = 'live' | 'test';

const PREFIX: Record<KeyMode, string> = { live: 'sk_live_', test: 'sk_test_' };
const SECRET_LENGTH = 32;
/** The shape of every key we issue; anything else is refused before a database look-up. */
export const KEY_PATTERN = /^sk_(live|test)_[A-Za-z0-9]{32}$/;

/** 32 random base62 characters cannot be brute-forced, so a fast unsalted hash will do, and it is indexable. */
export function hashApiKey(key: string): string {
  // One-shot: no Hash object per request (the gate hashes every request's key).
  return hash('sha256', key, 'hex');
}

/** Constant-time comparison of two hex digests (a stored hash against a computed one). */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}

export interface NewApiKey {
  /** Shown once, at creation; never stored. */
  key: string;
  hash: string;
  /** The first 12 characters (`sk_live_AbCd`), safe to display to identify a key. */
  prefix: string;
  last4: string;
}

export function generateApiKey(mode: KeyMode): NewApiKey {
  const key = PREFIX[mode] + randomString(BASE62, SECRET_LENGTH);
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 12), last4: key.slice(-4) };
}

/** The mode a key's prefix claims, or undefined for a malformed key. */
export function modeOfKey(key: string): KeyMode | undefined {
  const match = KEY_PATTERN.exec(key);
  return match ? (match[1] as KeyMode) : undefined;
}

/** The token of an `Authorization: Bearer <key>` header, or undefined when absent or malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
