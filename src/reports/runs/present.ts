/**
 * GET /api/v1/reports/{report_id}: a report run of the key's broker as recorded, with each
 * recipient's delivery (attachment or link) and the downloads through their links. The records are
 * written by the report pipeline through store.ts; the count of recipients by outcome here serves
 * every reader (the answer here, the report request's wait, the run's stored counts).
 */
import { Prisma } from '../../../generated/prisma/client.ts';
import { windowCursorSql } from '../../shared/cursor-sql.ts';
import type { Db } from '../../shared/db-errors.ts';
import { NotFoundError } from '../../shared/errors.ts';
import { cursorOffset, pageOf, type Page, type PageWindow } from '../../shared/page.ts';
import type { components } from '../../../generated/api.ts';

export type ReportRunData = components['schemas']['ReportRun'];

/** A run's recipients by outcome: `sent` and `failed` are final; `pending` is not known yet (waiting or being sent), never counted failed. */
export interface RecipientCounts {
  sent: number;
  failed: number;
  pending: number;
}

/** The counts from recipient statuses and how many have each: the one place a status becomes a count. */
export function recipientCounts(byStatus: Iterable<readonly [status: string, n: number]>): RecipientCounts {
  const counts = { sent: 0, failed: 0, pending: 0 };
  for (const [status, n] of byStatus) {
    if (status === 'sent') counts.sent += n;
    else if (status === 'failed') counts.failed += n;
    else counts.pending += n;
  }
  return counts;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const day = (d: Date | null) => (d ? d.toISOString().slice(0, 10) : null);

/** Downloads shown per recipient, newest first (`download_count` counts them all). */
export const RECENT_DOWNLOADS = 10;

/** Whose runs a key sees: its broker's, of its mode (a sandbox key its test runs, a live key the live ones). */
export interface RunScope {
  brokerId: string;
  mode: RunMode;
}

type RunMode = 'live' | 'test';

/** The run, or `404 not_found` when no run of this broker and mode has that id (another broker's or mode's included). */
export async function findReportRun(db: Db, scope: RunScope, reportId: string): Promise<ReportRunData> {
  const run = UUID.test(reportId) ? await loadRun(db, { id: reportId.toLowerCase(), brokerId: scope.brokerId, mode: scope.mode }) : null;
  if (!run) throw reportNotFound(reportId);
  return runData(run);
}

/** The refusal of an unknown run, worded once: the sandbox's `not_found` scenario answers it too (sandbox.ts). */
export const reportNotFound = (reportId: string) => new NotFoundError(`Report ${reportId} not found`);

/** A run as its broker's `GET /reports/{report_id}` shows it, with its broker and mode (the events of its end). */
export async function reportRunOf(db: Db, runId: string): Promise<RunScope & { data: ReportRunData }> {
  const run = await loadRun(db, { id: runId });
  if (!run) throw new NotFoundError(`Report ${runId} not found`);
  return { brokerId: run.brokerId, mode: run.mode, data: runData(run) };
}

/** What a run's answer reads besides the run: its recipients, each with its newest downloads and their count. */
const RUN_INCLUDE = {
  recipients: {
    orderBy: { id: 'asc' },
    include: {
      downloads: { orderBy: [{ downloadedAt: 'desc' }, { id: 'desc' }], take: RECENT_DOWNLOADS, select: { downloadedAt: true, ip: true } },
      _count: { select: { downloads: true } },
    },
  },
} satisfies Prisma.ReportRunInclude;

const loadRun = (db: Db, where: { id: string; brokerId?: string; mode?: RunMode }) => db.reportRun.findFirst({ where, include: RUN_INCLUDE });

/** The runs of these ids (in no particular order), each as `runData` reads it. */
const loadRuns = (db: Db, ids: string[]) => db.reportRun.findMany({ where: { id: { in: ids } }, include: RUN_INCLUDE });

type LoadedRun = NonNullable<Awaited<ReturnType<typeof loadRun>>>;

/** A loaded run as `GET /reports/{report_id}` answers it; a sandbox key's (test) run with the sandbox's markers. */
function runData(run: LoadedRun): ReportRunData {
  const counts = recipientCounts(run.recipients.map((r) => [r.status, 1] as const));
  const start = day(run.startDate);
  const end = day(run.endDate);
  return {
    object: 'report',
    report_id: run.id,
    report_type: run.reportType,
    status: run.status,
    date_range: start && end ? { start, end } : null,
    status_filter: run.statusFilter,
    recipients_sent: counts.sent,
    recipients_failed: counts.failed,
    recipients_pending: counts.pending,
    created_at: run.createdAt.toISOString(),
    finished_at: run.completedAt?.toISOString() ?? null,
    error: run.error,
    recipients: run.recipients.map((r) => ({
      email: r.email,
      status: r.status,
      attempts: r.attempts,
      last_error: r.error,
      sent_at: r.sentAt?.toISOString() ?? null,
      delivery: run.delivery,
      link_expires_at: r.linkExpiresAt?.toISOString() ?? null,
      download_count: r._count.downloads,
      downloads: r.downloads.map((d) => ({ downloaded_at: d.downloadedAt.toISOString(), ip: d.ip })),
    })),
    ...(run.mode === 'test' ? { mode: 'test' as const, simulated: true as const } : {}),
  };
}

/**
 * GET /api/v1/reports: the scope's runs newest first (`created_at`, then id), by cursor or offset
 * (src/shared/cursor-sql.ts), each as `findReportRun` answers it. The page's ids and the counts in
 * one statement, then the runs with their recipients.
 */
export async function listReportRuns(db: Db, scope: RunScope, window: PageWindow<string>): Promise<Page<ReportRunData>> {
  const cursor = await windowCursorSql(window, {
    table: 'report_runs',
    alias: 'r',
    find: async (reportId) =>
      (UUID.test(reportId) ? db.reportRun.findFirst({ where: { id: reportId.toLowerCase(), brokerId: scope.brokerId, mode: scope.mode }, select: { id: true } }) : null),
    missing: (reportId) => `no report ${reportId} of this broker and mode`,
  });
  const where = Prisma.sql`r."broker_id" = ${scope.brokerId} AND r."mode" = ${scope.mode}::"key_mode"`;
  const rows = await db.$queryRaw<Array<{ total: number; ahead: number; id: string | null }>>`
    SELECT c."total", c."ahead", page."id"
      FROM (SELECT count(*)::int AS "total", (${cursor.ahead})::int AS "ahead" FROM "report_runs" r WHERE ${where}) c
      LEFT JOIN LATERAL (
        SELECT r."id", r."created_at" FROM "report_runs" r
         WHERE ${where} AND ${cursor.page}
         ORDER BY r."created_at" ${cursor.direction}, r."id" ${cursor.direction} LIMIT ${window.limit} OFFSET ${window.offset}
      ) page ON true
     ORDER BY page."created_at" DESC, page."id" DESC`;
  const ids = rows.flatMap((r) => (r.id === null ? [] : [r.id]));
  const byId = new Map((await loadRuns(db, ids)).map((run) => [run.id, run]));
  // A run deleted between the two reads (its broker's, by cascade) is left out.
  const data = ids.flatMap((id) => {
    const run = byId.get(id);
    return run ? [runData(run)] : [];
  });
  const total = rows[0]?.total ?? 0;
  return pageOf(data, total, window.limit, cursorOffset(window, rows[0]?.ahead ?? 0, ids.length));
}
