/**
 * Work not being done, read from the database (the record) when /metrics is scraped (issue 47):
 * Redis and BullMQ's counts can be lost or capped, the rows cannot. Each read is one transaction of
 * index range scans (webhook_deliveries (status, next_attempt_at), report_runs (status, ...),
 * report_recipients (status, ...)) under a statement timeout; a process makes at most one at a
 * time and reuses its answer for BACKLOG_CACHE_MS, so many Prometheus servers scraping many
 * processes cost the database one read per process every few seconds at most.
 */
import { Gauge } from 'prom-client';
import { registry } from './metrics.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** An answer this recent is served again rather than read anew. */
export const BACKLOG_CACHE_MS = 5000;
/** The database's bound on the read (and this side's, on waiting for it). */
export const BACKLOG_TIMEOUT_MS = 2000;

const gauge = (name: string, help: string) => new Gauge({ name, help, registers: [registry] });

export const backlogGauges = {
  deliveriesDue: gauge('webhook_deliveries_due', 'Webhook deliveries whose attempt is due (pending, next attempt at or before now), from the database'),
  deliveryOldestDue: gauge('webhook_delivery_oldest_due_seconds', 'How long the longest-waiting due webhook delivery has been due (0 when none), from the database'),
  runsActive: gauge('report_runs_active', 'Report runs not yet ended (queued, building or sending), from the database'),
  runOldestActive: gauge('report_run_oldest_active_seconds', 'Age of the oldest report run not yet ended (0 when none), from the database'),
  emailsDue: gauge('emails_due', 'Report e-mails not yet accepted by the mail server nor given up on (pending or sending, of live runs that are sending), from the database'),
};

interface BacklogRow {
  deliveries_due: bigint | number;
  delivery_oldest_due_seconds: number | string | null;
  runs_active: bigint | number;
  run_oldest_active_seconds: number | string | null;
  emails_due: bigint | number;
}

async function readBacklog(prisma: ReadClient): Promise<BacklogRow> {
  const [, rows] = await prisma.$transaction([
    prisma.$executeRaw`SELECT set_config('statement_timeout', ${String(BACKLOG_TIMEOUT_MS)}, true)`,
    prisma.$queryRaw<BacklogRow[]>`
      SELECT
        (SELECT count(*) FROM "webhook_deliveries" WHERE "status" = 'pending' AND "next_attempt_at" <= now()) AS "deliveries_due",
        (SELECT extract(epoch FROM now() - min("next_attempt_at"))::float8 FROM "webhook_deliveries"
          WHERE "status" = 'pending' AND "next_attempt_at" <= now()) AS "delivery_oldest_due_seconds",
        (SELECT count(*) FROM "report_runs" WHERE "status" IN ('queued', 'building', 'sending')) AS "runs_active",
        (SELECT extract(epoch FROM now() - min("created_at"))::float8 FROM "report_runs"
          WHERE "status" IN ('queued', 'building', 'sending')) AS "run_oldest_active_seconds",
        (SELECT count(*) FROM "report_recipients" r JOIN "report_runs" u ON u."id" = r."report_run_id"
          WHERE r."status" IN ('pending', 'sending') AND u."status" = 'sending' AND u."mode" = 'live') AS "emails_due"`,
  ]);
  return rows[0]!;
}

function setGauges(row: BacklogRow): void {
  const g = backlogGauges;
  g.deliveriesDue.set(Number(row.deliveries_due));
  g.deliveryOldestDue.set(Math.max(0, Number(row.delivery_oldest_due_seconds ?? 0)));
  g.runsActive.set(Number(row.runs_active));
  g.runOldestActive.set(Math.max(0, Number(row.run_oldest_active_seconds ?? 0)));
  g.emailsDue.set(Number(row.emails_due));
}

/** Unknown, not 0: a gauge without labels cannot leave the scrape, and 0 would say "no backlog". */
function unknownGauges(): void {
  for (const g of Object.values(backlogGauges)) g.set(Number.NaN);
}

/** Refreshes the backlog gauges for a scrape: true when they hold a fresh enough answer. */
export type BacklogRefresh = () => Promise<boolean>;

/**
 * The refresher of one process's backlog gauges. Without an answer (the database away or slow) the
 * gauges read NaN rather than a stale number; /readyz says why.
 */
export function backlogRefresher(prisma: ReadClient, options: { cacheMs?: number; now?: () => number } = {}): BacklogRefresh {
  const cacheMs = options.cacheMs ?? BACKLOG_CACHE_MS;
  const now = options.now ?? Date.now;
  let readAt = Number.NEGATIVE_INFINITY;
  let inFlight: Promise<boolean> | undefined;
  return () => {
    if (now() - readAt < cacheMs) return Promise.resolve(true);
    inFlight ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const row = await Promise.race([
          readBacklog(prisma),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error('backlog read timed out')), BACKLOG_TIMEOUT_MS + 500);
          }),
        ]);
        setGauges(row);
        readAt = now();
        return true;
      } catch {
        unknownGauges();
        readAt = Number.NEGATIVE_INFINITY;
        return false;
      } finally {
        clearTimeout(timer);
        inFlight = undefined;
      }
    })();
    return inFlight;
  };
}
