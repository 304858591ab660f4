/** Request ids are `REQ-` + the row id padded to six digits; paths accept any case and padding. */
import { BASE62, randomIntBetween, randomString } from './random.ts';

export const SERVICE_NUMBER_MIN = 100_000_000;
export const SERVICE_NUMBER_MAX = 999_999_999;

/** The largest value PostgreSQL's `integer` column holds; anything above cannot exist. */
export const MAX_INT4 = 2_147_483_647;

/** A random nine-digit service number (100000000..999999999). Uniqueness is the caller's retry. */
export function randomServiceNumber(): number {
  return randomIntBetween(SERVICE_NUMBER_MIN, SERVICE_NUMBER_MAX);
}

/** A random six-digit number for sandbox request ids (never stored). */
export function randomSandboxRequestNumber(): number {
  return randomIntBetween(100_000, 999_999);
}

const REQUEST_ID = /^req-([0-9]+)$/i;

export function formatRequestId(id: number): string {
  return `REQ-${String(id).padStart(6, '0')}`;
}

/** A number too large for the database is still a well-formed id: it does not exist, a 404 (`isStorableRequestId`). */
export function parseRequestId(text: string): bigint | undefined {
  const match = REQUEST_ID.exec(text.trim());
  return match ? BigInt(match[1]!) : undefined;
}

export function isStorableRequestId(id: bigint): boolean {
  return id >= 1n && id <= BigInt(MAX_INT4);
}

/** `REQ-` + the digits of a parsed id, padded to six (for ids that are not stored, e.g. sandbox). */
export function canonicalRequestId(id: bigint): string {
  return `REQ-${id.toString().padStart(6, '0')}`;
}

/** `prefix` + `length` uniformly drawn base62 characters (20 ≈ 119 bits): `brk_…`, `key_…`. */
export function randomId(prefix: string, length = 20): string {
  return prefix + randomString(BASE62, length);
}
