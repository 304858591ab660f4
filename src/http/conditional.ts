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

/**
 * Puts the `ETag` of a `GET`'s `200` answer on the response; true when the request's
 * `If-None-Match` names it, by Express's `req.fresh` (the `fresh` package: a list of tags, `*`,
 * and the weak comparison RFC 9110 asks for), which also gives the request's unit of rate limit
 * back: the caller then answers `304`.
 */
export function notModified(req: Request, res: Response, answer: TaggedBody): boolean {
  const tag = answer.etag ?? entityTag(answer.body);
  setKnownHeader(res, ETAG, tag);
  if (req.headers['if-none-match'] === undefined || !req.fresh) return false;
  res.locals.refundRateLimit?.(res);
  return true;
}
