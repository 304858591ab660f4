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

/** Text that may be base64 or base64url of a key (`sk_live_` encodes to at least 11 characters). */
const BASE64_LIKE = /^[A-Za-z0-9+/_-]{11,}={0,2}$/;

function decodesToKey(value: string): boolean {
  if (!BASE64_LIKE.test(value)) return false;
  const text = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1');
  return /sk_(?:live|test)_/i.test(text);
}

function decodedOnce(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * A URL as a log line may show it: the values of query parameters outside `known` (the
 * operation's own parameters; none off the API) are left out, since nothing says what they hold
 * (a key in base64, a customer's data); a known parameter's value that decodes from base64 or
 * base64url to a key is left out too; then scrubSecrets.
 */
export function scrubUrl(url: string, known: ReadonlySet<string> = new Set()): string {
  const q = url.indexOf('?');
  if (q === -1) return scrubSecrets(url);
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) return pair;
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      if (!known.has(decodedOnce(name)) || decodesToKey(decoded(value))) return `${name}=[redacted]`;
      return pair;
    })
    .join('&');
  return scrubSecrets(`${url.slice(0, q)}?${query}`);
}
