/**
 * POST /api/v1/reports/services: the services report, with the invoices report's recipients rules
 * (src/reports/recipients.ts) and its report-and-mail jobs (`deps.jobs.runReport`, which builds the
 * services workbook of src/reports/services.ts and sends one e-mail per recipient).
 *
 * Mounted from the services module; if src/reports ever mounts this operation itself, that one is
 * kept and this one is not added (see `isMounted`).
 */
import { randomUUID } from 'node:crypto';
import type { Router } from 'express';
import type { AppDeps } from '../deps.ts';
import { isSandbox } from '../http/auth-context.ts';
import { operation, type DataOf } from '../http/operation.ts';
import { registerBodyRules, registerFieldDetails } from '../http/validation.ts';
import type { ServiceStatusFilter, ServiceTotals } from '../jobs/types.ts';
import { checkReportLimits } from '../reports/limits.ts';
import { MAX_RECIPIENTS, normalizeRecipients } from '../reports/recipients.ts';
import { sandboxed } from './sandbox.ts';

const STATUSES: readonly ServiceStatusFilter[] = ['pending', 'active', 'suspended', 'cancelled'];

/**
 * The sandbox's fixed totals: four services, one in each status. With a status filter, the one
 * service of that status (as a live report counts only the filtered services).
 */
export function sandboxServiceTotals(status: ServiceStatusFilter | null): ServiceTotals {
  const byStatus = Object.fromEntries(STATUSES.map((s) => [s, status === null || s === status ? 1 : 0])) as Record<
    ServiceStatusFilter,
    number
  >;
  return { total_services: status === null ? 4 : 1, services_by_status: byStatus };
}

function isMounted(router: Router, path: string): boolean {
  return router.stack.some((layer) => (layer as { route?: { path: string } }).route?.path === path);
}

interface Input {
  recipients: string[];
  status: ServiceStatusFilter | null;
}

/** The services report's body rules: recipients (as sendServicesReport in openapi.yaml); the status the schema has checked. */
function servicesReportInput(body: Record<string, unknown>): Input {
  return {
    recipients: normalizeRecipients(body.recipients, ['recipients']),
    status: (body.status ?? null) as ServiceStatusFilter | null,
  };
}

export function registerServicesReport(router: Router, deps: AppDeps): void {
  const info = deps.contract.byId.get('sendServicesReport');
  if (!info || isMounted(router, info.expressPath)) return;
  // Any validator error about `recipients` carries the limit, as for the invoices report.
  registerFieldDetails('sendServicesReport', 'recipients', { max_recipients: MAX_RECIPIENTS });
  // Recipients first (the order sendServicesReport documents), also when the schema rejects the body (a bad status, say).
  registerBodyRules('sendServicesReport', servicesReportInput);

  operation<'sendServicesReport', Input>(router, deps.contract, 'sendServicesReport', {
    validate: ({ body }) => servicesReportInput(body as Record<string, unknown>),
    async handle({ auth }, input) {
      if (isSandbox(auth)) {
        // No service read, no file, no e-mail, no run recorded.
        const data: DataOf<'sendServicesReport', 200> = sandboxed({
          report_id: randomUUID(),
          report_type: 'services' as const,
          ...sandboxServiceTotals(input.status),
          status_filter: input.status,
          recipients_sent: 0,
          recipients_failed: 0,
          recipients_pending: 0,
          generated_at: new Date().toISOString(),
          recipient_count: input.recipients.length,
        });
        return { status: 200, data };
      }
      await checkReportLimits(deps.prisma, deps.config, auth.brokerId);
      // A broker without (matching) services still gets its report: an empty workbook.
      const result = await deps.jobs.runReport<ServiceTotals>({
        type: 'services',
        brokerId: auth.brokerId,
        apiKeyId: auth.keyId,
        recipients: input.recipients,
        statusFilter: input.status,
        allowEmpty: true,
      });
      const data: DataOf<'sendServicesReport', 200> = {
        report_id: result.runId,
        report_type: 'services',
        total_services: result.totals.total_services,
        services_by_status: result.totals.services_by_status,
        status_filter: input.status,
        recipients_sent: result.recipientsSent,
        recipients_failed: result.recipientsFailed,
        recipients_pending: result.recipientsPending,
        generated_at: result.generatedAt,
      };
      return { status: 200, data };
    },
  });
}
