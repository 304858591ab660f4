import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { knownHeader, setKnownHeader } from './known-headers.ts';

/** A client's own id is kept only if it is short and plain, so it is safe in headers and logs. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Something shaped like an API key is never echoed or logged, even as a request id. */
const LOOKS_LIKE_KEY = /sk_(live|test)_/i;

/** `req_` and 32 hex digits: a random UUID without its dashes (sliced: a regex replace cost more). */
function newRequestId(): string {
  const u = randomUUID();
  return `req_${u.slice(0, 8)}${u.slice(9, 13)}${u.slice(14, 18)}${u.slice(19, 23)}${u.slice(24)}`;
}

export function requestIdOf(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  return given !== undefined && SANE_REQUEST_ID.test(given) && !LOOKS_LIKE_KEY.test(given)
    ? given
    : newRequestId();
}

/** Its value is SANE_REQUEST_ID's characters only. */
const REQUEST_ID = knownHeader('X-Request-Id');

export const requestId: RequestHandler = (req, res, next) => {
  const id = requestIdOf(req.headers['x-request-id']);
  res.locals.requestId = id;
  setKnownHeader(res, REQUEST_ID, id);
  next();
};
