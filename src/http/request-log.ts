import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { cachedScrub, scrubUrl } from '../ops/redact.ts';

/**
 * scrubUrl, with the clean URLs remembered per operation (its known query parameters decide what
 * is clean): one cachedScrub per operation, made on its first request.
 */
function scrubbedUrls(): (url: string, known: ReadonlySet<string> | undefined) => string {
  const offApi = cachedScrub((url) => scrubUrl(url));
  const byOperation = new WeakMap<ReadonlySet<string>, (url: string) => string>();
  return (url, known) => {
    if (!known) return offApi(url);
    let scrubbed = byOperation.get(known);
    if (!scrubbed) {
      scrubbed = cachedScrub((text) => scrubUrl(text, known));
      byOperation.set(known, scrubbed);
    }
    return scrubbed(url);
  };
}

/**
 * One structured line per request when its response is finished (or the client went away), a
 * failure's error and stack on it (so each 500 is one line, with its request id), its
 * URL scrubbed (src/ops/redact.ts), and `onFinished` for the metrics from the same listener. It
 * replaces pino-http, which built two child loggers per request whether or not the line was
 * written (bench/README.md); here nothing is built unless the line's level is enabled.
 */
export function requestLog(
  logger: Logger,
  ignorePaths: ReadonlySet<string>,
  onFinished: (req: Request, res: Response, seconds: number) => void,
): RequestHandler {
  // The line is built here from known-safe parts only (method, the URL with key-shaped text
  // scrubbed, status, time, a request id that cannot look like a key), so it skips the root
  // logger's redaction, which would find nothing and cost as much as the rest of the line.
  const lines = logger.child({}, { redact: { paths: [] } });
  const scrubbed = scrubbedUrls();
  return (req, res, next) => {
    const logged = !ignorePaths.has(req.path);
    const started = performance.now();
    const done = (): void => {
      res.removeListener('finish', done);
      res.removeListener('close', done);
      const ms = performance.now() - started;
      const aborted = !res.writableFinished;
      if (!aborted) onFinished(req, res, ms / 1000);
      // What the server failed at (set by error-middleware.ts) is logged whatever the path.
      const failure: unknown = res.locals.failure;
      if (!logged && failure === undefined) return;
      const outage: unknown = res.locals.outage;
      const level = failure !== undefined || (!aborted && res.statusCode >= 500 && outage === undefined) ? 'error' : aborted || outage !== undefined ? 'warn' : 'info';
      if (!lines.isLevelEnabled(level)) return;
      const line = {
        requestId: res.locals.requestId,
        req: { method: req.method, url: scrubbed(req.originalUrl, res.locals.operation?.queryParameters) },
        res: { statusCode: res.statusCode },
        responseTime: Math.round(ms),
      };
      const message = level === 'error' ? 'request errored' : aborted ? 'request aborted' : outage !== undefined ? 'request refused: service unavailable' : 'request completed';
      // The error, unlike the rest of the line, may hold anything: through the root logger's redaction.
      if (failure !== undefined) logger.error({ ...line, operationId: res.locals.operation?.operationId, err: failure }, message);
      else if (outage !== undefined) lines.warn({ ...line, cause: outage }, message);
      else lines[level](line, message);
    };
    res.on('finish', done);
    res.on('close', done);
    next();
  };
}
