import type { ServiceStatusFilter, ServiceTotals } from '../types.ts';
import { FORMAT, type TableKind } from './writer.ts';
import { serialOfTime } from './xlsx/xml.ts';

export const SERVICE_STATUSES: readonly ServiceStatusFilter[] = ['pending', 'active', 'suspended', 'cancelled'];

/** One service as the services report's query makes it (json_agg of these). */
interface ServiceRow {
  id: number;
  service_number: number;
  plan: string;
  status: ServiceStatusFilter;
  hostname: string;
  customer_email: string;
  customer_name: string | null;
  billing_cycle: string;
  created_at: string;
}

const emptyByStatus = (): Record<ServiceStatusFilter, number> => ({ pending: 0, active: 0, suspended: 0, cancelled: 0 });

const SERVICE_COLUMNS = [
  { header: 'Service number', width: 16, numFmt: FORMAT.integer },
  { header: 'Plan', width: 18 },
  { header: 'Status', width: 11 },
  { header: 'Hostname', width: 28 },
  { header: 'Customer e-mail', width: 28 },
  { header: 'Customer name', width: 22 },
  { header: 'Billing cycle', width: 13 },
  { header: 'Created (UTC)', width: 20, numFmt: FORMAT.dateTime },
];

/** The services table: a page is the query's JSON array of services. */
export const serviceTable: TableKind<Record<ServiceStatusFilter, number>, ServiceTotals> = {
  sheetName: 'Services',
  columns: SERVICE_COLUMNS,
  start: emptyByStatus,
  addPage(text, table, byStatus) {
    for (const s of JSON.parse(text) as ServiceRow[]) {
      const created = serialOfTime(Date.parse(s.created_at));
      table.row(
        (r) =>
          table.number(0, s.service_number, r) +
          table.repeatedText(1, s.plan, r) +
          table.repeatedText(2, s.status, r) +
          table.text(3, s.hostname, r) +
          table.text(4, s.customer_email, r) +
          table.text(5, s.customer_name ?? '', r) +
          table.repeatedText(6, s.billing_cycle, r) +
          table.number(7, created, r),
      );
      byStatus[s.status] += 1;
    }
  },
  summary: (byStatus, facts, sheets) => {
    const total = SERVICE_STATUSES.reduce((n, s) => n + byStatus[s], 0);
    const lines = [
      { cells: ['Services report'], bold: true },
      { cells: ['Status filter', facts.statusFilter ?? 'all'] },
      { cells: ['Generated at (UTC)', new Date(facts.generatedAt)], formats: [undefined, FORMAT.dateTime] },
      { cells: ['Sheets of services', sheets], formats: [undefined, FORMAT.integer] },
      { cells: [] },
      { cells: ['Status', 'Services'], header: true },
      ...SERVICE_STATUSES.map((status) => ({ cells: [status, byStatus[status]], formats: [undefined, FORMAT.integer] })),
      { cells: ['Total', total], bold: true, formats: [undefined, FORMAT.integer] },
    ];
    return { lines, widths: [22, 12] };
  },
  result: (byStatus) => {
    const total = SERVICE_STATUSES.reduce((n, s) => n + byStatus[s], 0);
    return { rows: total, totals: { total_services: total, services_by_status: { ...byStatus } } };
  },
};
