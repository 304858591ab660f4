/**
 * `route` is the operationId or a route template, never the raw URL, so ids and query strings cannot
 * blow up the label set. E-mails are counted in the process that runs the worker, a failure once
 * (when the last attempt fails). One registry per process: every app built in it reports there.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

export const httpRequests = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by route (operationId or route template), method and status',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from receiving a request to finishing its response, by route and method',
  labelNames: ['route', 'method'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const queueJobs = new Gauge({
  name: 'bullmq_queue_jobs',
  help: 'BullMQ jobs per queue and state (waiting, active, delayed, prioritized, paused, waiting-children), read at scrape time; kept completed and failed jobs are not counted (the queues keep at most 1,000 and 5,000 of them)',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
});

export const emailsSent = new Counter({
  name: 'emails_sent_total',
  help: 'E-mails accepted by the SMTP server (or written to the outbox), by kind (report, notice)',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const emailsFailed = new Counter({
  name: 'emails_failed_total',
  help: 'E-mails given up on after their last attempt, by kind (report, notice)',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export type MailKind = 'report' | 'notice';

/** One e-mail was delivered (called by the mail job when the send succeeded). */
export function recordMailSent(kind: MailKind): void {
  emailsSent.inc({ kind });
}

/** One e-mail failed for good (called by the mail job on its final failed attempt). */
export function recordMailFailed(kind: MailKind): void {
  emailsFailed.inc({ kind });
}

interface RouteLocals {
  operation?: { operationId: string };
}

/** The label for a finished request: never the raw URL. */
export function routeLabel(req: { route?: { path?: unknown } }, locals: RouteLocals): string {
  if (locals.operation?.operationId) return locals.operation.operationId;
  const template = req.route?.path;
  return typeof template === 'string' ? template : 'unmatched';
}

/** Called by the request log's finish listener: one listener per response serves both. */
export function recordHttpRequest(req: { method: string; route?: { path?: unknown } }, res: { statusCode: number; locals: RouteLocals }, seconds: number): void {
  const route = routeLabel(req, res.locals);
  httpRequests.inc({ route, method: req.method, status: String(res.statusCode) });
  httpDuration.observe({ route, method: req.method }, seconds);
}

/** Something that can count a queue's jobs by state (a BullMQ `Queue`). */
export interface CountableQueue {
  name: string;
  getJobCounts(): Promise<Record<string, number>>;
}

/**
 * States a job leaves the queue's backlog in: BullMQ keeps only the last of them (removeOnComplete
 * and removeOnFail in src/jobs/queues.ts), so their count stops at the cap whatever was done.
 * The database's records count outcomes; these are not reported.
 */
const KEPT_HISTORY = new Set(['completed', 'failed']);

/** Without Redis the gauge is cleared rather than left stale, and the scrape still succeeds. */
export async function refreshQueueDepth(queues: CountableQueue[], timeoutMs = 1000): Promise<boolean> {
  try {
    const counts = await Promise.race([
      Promise.all(queues.map(async (q) => [q.name, await q.getJobCounts()] as const)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('queue counts timed out')), timeoutMs).unref()),
    ]);
    queueJobs.reset();
    for (const [queue, byState] of counts) {
      for (const [state, n] of Object.entries(byState)) if (!KEPT_HISTORY.has(state)) queueJobs.set({ queue, state }, n);
    }
    return true;
  } catch {
    queueJobs.reset();
    return false;
  }
}

export const reportBuildsFailed = new Counter({
  name: 'report_builds_failed_total',
  help: 'Report workbook builds that failed in this process (each failed attempt; the run is retried up to its attempts)',
  registers: [registry],
});

/** One report build attempt failed (called by the reports' build job). */
export function recordBuildFailed(): void {
  reportBuildsFailed.inc();
}

export const uncaughtExceptions = new Counter({
  name: 'process_uncaught_exceptions_total',
  help: 'Uncaught exceptions and unhandled rejections that ended a process of this role on this DATA_DIR, since the count file was made (src/ops/last-resort.ts)',
  registers: [registry],
});
