import type { ReportType } from '../types.ts';
import { invoicesReport } from './invoices-report.ts';
import type { ReportKind } from './kind.ts';
import { servicesReport } from './services-report.ts';

/** Every kind of report, by type: how each is counted, built and mailed. */
export const reportKinds: Record<ReportType, ReportKind> = {
  invoices: invoicesReport as unknown as ReportKind,
  services: servicesReport as unknown as ReportKind,
};
