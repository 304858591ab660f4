/**
 * Random strings and numbers for identifiers, keys and passwords. All randomness comes from
 * node:crypto (never Math.random), so none of them can be predicted.
 */
import { randomBytes, randomInt } from 'node:crypto';

export const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * `length` characters drawn uniformly from `alphabet` (at most 256 characters). Bytes are drawn
 * by rejection sampling: a byte is used only when it falls below the largest multiple of the
 * alphabet's size, so every character is equally likely.
 */
export function randomString(alphabet: string, length: number): string {
  const size = alphabet.length;
  const limit = 256 - (256 % size);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % size];
      if (out.length === length) break;
    }
  }
  return out;
}

/** A uniformly drawn integer in [min, max] (both included). */
export function randomIntBetween(min: number, max: number): number {
  return randomInt(min, max + 1);
}
