/**
 * GET /downloads/reports/{token} (openapi.yaml `downloadReport`): a report workbook through the link
 * a recipient was e-mailed, outside /api and without a key (its holder has none). Rate-limited per
 * caller IP in Redis, shared by every API process; the download is recorded before the body starts;
 * the workbook is streamed from the database a chunk at a time.
 */
import type { Request, Response, Router } from 'express';
import type { Redis } from 'ioredis';
import { pipeline } from 'node:stream/promises';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../../config.ts';
import { ApiError, notFound } from '../../http/errors.ts';
import type { Logger } from '../../logger.ts';
import { XLSX_MEDIA_TYPE } from '../kinds/kind.ts';
import { reportKinds } from '../kinds/registry.ts';
import { collectGarbage } from '../workbook/gc.ts';
import { readWorkbook, type ReadChunk } from '../workbook/store.ts';
import { DOWNLOAD_PATH, findDownload, recordDownload } from './links.ts';
import type { ReadClient } from '../../shared/db-errors.ts';

/** What the download route takes of the app's parts. */
interface DownloadDeps {
  prisma: ReadClient;
  readChunk: ReadChunk;
  redis: Redis;
  config: Config;
  logger: Logger;
}

/** Redis key prefix of the per-IP download counters. */
export const DOWNLOADS_RATE_PREFIX = 'rl:download';
const WINDOW_SECONDS = 60;

/** One answer for every token that downloads nothing: unknown, expired, malformed or its workbook gone. */
const NOT_FOUND_MESSAGE = 'This download link is unknown or has expired';

/** Counts one request of a caller (its bucket: an IPv4 address, an IPv6 /64) and throws the 429 past the bound. */
function downloadLimiter(redis: Redis, perMinute: number): (bucket: string) => Promise<void> {
  const limiter = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: DOWNLOADS_RATE_PREFIX,
    points: perMinute,
    duration: WINDOW_SECONDS,
    rejectIfRedisNotReady: true,
  });
  return async (bucket) => {
    try {
      await limiter.consume(bucket);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new ApiError(
        'rate_limit_exceeded',
        `Too many download requests from this IP address: at most ${perMinute} per ${WINDOW_SECONDS} seconds; retry after ${retryAfter} seconds`,
        { reason: 'report_downloads_per_ip', limit: perMinute, window_seconds: WINDOW_SECONDS, retry_after: retryAfter },
        { 'Retry-After': String(retryAfter) },
      );
    }
  };
}

/**
 * Mounts the download route on `router` (served outside /api). `bucketOf` names the caller a per-IP
 * bound counts (the gate's, so both bounds count an IPv6 caller by its /64).
 */
export function registerDownloadRoute(router: Router, deps: DownloadDeps, bucketOf: (ip: string | undefined) => string): void {
  const limit = downloadLimiter(deps.redis, deps.config.reportDownloadsPerIpPerMinute);
  // Mounted as a prefix and read from the raw path, not as a `:token` route: Express would
  // percent-decode the segment and answer a bad escape with an error of its own, while a token is
  // base64url (never escaped) and anything else, escapes included, is simply not a token.
  router.use(DOWNLOAD_PATH, async (req: Request, res: Response, next: () => void) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !/^\/[^/]+\/?$/.test(req.path)) {
      next();
      return;
    }
    res.setHeader('Cache-Control', 'no-store');
    await limit(bucketOf(req.ip));
    const target = await findDownload(deps.prisma, req.path.replace(/^\/|\/$/g, ''));
    if (!target) throw notFound(NOT_FOUND_MESSAGE);
    const kind = reportKinds[target.spec.type];
    // The names are ASCII letters, digits, dots and dashes (kinds/invoices-report.ts, kinds/services-report.ts): quoted as they are.
    res.setHeader('Content-Disposition', `attachment; filename="${kind.attachmentName(target.spec, target.generatedAt)}"`);
    res.setHeader('Content-Type', XLSX_MEDIA_TYPE);
    res.setHeader('Content-Length', String(target.bytes));
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    // On record before the first byte leaves: a download that starts is never missing from the record.
    await recordDownload(deps.prisma, target, req.ip ?? '');
    try {
      await pipeline(readWorkbook(deps.readChunk, target.workbook), res);
    } catch (err) {
      // The caller went away, or the store failed mid-body: the connection ends short of Content-Length.
      deps.logger.warn({ err, requestId: res.locals.requestId }, 'report download ended early');
      res.destroy();
    } finally {
      // A workbook's worth of chunks (their base64 texts, the driver's buffers) is garbage now, and
      // would stay resident beside the next report's build until V8's next full collection.
      collectGarbage();
    }
  });
}
