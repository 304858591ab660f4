/**
 * GET /api/v1/reports/{report_id}: a report run of the key's broker as recorded, with each
 * recipient's delivery. The records are written by the report pipeline (src/jobs); this only reads.
 */
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { NotFoundError } from '../shared/errors.ts';
import type { DataOf } from '../http/operation.ts';

export type ReportRunData = DataOf<'getReport', 200>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const day = (d: Date | null) => (d ? d.toISOString().slice(0, 10) : null);

/** The run, or `404 not_found` when no run of this broker has that id (another broker's included). */
export async function findReportRun(prisma: PrismaClient, brokerId: string, reportId: string): Promise<ReportRunData> {
  const run = UUID.test(reportId)
    ? await prisma.reportRun.findFirst({
        where: { id: reportId.toLowerCase(), brokerId },
        include: { recipients: { orderBy: { id: 'asc' } } },
      })
    : null;
  if (!run) throw new NotFoundError(`Report ${reportId} not found`);
  const count = (status: string) => run.recipients.filter((r) => r.status === status).length;
  const start = day(run.startDate);
  const end = day(run.endDate);
  return {
    report_id: run.id,
    report_type: run.reportType,
    status: run.status,
    date_range: start && end ? { start, end } : null,
    status_filter: run.statusFilter,
    recipients_sent: count('sent'),
    recipients_failed: count('failed'),
    recipients_pending: count('pending') + count('sending'),
    created_at: run.createdAt.toISOString(),
    finished_at: run.completedAt?.toISOString() ?? null,
    error: run.error,
    recipients: run.recipients.map((r) => ({
      email: r.email,
      status: r.status,
      attempts: r.attempts,
      last_error: r.error,
      sent_at: r.sentAt?.toISOString() ?? null,
    })),
  };
}

/** The sandbox's run: any id answers a completed invoices run with one recipient; nothing is read. */
export function sandboxReportRun(reportId: string, now: Date): ReportRunData {
  const at = now.toISOString();
  return {
    report_id: reportId,
    report_type: 'invoices',
    status: 'completed',
    date_range: { start: at.slice(0, 8) + '01', end: at.slice(0, 10) },
    status_filter: null,
    recipients_sent: 1,
    recipients_failed: 0,
    recipients_pending: 0,
    created_at: at,
    finished_at: at,
    error: null,
    recipients: [{ email: 'recipient@example.com', status: 'sent', attempts: 1, last_error: null, sent_at: at }],
    mode: 'test',
    simulated: true,
  };
}
