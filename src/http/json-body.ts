import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { ApiError } from './errors.ts';

/**
 * What a request body may hold (openapi.yaml, "Order of checks", step 5). The widest body this
 * API takes has five fields, one array of recipients two levels down and at most a few KiB of
 * text (a 1,000-character reason written in `\u` escapes included), so each bound is far above
 * any accepted body; together they bound the cost of parsing and validating one body (the parse,
 * then per-key and per-item work in the validator), whatever a key sends.
 */
export const BODY_BOUNDS = {
  /** Bytes, decompressed (the operating contract refuses over 1 MiB; no accepted body comes near this). */
  bytes: 64 * 1024,
  /** Objects and arrays nested in one another, the top object included. */
  depth: 16,
  /** Object keys in the whole body. */
  keys: 64,
  /** Array items in the whole body. */
  items: 1000,
} as const;

export const BODY_TOO_LARGE = `Request body is larger than ${BODY_BOUNDS.bytes / 1024} KiB`;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** JSON's white space (RFC 8259): space, tab, LF, CR. */
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

const tooDeep = () => new ApiError('invalid_request', `Request body is nested more than ${BODY_BOUNDS.depth} levels deep`);
const tooManyKeys = () => new ApiError('invalid_request', `Request body has more than ${BODY_BOUNDS.keys} object keys`);
const tooManyItems = () => new ApiError('invalid_request', `Request body has more than ${BODY_BOUNDS.items} array items`);

/**
 * Counts nesting, keys and array items in one pass over the raw bytes, before anything parses
 * them, and stops at the first bound passed: a hostile body costs the bytes up to that point,
 * never a parse. Malformed JSON is left to the parser, which answers it.
 */
export function checkBodyShape(body: Buffer): void {
  let depth = 0;
  let keys = 0;
  let items = 0;
  let arrays = 0; // bit d set: the container at depth d is an array
  let arrayOpened = false; // the last token was `[`: the next value is the array's first item
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (isSpace(c)) continue;
    if (arrayOpened) {
      arrayOpened = false;
      if (c !== 0x5d /* ] */ && ++items > BODY_BOUNDS.items) throw tooManyItems();
    }
    if (c === QUOTE) {
      inString = true;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > BODY_BOUNDS.depth) throw tooDeep();
      arrays = c === 0x5b ? arrays | (1 << depth) : arrays & ~(1 << depth);
      arrayOpened = c === 0x5b;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (c === 0x3a /* : */) {
      if (++keys > BODY_BOUNDS.keys) throw tooManyKeys();
    } else if (c === 0x2c /* , */ && depth > 0 && (arrays & (1 << depth)) !== 0) {
      if (++items > BODY_BOUNDS.items) throw tooManyItems();
    }
  }
}

/**
 * Checks the raw bytes before anything parses them: UTF-8 (RFC 8259 JSON; body-parser would read
 * invalid bytes as U+FFFD), a JSON object at the top (the contract's rule for every POST, which
 * reads no other body), and the bounds of BODY_BOUNDS. An empty body is left to be read as `{}`.
 */
export function checkRawBody(body: Buffer, charset: string | null): void {
  if ((charset !== null && charset !== 'utf-8') || !isUtf8(body)) {
    throw new ApiError('invalid_request', 'Request body must be UTF-8 encoded JSON');
  }
  let i = 0;
  while (i < body.length && isSpace(body[i]!)) i++;
  if (body.length > 0 && body[i] !== 0x7b /* { */) throw new ApiError('invalid_request', 'Request body must be a JSON object');
  checkBodyShape(body);
}

/** The codings a body may come in (the contract's list), whatever else the running Node could decompress. */
const BODY_CODINGS = new Set(['identity', 'gzip', 'deflate', 'br']);

/** The answer to a body in a coding the contract does not offer. */
export function unsupportedCoding(header: string | undefined): ApiError {
  return new ApiError('invalid_request', `Content-Encoding ${String(header ?? '').slice(0, 40)} is not supported: send the body as it is, or gzip, deflate or br`);
}

/**
 * The JSON body parser of every POST: the raw body is checked (checkRawBody) before it is parsed.
 * A coding outside the contract's is refused before the parser sees it: body-parser decompresses
 * zstd where Node has it (22.15+, 23.8+), so the same body would be read on one Node and not another.
 */
export function jsonBody(): RequestHandler {
  const parse = express.json({
    limit: BODY_BOUNDS.bytes,
    strict: true,
    verify: (_req, _res, body, encoding) => checkRawBody(body, encoding === null ? null : encoding.toLowerCase()),
  });
  return (req, res, next) => {
    const coding = req.headers['content-encoding'];
    if (coding !== undefined && !BODY_CODINGS.has(coding.trim().toLowerCase())) return next(unsupportedCoding(coding));
    return parse(req, res, next);
  };
}
