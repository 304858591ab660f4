/**
 * Conditional reads (RFC 9110, section 13.1.2): every `200` of a `GET` carries an `ETag`, and a
 * `GET` whose `If-None-Match` names it is answered `304` with no body. Billing panels poll; a
 * `304` spares them the body and, when answered from a cached page without the query, a unit of the
 * key's rate limit (a `304` the query had to run for keeps its unit: the limit bounds the work).
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { knownHeader, setKnownHeader } from './known-headers.ts';

const ETAG = knownHeader('ETag');

/** The purpose string whose HMAC under the credentials key is the tag key (one key, many uses). */
const TAG_KEY_PURPOSE = 'capi entity tag key v1';

/**
 * The key of the entity tags: a process's own random one until the server derives it from the
 * credentials key, which every process on a database shares (checked by its fingerprint).
 */
let tagKey: Buffer = randomBytes(32);

/** Tags under a key derived from the credentials key: the same tag for the same body on every API process. */
export function useEntityTagSecret(credentialsKey: Buffer): void {
  tagKey = createHmac('sha256', credentialsKey).update(TAG_KEY_PURPOSE, 'utf8').digest();
  tagsOfBodies.clear();
}

/**
 * Tags of small one-off bodies already tagged, by the body's text: a polling client's auth-check
 * or resource answer repeats byte for byte, and a look-up costs a fraction of the HMAC (its share
 * of a request is in bench/README.md). Bounded in count and size; started over when full. The
 * bodies stay in this process's memory only, as the read cache's pages do.
 */
const tagsOfBodies = new Map<string, string>();
const TAGGED_BODIES_KEPT = 512;
const TAGGED_BODY_MAX_LENGTH = 4096;

/**
 * A strong validator: a keyed digest (HMAC-SHA256, 160 bits kept) of the body's exact bytes, so
 * any change to them changes the tag and the same bytes give the same tag on every API process.
 * Keyed, because a body may hold a service's password: an unkeyed hash seen in a proxy log would
 * let anyone test password guesses offline; without the key a tag tells nothing of the body.
 */
export function entityTag(body: string | Buffer): string {
  const small = typeof body === 'string' && body.length <= TAGGED_BODY_MAX_LENGTH;
  const known = small ? tagsOfBodies.get(body) : undefined;
  if (known !== undefined) return known;
  const tag = `"${createHmac('sha256', tagKey).update(body).digest().toString('base64url', 0, 20)}"`;
  if (small) {
    if (tagsOfBodies.size >= TAGGED_BODIES_KEPT) tagsOfBodies.clear();
    tagsOfBodies.set(body, tag);
  }
  return tag;
}

/** A `200` answer's body, and its tag when it was made with the body (a cached page's). */
export interface TaggedBody {
  body: string | Buffer;
  etag?: string;
  /** A cached page's: true while the page is still what this request would be answered. */
  fresh?: () => boolean;
}

/** An entity tag of a field value, `W/` or not (its opaque part has no `"`, RFC 9110 `etagc`). */
const ENTITY_TAG = /(?:W\/)?("[^"]*")/g;

/**
 * RFC 9110's If-None-Match on a current representation tagged `tag`: `*`, or a list of entity
 * tags one of which matches by weak comparison (`W/"x"` matches `"x"`). By hand, not Express's
 * `req.fresh`: that also answers stale to `Cache-Control: no-cache`, which fetch() adds to every
 * request that carries If-None-Match (the Fetch standard), so no fetch client would get a 304.
 */
function noneMatch(header: string, tag: string): boolean {
  // What a polling client sends back: the one tag it was given.
  if (header === tag) return true;
  if (header.trim() === '*') return true;
  const opaque = tag.startsWith('W/') ? tag.slice(2) : tag;
  for (const [, candidate] of header.matchAll(ENTITY_TAG)) if (candidate === opaque) return true;
  return false;
}

/** A `304`: the headers set so far, the ETag among them, and no body. */
export function sendNotModified(res: Response): void {
  res.status(304);
  res.end();
}

/** Tags remembered before the memory is started over (a bound, not a working-set size). */
const REMEMBERED_TAGS = 5000;

interface Remembered {
  etag: string;
  fresh: () => boolean;
}

export interface ConditionalReads {
  /**
   * The /api chain's step after the gate. A `GET` that repeats, with the same key, the exact URL of
   * a cached page's `200` and names its tag, while the page is fresh, is answered `304` here: that
   * URL passed validation when the page was made, and the page is what the operation would answer.
   */
  shortcut: RequestHandler;
  /**
   * Puts the `ETag` of a `GET`'s (or `HEAD`'s) `200` on the response; true when the request's
   * `If-None-Match` names it: the caller answers `304`. The unit of rate limit is kept (the query ran).
   */
  notModified(req: Request, res: Response, answer: TaggedBody): boolean;
}

/** A `GET`, or a `HEAD` (a `GET` without its body, conditional as the `GET` is). */
export function isRead(req: Request): boolean {
  return req.method === 'GET' || req.method === 'HEAD';
}

/** What a request's answer depends on besides the key: its exact URL (path and query string). */
function rememberedAs(req: Request, keyId: string): string | undefined {
  // A sandbox test scenario changes the answer, and is for trying errors, not polling.
  return req.headers['x-test-scenario'] === undefined ? `${keyId} ${req.originalUrl}` : undefined;
}

export function createConditionalReads(): ConditionalReads {
  const remembered = new Map<string, Remembered>();

  return {
    shortcut(req, res, next) {
      const header = req.headers['if-none-match'];
      const auth = res.locals.auth;
      if (!isRead(req) || header === undefined || !auth) return next();
      const key = rememberedAs(req, auth.keyId);
      const tag = key === undefined ? undefined : remembered.get(key);
      if (!tag || !tag.fresh() || !noneMatch(header, tag.etag)) return next();
      setKnownHeader(res, ETAG, tag.etag);
      // Answered without the operation's query: the unit is given back (openapi.yaml, "Conditional requests").
      res.locals.refundRateLimit?.(res);
      sendNotModified(res);
    },

    notModified(req, res, answer) {
      const etag = answer.etag ?? entityTag(answer.body);
      const auth = res.locals.auth;
      if (answer.fresh && auth) {
        const key = rememberedAs(req, auth.keyId);
        if (key !== undefined && remembered.get(key)?.fresh !== answer.fresh) {
          if (remembered.size >= REMEMBERED_TAGS) remembered.clear();
          remembered.set(key, { etag, fresh: answer.fresh });
        }
      }
      setKnownHeader(res, ETAG, etag);
      // A 304 here keeps its unit: the query ran to find the tag, so the rate limit bounds that work.
      const header = req.headers['if-none-match'];
      return header !== undefined && noneMatch(header, etag);
    },
  };
}
