import type { ReportType } from './types.ts';
import type { ReportBuilder } from './builder.ts';
import { invoicesReport } from './invoices.ts';
import { servicesReport } from './services.ts';

export { XLSX_MEDIA_TYPE } from './builder.ts';
export type { ReportBuilder } from './builder.ts';

/** Every report the jobs can build, by type. */
export const reportBuilders: Record<ReportType, ReportBuilder> = {
  invoices: invoicesReport as unknown as ReportBuilder,
  services: servicesReport as unknown as ReportBuilder,
};
