import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { scrubUrl } from '../ops/redact.ts';

/** URLs kept per operation's parameter set; past this many the set starts again. */
const CLEAN_URLS_KEPT = 256;

/**
 * scrubUrl, with the URLs it leaves as they are remembered per operation: a busy client asks for
 * the same few URLs over and over, and each would be split, decoded and matched again. A URL that
 * needed scrubbing is not kept (nor is what it held).
 */
function scrubbedUrls(): (url: string, known: ReadonlySet<string> | undefined) => string {
  const offApi = new Set<string>();
  const byOperation = new WeakMap<ReadonlySet<string>, Set<string>>();
  return (url, known) => {
    let clean = known ? byOperation.get(known) : offApi;
    if (!clean) {
      clean = new Set();
      byOperation.set(known!, clean);
    }
    if (clean.has(url)) return url;
    const scrubbed = scrubUrl(url, known);
    if (scrubbed === url) {
      if (clean.size >= CLEAN_URLS_KEPT) clean.clear();
      clean.add(url);
    }
    return scrubbed;
  };
}

/**
 * One structured line per request when its response is finished (or the client went away), its
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
      if (!logged) return;
      const level = aborted ? 'warn' : res.statusCode >= 500 ? 'error' : 'info';
      if (!lines.isLevelEnabled(level)) return;
      lines[level](
        {
          requestId: res.locals.requestId,
          req: { method: req.method, url: scrubbed(req.originalUrl, res.locals.operation?.queryParameters) },
          res: { statusCode: res.statusCode },
          responseTime: Math.round(ms),
        },
        aborted ? 'request aborted' : res.statusCode >= 500 ? 'request errored' : 'request completed',
      );
    };
    res.on('finish', done);
    res.on('close', done);
    next();
  };
}
