/**
 * API keys and download tokens never reach a log line or a record (src/logger.ts removes the
 * `Authorization` header). Text is read as a person would: percent-encoding (once or more) and `+`
 * decoded, letters in any case. A key is any spelling of its prefix (`_`, `-`, `.`, white space,
 * other separators or none between `sk`, the mode and the secret) and everything after it to the end
 * of its path segment or query value, whatever was put into the secret (`%0A`, `-`, a soft hyphen).
 * Any run of id characters as long as a key's secret is one too, prefix or not (no id of the
 * contract is, but for a report's UUID). When anything is found, the decoded text is logged, scrubbed.
 */
// Not `[` or `]`, so that `sk_live_[redacted]` is never matched again.
const SEPARATOR = '(?:%[0-9a-f]{2}|[^a-z0-9?&=#[\\]]){0,6}';
/** After the prefix, everything to the end of its segment or value: `/`, `?`, `&` or `#` (decodedInPlace keeps escaped ones escaped). */
const KEY_LIKE = new RegExp(`sk${SEPARATOR}(live|test)${SEPARATOR}[^/?&#]+`, 'gi');
const KEY_PREFIX_LIKE = new RegExp(`sk${SEPARATOR}(?:live|test)`, 'i');
/** A key's secret: 32 letters and digits (src/auth/keys.ts); a download token is longer. */
const SECRET_LENGTH = 32;
const SECRET_LIKE = new RegExp(`[A-Za-z0-9_-]{${SECRET_LENGTH},}`, 'g');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A run that ends in a redacted key's prefix (keyRedacted's, glued to longer text) keeps it: its mode stays readable. */
function secretRedacted(run: string): string {
  if (UUID.test(run)) return run;
  const prefix = /sk_(?:live|test)_$/.exec(run);
  return prefix ? `[redacted]${prefix[0]}` : '[redacted]';
}

/**
 * Whether `text` may hold a key at all: an `sk` (any case), a `%` or `+` (decoding may make one)
 * or a run of SECRET_LENGTH id characters. Every request's path and query pass here, so this
 * is one pass without a regex: a regex with that run in an alternation is much slower.
 */
function mayHoldKey(text: string): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const lower = c | 0x20;
    if ((c >= 0x30 && c <= 0x39) || (lower >= 0x61 && lower <= 0x7a) || c === 0x5f /* _ */ || c === 0x2d /* - */) {
      if (++run >= SECRET_LENGTH || (lower === 0x73 /* s */ && (text.charCodeAt(i + 1) | 0x20) === 0x6b /* k */)) return true;
    } else if (c === 0x25 /* % */ || c === 0x2b /* + */) {
      return true;
    } else {
      run = 0;
    }
  }
  return false;
}

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

/** The key's mode stays readable; the rest of its spelling and the secret go. */
const keyRedacted = (_match: string, mode: string): string => `sk_${mode.toLowerCase()}_[redacted]`;

function scrubbedAsIs(text: string): string {
  return text.replace(KEY_LIKE, keyRedacted).replace(SECRET_LIKE, secretRedacted);
}

/** An escape that decodes to a segment's or value's end, kept escaped by decodedInPlace. */
const DELIMITER_ESCAPES: Record<string, string> = { '/': '%2F', '?': '%3F', '&': '%26', '#': '%23' };

/**
 * `text` decoded as `decoded` does, but an escape that decodes to `/`, `?`, `&` or `#` stays
 * escaped: the decoded text has the segments and values of the text as sent, so a key's
 * redaction ends where its segment ends (a `%2F` in the secret does not split it).
 */
function decodedInPlace(text: string): string {
  let current = text;
  for (let i = 0; i < MAX_DECODES && /%[0-9A-Fa-f]{2}|\+/.test(current); i++) {
    const next = current.replace(/\+/g, ' ').replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      let plain: string;
      try {
        plain = decodeURIComponent(run);
      } catch {
        // Not UTF-8 as a whole (a lone `%C2`): each ASCII escape alone.
        plain = run.replace(/%[0-7][0-9A-Fa-f]/g, (escape) => decodeURIComponent(escape));
      }
      return plain.replace(/[/?&#]/g, (c) => DELIMITER_ESCAPES[c]!);
    });
    if (next === current) break;
    current = next;
  }
  return current;
}

export function scrubSecrets(text: string): string {
  return mayHoldKey(text) ? scrubSecretsFully(text) : text;
}

/** scrubSecrets without its first test (mayHoldKey), which test/ops/redact-fast-path.test.ts holds equal to it. */
export function scrubSecretsFully(text: string): string {
  const raw = scrubbedAsIs(text);
  const plain = decodedInPlace(raw);
  if (plain === raw) return raw;
  const scrubbed = scrubbedAsIs(plain);
  return scrubbed === plain ? raw : scrubbed;
}

/** The link path of a report download (src/reports/links.ts DOWNLOAD_PATH), however a client spelled it. */
const DOWNLOAD_LIKE = /^[/\\]*downloads[/\\]+reports[/\\]+[^/\\]/i;
const DOWNLOAD_REDACTED = '/downloads/reports/[redacted]';

