import { Prisma } from '../../../generated/prisma/client.ts';
import type { ReportSpec, ServiceStatusFilter, ServiceTotals } from '../types.ts';
import { openingLines, type ReportKind, type ReportCount } from './kind.ts';
import { SERVICE_STATUSES } from '../workbook/service-table.ts';
import type { ReadClient } from '../../shared/db-errors.ts';

export { SERVICE_STATUSES };

function filterOf(spec: ReportSpec): Prisma.Sql {
  return spec.statusFilter
    ? Prisma.sql`s.broker_id = ${spec.brokerId} AND s.status = ${spec.statusFilter}::service_status`
    : Prisma.sql`s.broker_id = ${spec.brokerId}`;
}

const emptyByStatus = (): Record<ServiceStatusFilter, number> => ({ pending: 0, active: 0, suspended: 0, cancelled: 0 });

/** The broker's services (of one status when filtered), counted by status. */
export async function countServices(prisma: ReadClient, spec: ReportSpec): Promise<ReportCount<ServiceTotals>> {
  const rows = await prisma.$queryRaw<Array<{ status: ServiceStatusFilter; n: number; max_id: number | null }>>`
    SELECT s.status::text AS status, count(*)::int AS n, max(s.id)::int AS max_id
    FROM services s WHERE ${filterOf(spec)} GROUP BY s.status`;
  const byStatus = emptyByStatus();
  for (const r of rows) byStatus[r.status] = r.n;
  const total = rows.reduce((n, r) => n + r.n, 0);
  return {
    rows: total,
    totals: { total_services: total, services_by_status: byStatus },
    snapshot: { maxId: rows.reduce((m, r) => Math.max(m, Number(r.max_id ?? 0)), 0) },
  };
}

export const servicesReport: ReportKind<ServiceTotals> = {
  type: 'services',
  count: countServices,
  input: (spec, snapshot, generatedAt) => ({
    kind: 'services',
    facts: { generatedAt: generatedAt.getTime(), statusFilter: spec.statusFilter ?? null },
    scope: { kind: 'services', brokerId: spec.brokerId, maxId: snapshot.maxId, statusFilter: spec.statusFilter ?? null },
  }),
  attachmentName: (spec, generatedAt) => `services-${spec.statusFilter ? `${spec.statusFilter}-` : ''}${generatedAt.toISOString().slice(0, 10)}.xlsx`,
  subject: (spec) => `Services report${spec.statusFilter ? ` (${spec.statusFilter})` : ''}`,
  text: (spec, totals, generatedAt, link) =>
    [
      ...openingLines(`the services report${spec.statusFilter ? ` of ${spec.statusFilter} services` : ''}`, link),
      '',
      `Services: ${totals.total_services} (${SERVICE_STATUSES.map((s) => `${s}: ${totals.services_by_status[s]}`).join(', ')})`,
      `Generated at: ${generatedAt}`,
      '',
    ].join('\r\n'),
};
