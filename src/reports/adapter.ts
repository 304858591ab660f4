/**
 * The report operations over HTTP: the invoices and services reports, a report run and the list of runs. Each
 * adapter reads its typed input (its body rules first, in the order openapi.yaml documents),
 * calls the use case the key's mode chooses and answers.
 */
import type { Router } from 'express';
import type { Config } from '../config.ts';
import type { Contract } from '../http/contract.ts';
import { operation } from '../http/operation.ts';
import { pageParams } from '../http/params.ts';
import type { JobQueues } from '../jobs/index.ts';
import type { Logger } from '../logger.ts';
import type { ByMode } from '../shared/caller.ts';
import { MAX_RECIPIENTS, normalizeRecipients, validateDateRange } from './rules.ts';
import { sandboxReports } from './sandbox.ts';
import type { ServiceStatusFilter } from './types.ts';
import { liveReports, type InvoicesReportInput, type ReportUseCases, type ServicesReportInput } from './use-cases.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** What the report operations take of the app's parts (declared here, so the module imports no composition). */
export interface ReportRouteDeps {
  contract: Contract;
  prisma: ReadClient;
  config: Config;
  logger: Logger;
  jobs: { queues: JobQueues };
}

const INVOICES_REQUIRED = ['recipients', 'start_date', 'end_date'];
const RECIPIENT_DETAILS = { recipients: { max_recipients: MAX_RECIPIENTS } };

/** The invoices report's body rules in sendInvoicesReport's order (openapi.yaml): recipients first, then the dates. */
function invoicesReportInput(body: Record<string, unknown>): InvoicesReportInput {
  const recipients = normalizeRecipients(body.recipients, INVOICES_REQUIRED);
  const { start, end } = validateDateRange(body.start_date, body.end_date, INVOICES_REQUIRED);
  return { recipients, start, end };
}

/** The services report's body rules: recipients (as sendServicesReport in openapi.yaml); the status the schema has checked. */
function servicesReportInput(body: Record<string, unknown>): ServicesReportInput {
  return {
    recipients: normalizeRecipients(body.recipients, ['recipients']),
    status: (body.status ?? null) as ServiceStatusFilter | null,
  };
}

/** A retry is the same report whatever the order or spelling of its recipients: they are the set they normalize to. */
function recipientsAsSet<I extends { recipients: string[] }>(input: I): I {
  return { ...input, recipients: [...input.recipients].sort() };
}

export function reportUseCases(deps: ReportRouteDeps): ByMode<ReportUseCases> {
  const live = liveReports({ prisma: deps.prisma, config: deps.config, log: deps.logger, queues: deps.jobs.queues });
  return { live, sandbox: sandboxReports(deps) };
}

export function registerReportRoutes(router: Router, deps: ReportRouteDeps): void {
  const reports = reportUseCases(deps);

  // POST /api/v1/reports/invoices
  operation(router, deps.contract, 'sendInvoicesReport', {
    useCases: reports,
    // Recipients, then dates, also when the schema validator rejects the body; any error about
    // `recipients` (not an array, an item not a string) carries the limit.
    bodyRules: invoicesReportInput,
    fieldDetails: RECIPIENT_DETAILS,
    // The schema has already checked presence and types; these are the operation's own rules, run
    // before any sandbox test scenario.
    validate: ({ body }) => invoicesReportInput(body as Record<string, unknown>),
    sameRequest: recipientsAsSet,
    handle: async (input, { caller, useCases }) => ({ status: 200, data: await useCases.sendInvoicesReport(caller, input) }),
  });

  // POST /api/v1/reports/services
  operation(router, deps.contract, 'sendServicesReport', {
    useCases: reports,
    // Recipients first, also when the schema rejects the body (a bad status, say).
    bodyRules: servicesReportInput,
    fieldDetails: RECIPIENT_DETAILS,
    validate: ({ body }) => servicesReportInput(body as Record<string, unknown>),
    sameRequest: recipientsAsSet,
    handle: async (input, { caller, useCases }) => ({ status: 200, data: await useCases.sendServicesReport(caller, input) }),
  });

  // GET /api/v1/reports
  operation(router, deps.contract, 'listReports', {
    useCases: reports,
    validate: ({ query }) => pageParams(query, (cursor) => String(cursor)),
    async handle(window, { caller, useCases }) {
      const page = await useCases.listReports(caller, window);
      return { status: 200, data: page.data, pagination: page.pagination };
    },
  });

  // GET /api/v1/reports/{report_id}
  operation(router, deps.contract, 'getReport', {
    useCases: reports,
    validate: ({ params }) => params.report_id,
    handle: async (reportId, { caller, useCases }) => ({ status: 200, data: await useCases.findReport(caller, reportId) }),
  });
}
