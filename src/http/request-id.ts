import { randomFillSync } from 'node:crypto';
import type { RequestHandler } from 'express';
import { holdsKey } from '../ops/redact.ts';
import { knownHeader, setKnownHeader } from './known-headers.ts';

/** A client's own id is kept only if it is short and plain, so it is safe in headers and logs. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Random bytes for 256 ids, filled again when used up: one native call a request, not a UUID's five slices. */
const ID_BYTES = 16;
const pool = Buffer.alloc(ID_BYTES * 256);
let used = pool.length;

/** `req_` and 32 hex digits: 128 random bits (a quarter of the UUID-based id's cost in bench/README.md). */
function newRequestId(): string {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  used += ID_BYTES;
  return `req_${pool.toString('hex', used - ID_BYTES, used)}`;
}

/**
 * The client's id when it is sane and holds no key in any spelling (holdsKey: its hex, base64url,
 * backwards, without its prefix); else one of ours. Such an id is never echoed, logged or stored.
 */
export function requestIdOf(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  return given !== undefined && SANE_REQUEST_ID.test(given) && !holdsKey(given) ? given : newRequestId();
}

/** Its value is SANE_REQUEST_ID's characters only. */
const REQUEST_ID = knownHeader('X-Request-Id');

export const requestId: RequestHandler = (req, res, next) => {
  const id = requestIdOf(req.headers['x-request-id']);
  res.locals.requestId = id;
  setKnownHeader(res, REQUEST_ID, id);
  next();
};
