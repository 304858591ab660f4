/**
 * The request path's performance devices in one place, each departing from how Express would carry
 * a request, for throughput (`npm run bench`, bench/README.md), each tested on the production path
 * (test/http/fast-path.test.ts, test/http/operation.test.ts): `chain()` (middleware as one router
 * layer), `parseQueryOnce()` (Express 5 parses req.query on every read), `dispatchOperations()` (no
 * router walk), `sendAnswer()` and `serialized()` (every answer through `res.end`, in tests too) and
 * `fastAppSettings()` (no ETag, the simple query parser). Outside src/http, for the same reason:
 * src/main/server.ts's request and response classes, src/auth/rate-limit.ts's blocks, Redis
 * auto-pipelining (src/redis.ts) and patches/.
 */
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { entityTag } from './conditional.ts';
import { knownHeader, setKnownHeader } from './known-headers.ts';
import type { OperationId, Reply, SuccessStatus } from './operation-types.ts';

/**
 * Runs middleware one after the other as ONE layer of the app's router, with Express's own rules
 * for each step: `next()` goes on, `next(err)` leaves with the error, and a thrown error or a
 * rejected promise is passed on as `next(err)`.
 *
 * Why: an /api request walked sixteen router layers before its route, and each layer costs a path
 * match, a URL parse and Express's bookkeeping (the router's share of the API's CPU under load
 * is in bench/README.md).
 * `when` keeps the chain to the requests it is for (the router's mount path did that before).
 */
export function chain(handlers: RequestHandler[], when?: (req: Request) => boolean): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    if (when && !when(req)) {
      done();
      return;
    }
    let index = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== false) {
        done(err);
        return;
      }
      const handler = handlers[index++];
      if (!handler) {
        done();
        return;
      }
      try {
        const result: unknown = handler(req, res, next);
        if (result instanceof Promise) result.catch((e: unknown) => done(e ?? new Error('middleware rejected')));
      } catch (e) {
        done(e);
      }
    };
    next();
  };
}

/**
 * Express 5's req.query is a getter that parses the query string again on every read (the input
 * checks, the validator and the handler read it about ten times for a list): parsed once here and
 * kept as a plain property.
 */
export function parseQueryOnce(req: Request): void {
  Object.defineProperty(req, 'query', { value: req.query, writable: true, configurable: true, enumerable: true });
}

/**
 * No ETag from Express: res.send's would hash every body, errors and POST answers included; the
 * conditional reads' ETags are made for a GET's 200 only, once per cached page (`serialized()`,
 * src/http/conditional.ts). Every query parameter of the contract is a scalar, so the query
 * string is read as flat key=value pairs (node:querystring): qs's nested syntax bought nothing,
 * cost CPU on every request, and silently dropped keys such as __proto__, which are now refused
 * like any unknown parameter.
 */
export function fastAppSettings(app: Express): void {
  app.set('etag', false);
  app.set('query parser', 'simple');
}

/**
 * A reply already written as JSON, for an answer served many times over (a cached list page):
 * serializing the page on every request showed in a list request's profile (bench/README.md). Build it with
 * `serialized()`, which takes the typed reply, so it holds to the contract like any other.
 */
export interface SerializedReply<O extends OperationId> {
  status: SuccessStatus<O>;
  /**
   * The whole response body, `{"success":true,"data":…[,"pagination":…]}`, as UTF-8 bytes made
   * once: Node writes a Buffer to the socket as it is, where a string body is first joined to the
   * header block, a fresh copy of an 8 KB page on every request for the garbage collector.
   */
  body: Buffer;
  /** `body.length`, as the Content-Length header's value. */
  contentLength: string;
  /** The body's ETag, made with it: a cached page's `304` hashes nothing. */
  etag: string;
  /** A cached page's: true while it is still the answer (src/http/conditional.ts answers its 304s early). */
  fresh?: () => boolean;
}

function envelope<O extends OperationId>(reply: Reply<O>): Record<string, unknown> {
  const body: Record<string, unknown> = { success: true, data: reply.data };
  if (reply.pagination !== undefined) body.pagination = reply.pagination;
  return body;
}

export function serialized<O extends OperationId>(reply: Reply<O>, fresh?: () => boolean): SerializedReply<O> {
  const body = Buffer.from(JSON.stringify(envelope(reply)), 'utf8');
  return { status: reply.status, body, contentLength: String(body.length), etag: entityTag(body), fresh };
}

/**
 * An answer as it leaves: every JSON answer of the app (an operation's reply, a replayed one, the
 * error envelope) is one of these, written by `sendAnswer`, in tests as in production.
 */
export interface Answer {
  status: number;
  /** Headers of this answer besides Content-Type and Content-Length (`Retry-After`, `Idempotent-Replayed`). */
  headers?: Readonly<Record<string, string>>;
  /** The JSON body: a one-off answer as a string, a stored one as its own bytes. */
  body: string | Buffer;
  /** The body's length in bytes, when it is known already (a stored page). */
  contentLength?: string;
  /** The body's ETag, when it is known already (a stored page). */
  etag?: string;
  /** A cached page's freshness (SerializedReply). */
  fresh?: () => boolean;
}

/** An operation's reply as its answer: a one-off reply serialized now, a pre-serialized one as it is. */
export function answerOf<O extends OperationId>(reply: Reply<O> | SerializedReply<O>): Answer {
  return 'body' in reply ? reply : { status: reply.status, body: JSON.stringify(envelope(reply)) };
}

const JSON_TYPE = 'application/json; charset=utf-8';
const CONTENT_TYPE = knownHeader('Content-Type');
const CONTENT_LENGTH = knownHeader('Content-Length');

/**
 * Writes an answer with `res.end`, the one way an answer leaves (with response validation on, the
 * tests' apps check these same bytes against the contract first: `checkAnswer` in validation.ts).
 * Not `res.json`/`res.send`: res.send makes a Buffer of any body over 1,000 characters and works
 * out the content type, charset and freshness of every answer, which for this API are always the
 * same. A one-off answer goes as a string (Node writes it in one chunk with the headers); a
 * pre-serialized one as its own bytes, copied by no one. HEAD: Node writes the headers only.
 */
export function sendAnswer(res: Response, answer: Answer): void {
  res.status(answer.status);
  if (answer.headers) for (const name in answer.headers) res.setHeader(name, answer.headers[name]!);
  setKnownHeader(res, CONTENT_TYPE, JSON_TYPE);
  setKnownHeader(res, CONTENT_LENGTH, answer.contentLength ?? String(Buffer.byteLength(answer.body)));
  res.end(answer.body);
}

/**
 * The last step of the /api chain: calls the handler `operation()` mounted for the operation the
 * request was resolved to (`res.locals.operation`), without walking the router again. The request
 * was matched against the contract once already; the router's walk over every route's path
 * pattern showed in an API request's profile (bench/README.md). Anything without such a handler
 * goes on to the router.
 */
export function dispatchOperations(handlers: ReadonlyMap<string, RequestHandler>): RequestHandler {
  return (req, res, next) => {
    const op = res.locals.operation;
    const handle = op ? handlers.get(op.operationId) : undefined;
    if (handle) return handle(req, res, next);
    next();
  };
}
