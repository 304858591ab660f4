/**
 * API keys never reach a log line. The logger's redact paths (src/logger.ts) remove the
 * `Authorization` header and key-named fields; this catches a key written where it does not
 * belong (a query string like `?api_key=sk_live_…`), keeping only its mode.
 *
 * Text is matched as it would be read: percent-encoding (also applied twice or more) and `+` for a
 * space are decoded first, letters in any case, and a key glued to other text (`_sk_live_…`) is
 * still a key. When anything is found, the decoded text is what gets logged, scrubbed.
 */
const KEY_LIKE = /(sk_(?:live|test)_)[A-Za-z0-9]+/gi;
const MAX_DECODES = 5;

function decoded(text: string): string {
  let current = text;
  for (let i = 0; i < MAX_DECODES && /%[0-9A-Fa-f]{2}|\+/.test(current); i++) {
    let next: string;
    try {
      next = decodeURIComponent(current.replace(/\+/g, ' '));
    } catch {
      // A stray `%` makes the whole text invalid: decode the valid escapes one by one.
      next = current.replace(/\+/g, ' ').replace(/(%[0-9A-Fa-f]{2})+/g, (run) => {
        try {
          return decodeURIComponent(run);
        } catch {
          return run;
        }
      });
    }
    if (next === current) break;
    current = next;
  }
  return current;
}

export function scrubSecrets(text: string): string {
  const raw = text.replace(KEY_LIKE, '$1[redacted]');
  const plain = decoded(raw);
  if (plain === raw) return raw;
  const scrubbed = plain.replace(KEY_LIKE, '$1[redacted]');
  return scrubbed === plain ? raw : scrubbed;
}