/**
 * A URL path as a log line or record may show it: a report download's token (it downloads the
 * workbook, so it is a secret too) as `[redacted]`, with whatever follows it; then scrubSecrets.
 */
export function scrubPath(path: string): string {
  if (DOWNLOAD_LIKE.test(path) || (path.includes('%') && DOWNLOAD_LIKE.test(decoded(path)))) return DOWNLOAD_REDACTED;
  return scrubSecrets(path);
}

/** Text that may be base64 or base64url of a key (`sk_live_` encodes to at least 11 characters). */
const BASE64_LIKE = /^[A-Za-z0-9+/_-]{11,}={0,2}$/;

function decodesToKey(value: string): boolean {
  if (!BASE64_LIKE.test(value)) return false;
  const text = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1');
  return KEY_PREFIX_LIKE.test(text);
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
  return plainUrl(url, known) ? url : scrubUrlFully(url, known);
}

/** Under BASE64_LIKE's 11 characters no value decodes to a key. */
const SHORTEST_BASE64_KEY = 11;

/**
 * The first test of scrubUrl, before any decoding or splitting: nothing escaped or `+`, no `sk`, no
 * run of a secret's length (mayHoldKey), no download path, and every query parameter one of the
 * operation's own with a value too short to be base64 of a key. Such a URL scrubUrlFully returns as
 * it is (test/ops/redact-fast-path.test.ts holds the two equal on generated URLs).
 */
function plainUrl(url: string, known: ReadonlySet<string>): boolean {
  if (mayHoldKey(url)) return false;
  const q = url.indexOf('?');
  if (DOWNLOAD_LIKE.test(q === -1 ? url : url.slice(0, q))) return false;
  if (q === -1) return true;
  for (let start = q + 1; start <= url.length; ) {
    let end = url.indexOf('&', start);
    if (end === -1) end = url.length;
    const eq = url.indexOf('=', start);
    if (eq !== -1 && eq < end && (end - eq - 1 >= SHORTEST_BASE64_KEY || !known.has(url.slice(start, eq)))) return false;
    start = end + 1;
  }
  return true;
}

/** scrubUrl without its first test (plainUrl). */
export function scrubUrlFully(url: string, known: ReadonlySet<string> = new Set()): string {
  const q = url.indexOf('?');
  if (q === -1) return scrubPath(url);
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
  return `${scrubPath(url.slice(0, q))}?${scrubSecrets(query)}`;
}

/** Clean texts a cachedScrub keeps; past this many it starts again (a busy client asks for the same few). */
const CLEAN_KEPT = 256;

/**
 * `scrub`, with the texts it returned unchanged remembered, so the same clean path or URL on the
 * next request skips the decoding and the regexes. A text that needed scrubbing is never kept (nor
 * is what it held), so every request that carries a secret is scrubbed again.
 */
export function cachedScrub(scrub: (text: string) => string): (text: string) => string {
  const clean = new Set<string>();
  return (text) => {
    if (clean.has(text)) return text;
    const scrubbed = scrub(text);
    if (scrubbed === text) {
      if (clean.size >= CLEAN_KEPT) clean.clear();
      clean.add(text);
    }
    return scrubbed;
  };
}

/** A key's prefix in any spelling (separators or none, any case), and the same spelled backwards. */
const PREFIX_SPELLED = /sk[^a-z0-9]{0,6}(?:live|test)/gi;
const PREFIX_REVERSED = /(?:evil|tset)[^a-z0-9]{0,6}ks/gi;
/** Letters and digits beside a prefix that make it a key: half a secret (fewer leave too much unknown to matter). */
const PREFIX_BODY = SECRET_LENGTH / 2;
/** The hex of a secret, and the unpadded base64url of one (32 bytes). */
const HEX_RUN = 2 * SECRET_LENGTH;
const BASE64URL_RUN = Math.ceil((SECRET_LENGTH * 4) / 3);

const isAlnum = (c: number): boolean => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);
const isHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
const isBase64url = (c: number): boolean => isAlnum(c) || c === 0x5f /* _ */ || c === 0x2d; /* - */

function alnumCount(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (isAlnum(text.charCodeAt(i))) n++;
  return n;
}

/** A prefix spelling with half a secret's letters and digits after it (before it, spelled backwards). */
function prefixWithBody(text: string): boolean {
  for (const m of text.matchAll(PREFIX_SPELLED)) if (alnumCount(text, m.index + m[0].length, text.length) >= PREFIX_BODY) return true;
  for (const m of text.matchAll(PREFIX_REVERSED)) if (alnumCount(text, 0, m.index) >= PREFIX_BODY) return true;
  return false;
}

/** Runs of `is` characters at least `min` long, as [start, end) pairs. */
function runs(text: string, is: (c: number) => boolean, min: number): Array<[number, number]> {
  const found: Array<[number, number]> = [];
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && is(text.charCodeAt(i))) {
      if (start === -1) start = i;
    } else if (start !== -1) {
      if (i - start >= min) found.push([start, i]);
      start = -1;
    }
  }
  return found;
}

