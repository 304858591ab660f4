/** The public shape of a service (openapi.yaml `Service`), from its database row. */
import type { components } from '../../generated/api.ts';
import type { Plan, Service } from '../../generated/prisma/client.ts';

export type ServiceCredentials = components['schemas']['Credentials'];
export type ServiceData = components['schemas']['Service'];
export type ServiceStatus = components['schemas']['ServiceStatus'];
export type BillingCycle = components['schemas']['BillingCycle'];

export type ServiceWithPlan = Service & { plan: Plan };

/** What the public shape is made of: a service row with its plan, or the columns an import's INSERT returns. */
export type ShownService = Pick<
  Service,
  'serviceNumber' | 'status' | 'hostname' | 'customerEmail' | 'customerName' | 'billingCycle' | 'createdAt' | 'updatedAt' | 'cancelAt' | 'cancelledAt'
> & { plan: Pick<Plan, 'name'> };

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** `credentials` is added only when given: the caller decides whether the key may see them. */
export function serviceData(service: ShownService, credentials?: ServiceCredentials): ServiceData {
  const data: ServiceData = {
    object: 'service',
    service_number: service.serviceNumber,
    status: service.status,
    plan: service.plan.name,
    hostname: service.hostname,
    customer_email: service.customerEmail,
    customer_name: service.customerName,
    billing_cycle: service.billingCycle,
    created_at: service.createdAt.toISOString(),
    updated_at: service.updatedAt.toISOString(),
    cancel_at: iso(service.cancelAt),
    cancelled_at: iso(service.cancelledAt),
  };
  if (credentials) data.credentials = credentials;
  return data;
}
