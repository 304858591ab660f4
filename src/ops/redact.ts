/**
 * API keys never reach a log line. The logger's redact paths (src/logger.ts) remove the
 * `Authorization` header and key-named fields; this catches a key written where it does not
 * belong (a query string like `?api_key=sk_live_…`), keeping only its mode.
 */
const KEY_LIKE = /\b(sk_(?:live|test)_)[A-Za-z0-9]+/g;

export function scrubSecrets(text: string): string {
  return text.replace(KEY_LIKE, '$1[redacted]');
}
