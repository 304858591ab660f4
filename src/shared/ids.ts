/** Request ids are `REQ-` + the row id padded to six digits; paths accept any case and padding. */
import { createHash } from 'node:crypto';
import { BASE62, randomIntBetween, randomString } from './random.ts';

export const SERVICE_NUMBER_MIN = 100_000_000;
export const SERVICE_NUMBER_MAX = 999_999_999;

/** The largest value PostgreSQL's `integer` column holds; anything above cannot exist. */
export const MAX_INT4 = 2_147_483_647;

/** A random nine-digit service number (100000000..999999999). Uniqueness is the caller's retry. */
export function randomServiceNumber(): number {
  return randomIntBetween(SERVICE_NUMBER_MIN, SERVICE_NUMBER_MAX);
}

/**
 * What a sandbox request asks for, told by its id's last digit (openapi.yaml "Identifiers"), since
 * the sandbox stores nothing: 6 upgrade, 7 downgrade, 8 cancel now, 9 cancel at the end of the
 * billing period, any other digit create. Every id decodes, generated or not.
 */
export type SandboxRequestKind = 'create' | 'upgrade' | 'downgrade' | 'cancel_immediate' | 'cancel_end_of_billing_period';

const KIND_DIGIT: Record<Exclude<SandboxRequestKind, 'create'>, number> = {
  upgrade: 6,
  downgrade: 7,
  cancel_immediate: 8,
  cancel_end_of_billing_period: 9,
};

/** A random six-digit number for a sandbox request id (never stored) whose last digit tells `kind`. */
export function randomSandboxRequestNumber(kind: SandboxRequestKind = 'create'): number {
  const last = kind === 'create' ? randomIntBetween(0, 5) : KIND_DIGIT[kind];
  return randomIntBetween(10_000, 99_999) * 10 + last;
}

export function sandboxRequestKind(id: bigint): SandboxRequestKind {
  const last = Number(id % 10n);
  const kind = (Object.keys(KIND_DIGIT) as Array<keyof typeof KIND_DIGIT>).find((k) => KIND_DIGIT[k] === last);
  return kind ?? 'create';
}

/** The nine-digit service number a sandbox approval of `id` names when nothing tells another: the same for the same id. */
export function sandboxServiceNumberOf(id: bigint): number {
  const digest = createHash('sha256').update(canonicalRequestId(id)).digest();
  return SERVICE_NUMBER_MIN + (digest.readUInt32BE(0) % (SERVICE_NUMBER_MAX - SERVICE_NUMBER_MIN + 1));
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
