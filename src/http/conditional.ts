/**
 * Conditional reads (RFC 9110, section 13.1.2): every `200` of a `GET` carries an `ETag`, and a
 * `GET` whose `If-None-Match` names it is answered `304` with no body. Billing panels poll; a
 * `304` spares them the body and, as GitHub's does, a unit of the key's rate limit.
 */
import { hash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { knownHeader, setKnownHeader } from './known-headers.ts';

const ETAG = knownHeader('ETag');

/**
 * A strong validator: a digest of the body's exact bytes, so any change to them (a record, a page,
 * a count) changes the tag, and the same bytes always give the same tag, on every API process.
 * SHA-1 as Express's own ETags: a fingerprint, not a secret (the caller holds the body anyway).
 */
export function entityTag(body: string | Buffer): string {
  return `"${hash('sha1', body, 'base64url')}"`;
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

/** `GET`, or `HEAD`, which is a `GET` without its body (RFC 9110, section 9.3.2): conditional alike. */
export const isRead = (method: string): boolean => method === 'GET' || method === 'HEAD';

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
   * Puts the `ETag` of a `GET`'s `200` on the response; true when the request's `If-None-Match`
   * names it, and then the request's unit of rate limit is given back: the caller answers `304`.
   */
  notModified(req: Request, res: Response, answer: TaggedBody): boolean;
}

/** What a request's answer depends on besides the key: its exact URL (path and query string). */
function rememberedAs(req: Request, keyId: string): string | undefined {
  // A sandbox test scenario changes the answer, and is for trying errors, not polling.
  return req.headers['x-test-scenario'] === undefined ? `${keyId} ${req.originalUrl}` : undefined;
}

export function createConditionalReads(): ConditionalReads {
  const remembered = new Map<string, Remembered>();

  const answer304 = (res: Response, etag: string): void => {
    setKnownHeader(res, ETAG, etag);
    res.locals.refundRateLimit?.(res);
  };

  return {
    shortcut(req, res, next) {
      const header = req.headers['if-none-match'];
      const auth = res.locals.auth;
      if (!isRead(req.method) || header === undefined || !auth) return next();
      const key = rememberedAs(req, auth.keyId);
      const tag = key === undefined ? undefined : remembered.get(key);
      if (!tag || !tag.fresh() || !noneMatch(header, tag.etag)) return next();
      answer304(res, tag.etag);
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
      const header = req.headers['if-none-match'];
      if (header === undefined || !noneMatch(header, etag)) {
        setKnownHeader(res, ETAG, etag);
        return false;
      }
      answer304(res, etag);
      return true;
    },
  };
}