/** A run of a secret's length of letters and digits, but for hex digits only (a UUID without dashes, a trace id). */
function secretShaped(text: string): boolean {
  for (const [start, end] of runs(text, isAlnum, SECRET_LENGTH)) {
    for (let i = start; i < end; i++) if (!isHex(text.charCodeAt(i))) return true;
  }
  return false;
}

/** The separators of a request id (src/http/request-id.ts), which a secret may be split by. */
const isIdSeparator = (c: number): boolean => c === 0x2e /* . */ || c === 0x5f /* _ */ || c === 0x3a /* : */ || c === 0x2d; /* - */

/**
 * A secret split by separators (`pPmD-oZmx…`): a run of letters, digits and separators with a
 * secret's length of letters and digits, not all hex, upper- and lower-case letters among them (a
 * random secret has both but for odds of 1 in 10^7; hex ids, `req_` ids and kebab-case names have one case).
 */
function separatedSecret(text: string): boolean {
  let alnum = 0;
  let upper = false;
  let lower = false;
  let nonHex = false;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : -1;
    if (c !== -1 && isAlnum(c)) {
      alnum++;
      if (c >= 0x41 && c <= 0x5a) upper = true;
      else if (c >= 0x61 && c <= 0x7a) lower = true;
      if (!isHex(c)) nonHex = true;
    } else if (c === -1 || !isIdSeparator(c)) {
      if (alnum >= SECRET_LENGTH && upper && lower && nonHex) return true;
      alnum = 0;
      upper = lower = nonHex = false;
    }
  }
  return false;
}

const plainlyKey = (text: string): boolean => prefixWithBody(text) || secretShaped(text) || separatedSecret(text);

const ANY_PREFIX = /sk[^a-z0-9]{0,6}(?:live|test)|(?:evil|tset)[^a-z0-9]{0,6}ks/i;

/** Per ASCII code: 1 a letter or digit, 2 a hex digit, 4 a base64url character, 8 upper case, 16 lower case, 32 a `k`. */
const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  const letter = (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a;
  CLASS[c] = (isAlnum(c) ? 1 : 0) | (isHex(c) ? 2 : 0) | (isBase64url(c) ? 4 : 0) | (letter && c < 0x61 ? 8 : 0) | (letter && c >= 0x61 ? 16 : 0) | ((c | 0x20) === 0x6b ? 32 : 0);
}

/**
 * One pass without allocation for the ordinary id (a UUID, `req_` and 32 hex digits), which holds
 * no run long enough to be a secret (but for hex digits), its hex or its base64url, not a secret's
 * length of letters and digits in both cases, and no `k` for a prefix: every request with an id of
 * its own passes here.
 */
function mayBeKeyShaped(text: string): boolean {
  let seen = 0;
  let total = 0;
  let alnum = 0;
  let lastNonHex = -1;
  let base64url = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const kind = c < 128 ? CLASS[c]! : 0;
    seen |= kind;
    if (kind & 1) {
      total++;
      alnum++;
      if (!(kind & 2)) lastNonHex = i;
      // A secret's length with a letter past f in it, or a secret's hex.
      if (alnum >= SECRET_LENGTH && (lastNonHex > i - alnum || alnum >= HEX_RUN)) return true;
    } else alnum = 0;
    if (kind & 4) {
      if (++base64url >= BASE64URL_RUN) return true;
    } else base64url = 0;
  }
  return (total >= SECRET_LENGTH && (seen & 24) === 24) || ((seen & 32) !== 0 && ANY_PREFIX.test(text));
}

/**
 * Whether a value a client chose (a request id) holds a key in some spelling (issue 40 item 2): as
 * it is or backwards, a prefix spelling (`sk`, `live` or `test`, any case, up to 6 separators or
 * none between) with 16 or more letters and digits after it; a run of 32 or more letters and digits
 * not all hex (a secret without its prefix); 32 or more letters and digits split only by `.`, `_`,
 * `:` or `-`, not all hex, in both letter cases (a secret split up); or any of these in what a run of
 * 64 or more hex digits or of 43 or more base64url characters decodes to (the hex or the unpadded
 * base64url of a key or a secret). UUIDs, W3C trace ids, `req_` ids and hex digests are kept.
 */
export function holdsKey(text: string): boolean {
  if (!mayBeKeyShaped(text)) return false;
  if (plainlyKey(text)) return true;
  for (const [start, end] of runs(text, isHex, HEX_RUN)) {
    for (const shift of [0, 1]) if (plainlyKey(Buffer.from(text.slice(start + shift, end), 'hex').toString('latin1'))) return true;
  }
  for (const [start, end] of runs(text, isBase64url, BASE64URL_RUN)) {
    for (const shift of [0, 1, 2, 3]) if (plainlyKey(Buffer.from(text.slice(start + shift, end), 'base64url').toString('latin1'))) return true;
  }
  return false;
}
