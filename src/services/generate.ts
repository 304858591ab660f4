/**
 * Generated values of a service: its public number, its login and its password. All randomness
 * comes from node:crypto (never Math.random), so numbers and passwords cannot be predicted.
 */
import { randomBytes, randomInt } from 'node:crypto';

export const SERVICE_NUMBER_MIN = 100_000_000;
export const SERVICE_NUMBER_MAX = 999_999_999;

/** A random nine-digit service number (100000000..999999999). Uniqueness is the caller's retry. */
export function randomServiceNumber(): number {
  return randomInt(SERVICE_NUMBER_MIN, SERVICE_NUMBER_MAX + 1);
}

/** A random six-digit number for sandbox request ids (never stored). */
export function randomSandboxRequestNumber(): number {
  return randomInt(100_000, 1_000_000);
}

/**
 * Letters and digits without look-alikes (0/O, 1/l/I), plus a few symbols that need no quoting
 * in shells, URLs or e-mail: 61 characters → about 5.9 bits each, 20 characters ≈ 118 bits.
 */
export const PASSWORD_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789-_.!@';
export const GENERATED_PASSWORD_LENGTH = 20;

/**
 * A strong random password. Bytes are drawn by rejection sampling (a byte is used only when it
 * falls below the largest multiple of the alphabet size), so every character is equally likely.
 * The result always holds an upper-case letter, a lower-case letter and a digit, which control
 * panels commonly require; a draw without them is thrown away.
 */
export function generatePassword(length = GENERATED_PASSWORD_LENGTH): string {
  const size = PASSWORD_ALPHABET.length;
  const limit = 256 - (256 % size);
  for (;;) {
    let out = '';
    while (out.length < length) {
      for (const byte of randomBytes(length * 2)) {
        if (byte < limit) out += PASSWORD_ALPHABET[byte % size];
        if (out.length === length) break;
      }
    }
    if (/[A-Z]/.test(out) && /[a-z]/.test(out) && /[0-9]/.test(out)) return out;
  }
}

/** The login of a generated VPS: its administrator account. */
export const SERVICE_USERNAME = 'root';
