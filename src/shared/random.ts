/** Keys and passwords come from here: node:crypto, never Math.random, so none can be predicted. */
import { randomBytes, randomInt } from 'node:crypto';

export const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Rejection sampling keeps every character equally likely (`alphabet` of at most 256 characters). */
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
