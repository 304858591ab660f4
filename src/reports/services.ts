import type { Writable } from 'node:stream';
import { Prisma, type PrismaClient } from '../../generated/prisma/client.ts';
import type { ReportSpec, ServiceStatusFilter, ServiceTotals } from './types.ts';
import { openingLines, prefetchedPages, type ReportBuilder, type ReportCount, type ReportSnapshot, type RowPage } from './builder.ts';
import { buildWorkbook, type BuildOptions } from './build.ts';
import { SERVICE_STATUSES } from './service-table.ts';

export { SERVICE_STATUSES };

export const SERVICE_BATCH = 10_000;

function filterOf(spec: ReportSpec): Prisma.Sql {
  return spec.statusFilter
    ? Prisma.sql`s.broker_id = ${spec.brokerId} AND s.status = ${spec.statusFilter}::service_status`
    : Prisma.sql`s.broker_id = ${spec.brokerId}`;
}

const emptyByStatus = (): Record<ServiceStatusFilter, number> => ({ pending: 0, active: 0, suspended: 0, cancelled: 0 });

/** The broker's services (of one status when filtered), counted by status. */
export async function countServices(prisma: PrismaClient, spec: ReportSpec): Promise<ReportCount<ServiceTotals>> {
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

/**
 * The report's services in id order, a page per query, each page one text: a JSON array of the
 * rows (json_agg), far cheaper through the driver adapter than row by row. The next page is read
 * while the caller uses this one.
 */
export async function* servicePages(prisma: PrismaClient, spec: ReportSpec, snapshot: ReportSnapshot): AsyncGenerator<string> {
  const where = filterOf(spec);
  const fetchAfter = async (id: number): Promise<RowPage<number>> => {
    const result = await prisma.$queryRaw<Array<{ page: string | null; last_id: number | null; n: number }>>`
      SELECT json_agg(p ORDER BY p.id)::text AS page, max(p.id)::int AS last_id, count(*)::int AS n FROM (
        SELECT s.id, s.service_number, pl.name AS plan, s.status::text AS status, s.hostname, s.customer_email,
               s.customer_name, s.billing_cycle::text AS billing_cycle,
               to_char(s.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
        FROM services s JOIN plans pl ON pl.id = s.plan_id
        WHERE ${where} AND s.id <= ${snapshot.maxId} AND s.id > ${id}
        ORDER BY s.id LIMIT ${SERVICE_BATCH}) p`;
    const row = result[0];
    const lastId = Number(row?.last_id ?? 0);
    return { text: row?.page ?? '', rows: row?.page ? Number(row.n) : 0, after: () => lastId };
  };
  yield* prefetchedPages(0, SERVICE_BATCH, fetchAfter);
}

async function writeServicesWorkbook(
  prisma: PrismaClient,
  spec: ReportSpec,
  snapshot: ReportSnapshot,
  out: Writable,
  generatedAt: Date,
  options?: BuildOptions,
): Promise<ReportCount<ServiceTotals>> {
  const facts = { generatedAt: generatedAt.getTime(), statusFilter: spec.statusFilter ?? null };
  const { rows, totals } = await buildWorkbook<ServiceTotals>('services', facts, servicePages(prisma, spec, snapshot), out, options);
  return { rows, totals, snapshot };
}

export const servicesReport: ReportBuilder<ServiceTotals> = {
  type: 'services',
  count: countServices,
  write: writeServicesWorkbook,
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
