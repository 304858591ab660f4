/** The generated login and password of a new service. */
import { randomString } from '../shared/random.ts';

/** No look-alikes (0/O, 1/l/I), and only symbols that need no quoting in shells, URLs or e-mail. */
export const PASSWORD_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789-_.!@';
export const GENERATED_PASSWORD_LENGTH = 20;

/** Control panels commonly require an upper-case letter, a lower-case one and a digit: a draw without them is thrown away. */
export function generatePassword(length = GENERATED_PASSWORD_LENGTH): string {
  for (;;) {
    const out = randomString(PASSWORD_ALPHABET, length);
    if (/[A-Z]/.test(out) && /[a-z]/.test(out) && /[0-9]/.test(out)) return out;
  }
}

/** The login of a generated VPS: its administrator account. */
export const SERVICE_USERNAME = 'root';
