/**
 * Endpoint signing secrets in the Standard Webhooks format: `whsec_` and the base64 of the key,
 * the form receivers paste into their `standardwebhooks` (or Svix) library as it is.
 */
import { randomBytes } from 'node:crypto';

/** The spec asks for keys of 24 to 64 bytes; 32 is HMAC-SHA256's own block of strength. */
const SECRET_BYTES = 32;

export const SECRET_PREFIX = 'whsec_';

/** A new random endpoint secret, `whsec_` + base64 (with padding) of 32 random bytes. */
export function newEndpointSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}
