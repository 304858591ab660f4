/** The public shape of a service request (openapi.yaml `ServiceRequest`), from its database row. */
import type { Plan, Service, ServiceRequest } from '../../generated/prisma/client.ts';
import { formatRequestId } from '../shared/ids.ts';

export interface RequestData {
  request_id: string;
  request_type: 'create' | 'upgrade' | 'downgrade' | 'cancel';
  request_status: 'pending' | 'provider_review' | 'approved' | 'denied';
  source: 'api' | 'import' | 'portal' | 'admin';
  service_number: number | null;
  current_plan: string | null;
  requested_plan: string | null;
  hostname: string | null;
  customer_email: string | null;
  reason: string | null;
  cancel_when: 'immediate' | 'end_of_billing_period' | null;
  denial_reason: string | null;
  created_at: string;
  updated_at: string;
  decided_at: string | null;
}

export type RequestWithRelations = ServiceRequest & {
  service: Service | null;
  currentPlan: Plan | null;
  requestedPlan: Plan | null;
};

/** What to load with a request to present it. */
export const REQUEST_INCLUDE = { service: true, currentPlan: true, requestedPlan: true } as const;

export function requestData(request: RequestWithRelations): RequestData {
  return {
    request_id: formatRequestId(request.id),
    request_type: request.type,
    request_status: request.status,
    source: request.source,
    service_number: request.service?.serviceNumber ?? null,
    current_plan: request.currentPlan?.name ?? null,
    requested_plan: request.requestedPlan?.name ?? null,
    // Requests made through the API carry the host and customer; imported ones may rely on the service.
    hostname: request.hostname ?? request.service?.hostname ?? null,
    customer_email: request.customerEmail ?? request.service?.customerEmail ?? null,
    reason: request.reason,
    cancel_when: request.cancelWhen,
    denial_reason: request.denialReason,
    created_at: request.createdAt.toISOString(),
    updated_at: request.updatedAt.toISOString(),
    decided_at: request.decidedAt === null ? null : request.decidedAt.toISOString(),
  };
}
