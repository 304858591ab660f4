/**
 * One delivery attempt: a signed POST to the endpoint, its outcome as plain data. It never
 * throws: a refused address, a connection failure or a timeout is a failed attempt like a 500,
 * and the caller's schedule decides what happens next.
 *
 * Each attempt has a socket of its own, closed when the attempt ends (no keep-alive pool): an
 * attempt leaves nothing behind that keeps the process alive, and every connection goes through
 * the address check (`checkedLookup`) again.
 */
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { StringDecoder } from 'node:string_decoder';
import { checkedLookup, checkEndpointUrl, DestinationRefusedError } from './destination.ts';
import type { SignatureHeaders } from './sign.ts';

export interface DeliveryAttempt {
  url: string;
  /** The JSON text the signature was made over, sent as it is. */
  body: string;
  /** From signatureHeaders, made for this attempt. */
  headers: SignatureHeaders;
  /** For the whole attempt: connecting, sending and the answer's status line and headers. */
  timeoutMs: number;
  /** Development and tests only: http: and private addresses (see DestinationPolicy). */
  allowPrivate: boolean;
  userAgent: string;
}

export interface DeliveryResult {
  /** A 2xx answer. Redirects are not followed: a 3xx is a failed attempt. */
  ok: boolean;
  /** The answer's status, when there was one. */
  status?: number;
  /** Why there was no answer: `timeout after 15000 ms`, `ECONNREFUSED`, `address 10.0.0.1 is private`, … */
  error?: string;
  durationMs: number;
  /** 410 Gone: the receiver asks for no more deliveries to this endpoint. */
  gone: boolean;
  /** The first bytes of the answer's body as text (at most EXCERPT_BYTES), when an answer came. */
  excerpt?: string;
}

/** How much of an answer's body an attempt keeps, for the integrator to see why a receiver refused. */
export const EXCERPT_BYTES = 1024;
/** How long an attempt waits for the excerpt once the status is in: a slow body does not hold the slot. */
const EXCERPT_WAIT_MS = 500;

/** Bytes as text a database column takes: UTF-8 (a character cut at the end dropped), NUL replaced. */
function excerptText(chunks: Buffer[]): string {
  const text = new StringDecoder('utf8').write(Buffer.concat(chunks).subarray(0, EXCERPT_BYTES));
  return text.replaceAll('\u0000', '\uFFFD');
}

/** An attempt's failure in a few words: a system error's code, else the error's message. */
function describe(error: unknown): string {
  if (error instanceof DestinationRefusedError) return error.message;
  const { code, syscall, message } = error as NodeJS.ErrnoException;
  if (typeof code === 'string' && syscall !== undefined) return code;
  // Happy Eyeballs (several addresses tried) fails with an AggregateError that has the code but no syscall.
  if (typeof code === 'string' && error instanceof AggregateError) return code;
  return message || String(error);
}

/** The request: the endpoint's URL, the body's type and length, the signature, our name. */
function send(url: URL, attempt: DeliveryAttempt, onResponse: (res: http.IncomingMessage) => void): http.ClientRequest {
  const { headers } = attempt;
  const request = url.protocol === 'https:' ? https.request : http.request;
  return request(
    url,
    {
      method: 'POST',
      // A fresh agent without keep-alive: the socket closes with the attempt.
      agent: false,
      // Every connection's addresses are checked before the socket connects.
      lookup: checkedLookup({ allowPrivate: attempt.allowPrivate }),
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(attempt.body),
        'user-agent': attempt.userAgent,
        'webhook-id': headers['webhook-id'],
        'webhook-timestamp': headers['webhook-timestamp'],
        'webhook-signature': headers['webhook-signature'],
      },
    },
    onResponse,
  );
}

/**
 * Makes one attempt. The status decides the outcome; of the body only the first EXCERPT_BYTES are
 * read, and the attempt ends once they are in, the body ends, or EXCERPT_WAIT_MS after the status
 * (within the attempt's timeout): a huge, endless or slow body costs at most a kilobyte and half a second.
 */
export function deliver(attempt: DeliveryAttempt): Promise<DeliveryResult> {
  const started = performance.now();
  const durationMs = (): number => Math.round(performance.now() - started);
  let url: URL;
  try {
    // An IP-literal host is judged here: Node connects to it without a lookup.
    url = checkEndpointUrl(attempt.url, { allowPrivate: attempt.allowPrivate });
  } catch (error) {
    return Promise.resolve({ ok: false, error: describe(error), durationMs: durationMs(), gone: false });
  }
  return new Promise((resolve) => {
    let status: number | undefined;
    const body: Buffer[] = [];
    let bodyBytes = 0;
    let request: http.ClientRequest | undefined;
    let settled = false;
    const settle = (error?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(bodyTimer);
      request?.destroy();
      if (status === undefined) resolve({ ok: false, error: error ?? 'no answer', durationMs: durationMs(), gone: false });
      else resolve({ ok: status >= 200 && status < 300, status, durationMs: durationMs(), gone: status === 410, excerpt: excerptText(body) });
    };
    // A timer counts whole milliseconds of the event loop's clock and can fire up to one before the
    // time measured here has passed: the attempt ends only once the timeout has truly passed, so
    // the recorded duration of `timeout after N ms` is never under N.
    let timer: NodeJS.Timeout;
    let bodyTimer: NodeJS.Timeout | undefined;
    const expireAt = started + attempt.timeoutMs;
    const arm = (): void => {
      const left = Math.ceil(expireAt - performance.now());
      if (left > 0) timer = setTimeout(arm, left);
      else settle(`timeout after ${attempt.timeoutMs} ms`);
    };
    timer = setTimeout(arm, attempt.timeoutMs);
    try {
      request = send(url, attempt, (res) => {
        status = res.statusCode;
        bodyTimer = setTimeout(() => settle(), EXCERPT_WAIT_MS);
        // Destroying the connection under an unread body makes the answer emit an error: expected.
        res.on('error', () => settle());
        res.on('data', (chunk: Buffer) => {
          body.push(chunk);
          bodyBytes += chunk.length;
          if (bodyBytes >= EXCERPT_BYTES) settle();
        });
        res.on('end', () => settle());
      });
      request.on('error', (error) => settle(describe(error)));
      request.end(attempt.body);
    } catch (error) {
      // A header value Node refuses (a user agent with a line break) throws at once.
      settle(describe(error));
    }
  });
}
