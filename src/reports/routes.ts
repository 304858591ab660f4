import type { Router } from 'express';
import type { AppDeps } from '../deps.ts';
import { isSandbox } from '../http/auth-context.ts';
import { ApiError } from '../http/errors.ts';
import { operation, type DataOf } from '../http/operation.ts';
import { registerBodyRules, registerFieldDetails } from '../http/validation.ts';
import { ReportNoDataError, type InvoiceTotals } from '../jobs/types.ts';
import { randomUUID } from 'node:crypto';
import { validateDateRange } from './dates.ts';
import { checkReportLimits } from './limits.ts';
import { findReportRun, sandboxReportRun } from './runs.ts';
import { MAX_RECIPIENTS, normalizeRecipients } from './recipients.ts';

/** Fixed sandbox totals of the invoices report (documented in openapi.yaml). */
export const SANDBOX_INVOICE_TOTALS: InvoiceTotals = { total_invoices: 12, paid_invoices: 9, unpaid_invoices: 3 };

const INVOICES_REQUIRED = ['recipients', 'start_date', 'end_date'];

interface InvoicesReportInput {
  recipients: string[];
  start: string;
  end: string;
}

type InvoicesReportData = DataOf<'sendInvoicesReport', 200>;

/** The invoices report's body rules in sendInvoicesReport's order (openapi.yaml): recipients first, then the dates. */
function invoicesReportInput(body: Record<string, unknown>): InvoicesReportInput {
  const recipients = normalizeRecipients(body.recipients, INVOICES_REQUIRED);
  const { start, end } = validateDateRange(body.start_date, body.end_date, INVOICES_REQUIRED);
  return { recipients, start, end };
}

export function registerReportRoutes(router: Router, deps: AppDeps): void {
  // Any validator error about `recipients` (not an array, an item not a string) carries the limit.
  registerFieldDetails('sendInvoicesReport', 'recipients', { max_recipients: MAX_RECIPIENTS });

  // That order (recipients, then dates) also when the schema validator rejects the body.
  registerBodyRules('sendInvoicesReport', invoicesReportInput);

  operation<'sendInvoicesReport', InvoicesReportInput>(router, deps.contract, 'sendInvoicesReport', {
    // The schema has already checked presence and types; these are the operation's own rules, run
    // before any sandbox test scenario.
    validate: ({ body }) => invoicesReportInput(body as Record<string, unknown>),
    handle: async ({ auth }, input) => {
      const date_range = { start: input.start, end: input.end };
      if (isSandbox(auth)) {
        // Simulated: no invoice read, no file, no e-mail, no run recorded.
        const data: InvoicesReportData = {
          report_id: randomUUID(),
          report_type: 'invoices',
          ...SANDBOX_INVOICE_TOTALS,
          recipients_sent: 0,
          recipients_failed: 0,
          recipients_pending: 0,
          date_range,
          generated_at: new Date().toISOString(),
          mode: 'test',
          simulated: true,
          recipient_count: input.recipients.length,
        };
        return { status: 200, data };
      }
      await checkReportLimits(deps.prisma, deps.config, auth.brokerId);
      try {
        const result = await deps.jobs.runReport<InvoiceTotals>({
          type: 'invoices',
          brokerId: auth.brokerId,
          apiKeyId: auth.keyId,
          recipients: input.recipients,
          startDate: input.start,
          endDate: input.end,
        });
        const data: InvoicesReportData = {
          report_id: result.runId,
          report_type: 'invoices',
          total_invoices: result.totals.total_invoices,
          paid_invoices: result.totals.paid_invoices,
          unpaid_invoices: result.totals.unpaid_invoices,
          recipients_sent: result.recipientsSent,
          recipients_failed: result.recipientsFailed,
          recipients_pending: result.recipientsPending,
          date_range,
          generated_at: result.generatedAt,
        };
        return { status: 200, data };
      } catch (err) {
        if (err instanceof ReportNoDataError) {
          throw new ApiError('no_data', `No paid or pending invoices between ${input.start} and ${input.end}`, {
            start_date: input.start,
            end_date: input.end,
          });
        }
        throw err;
      }
    },
  });

  // GET /api/v1/reports/{report_id}
  operation<'getReport', string>(router, deps.contract, 'getReport', {
    validate: ({ params }) => params.report_id,
    handle: async ({ auth }, reportId) => {
      if (isSandbox(auth)) return { status: 200, data: sandboxReportRun(reportId, new Date()) };
      return { status: 200, data: await findReportRun(deps.prisma, auth.brokerId, reportId) };
    },
  });
}
