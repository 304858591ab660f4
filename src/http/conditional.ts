/**
 * Conditional reads (RFC 9110, section 13.1.2): every `200` of a `GET` carries an `ETag`, and a
 * `GET` whose `If-None-Match` names it is answered `304` with no body. Billing panels poll; a
 * `304` spares them the body and, as GitHub's does, a unit of the key's rate limit.
 */
import { hash } from 'node:crypto';
import type { Request, Response } from 'express';
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

/**
 * Puts the `ETag` of a `GET`'s `200` answer on the response; true when the request's
 * `If-None-Match` names it, and then the request's unit of rate limit is given back: the caller
 * answers `304`.
 */
export function notModified(req: Request, res: Response, answer: TaggedBody): boolean {
  const tag = answer.etag ?? entityTag(answer.body);
  setKnownHeader(res, ETAG, tag);
  const header = req.headers['if-none-match'];
  if (header === undefined || !noneMatch(header, tag)) return false;
  res.locals.refundRateLimit?.(res);
  return true;
}
