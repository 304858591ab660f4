import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { ApiError } from './errors.ts';

/** The most a request body may hold, decompressed. */
export const MAX_BODY_BYTES = 1024 * 1024;

const SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * Checks the raw bytes before anything parses them: UTF-8 (RFC 8259 JSON; body-parser would read
 * invalid bytes as U+FFFD), and a JSON object at the top (the contract's rule for every POST,
 * which reads no other body). An empty body is left to be read as `{}`.
 */
export function checkRawBody(body: Buffer, charset: string | null): void {
  if ((charset !== null && charset !== 'utf-8') || !isUtf8(body)) {
    throw new ApiError('invalid_request', 'Request body must be UTF-8 encoded JSON');
  }
  let i = 0;
  while (i < body.length && SPACE.has(body[i]!)) i++;
  if (body.length > 0 && body[i] !== 0x7b /* { */) throw new ApiError('invalid_request', 'Request body must be a JSON object');
}

/** The JSON body parser of every POST: the raw body is checked (checkRawBody) before it is parsed. */
export function jsonBody(): RequestHandler {
  return express.json({
    limit: MAX_BODY_BYTES,
    strict: true,
    verify: (_req, _res, body, encoding) => checkRawBody(body, encoding === null ? null : encoding.toLowerCase()),
  });
}
