/** The generated login and password of a new service. */
import { randomString } from '../shared/random.ts';

/**
 * Letters and digits without look-alikes (0/O, 1/l/I), plus a few symbols that need no quoting
 * in shells, URLs or e-mail: 61 characters → about 5.9 bits each, 20 characters ≈ 118 bits.
 */
export const PASSWORD_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789-_.!@';
export const GENERATED_PASSWORD_LENGTH = 20;

/**
 * A strong random password, every character equally likely. It always holds an upper-case
 * letter, a lower-case letter and a digit, which control panels commonly require; a draw
 * without them is thrown away.
 */
export function generatePassword(length = GENERATED_PASSWORD_LENGTH): string {
  for (;;) {
    const out = randomString(PASSWORD_ALPHABET, length);
    if (/[A-Z]/.test(out) && /[a-z]/.test(out) && /[0-9]/.test(out)) return out;
  }
}

/** The login of a generated VPS: its administrator account. */
export const SERVICE_USERNAME = 'root';
