/**
 * GET /api/v1/reports/{report_id}: a report run of the key's broker as recorded, with each
 * recipient's delivery (attachment or link) and the downloads through their links. The records are
 * written by the report pipeline through store.ts; the count of recipients by outcome here serves
 * every reader (the answer here, the report request's wait, the run's stored counts).
 */
import type { Db } from '../../shared/db-errors.ts';
import { NotFoundError } from '../../shared/errors.ts';
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

/** The run, or `404 not_found` when no run of this broker has that id (another broker's included). */
export async function findReportRun(db: Db, brokerId: string, reportId: string): Promise<ReportRunData> {
  const run = UUID.test(reportId) ? await loadRun(db, { id: reportId.toLowerCase(), brokerId }) : null;
  if (!run) throw new NotFoundError(`Report ${reportId} not found`);
  return runData(run);
}

/** A run as its broker's `GET /reports/{report_id}` shows it, with its broker (the events of its end). */
export async function reportRunOf(db: Db, runId: string): Promise<{ brokerId: string; data: ReportRunData }> {
  const run = await loadRun(db, { id: runId });
  if (!run) throw new NotFoundError(`Report ${runId} not found`);
  return { brokerId: run.brokerId, data: runData(run) };
}

const loadRun = (db: Db, where: { id: string; brokerId?: string }) =>
  db.reportRun.findFirst({
    where,
    include: {
      recipients: {
        orderBy: { id: 'asc' },
        include: {
          downloads: { orderBy: [{ downloadedAt: 'desc' }, { id: 'desc' }], take: RECENT_DOWNLOADS, select: { downloadedAt: true, ip: true } },
          _count: { select: { downloads: true } },
        },
      },
    },
  });

function runData(run: NonNullable<Awaited<ReturnType<typeof loadRun>>>): ReportRunData {
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
  };
}
