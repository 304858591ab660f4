/** Made by the service operations, listed and decided by src/requests: so they live below both. */
import type { components } from '../../generated/api.ts';
import type { Plan, Service, ServiceRequest } from '../../generated/prisma/client.ts';
import { formatRequestId } from '../shared/ids.ts';

export type RequestData = components['schemas']['ServiceRequest'];

export type RequestWithRelations = ServiceRequest & {
  service: Service | null;
  currentPlan: Plan | null;
  requestedPlan: Plan | null;
};

/** What to load with a request to present it. */
export const REQUEST_INCLUDE = { service: true, currentPlan: true, requestedPlan: true } as const;

export function requestData(request: RequestWithRelations): RequestData {
  return {
    object: 'service_request',
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
