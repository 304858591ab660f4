/** The public shape of a service (openapi.yaml `Service`), from its database row. */
import type { Plan, Service } from '../../generated/prisma/client.ts';

export interface ServiceCredentials {
  username: string;
  password: string;
}

export interface ServiceData {
  service_number: number;
  status: 'pending' | 'active' | 'suspended' | 'cancelled';
  plan: string;
  hostname: string;
  customer_email: string;
  customer_name: string | null;
  billing_cycle: 'monthly' | 'quarterly' | 'annually';
  created_at: string;
  updated_at: string;
  cancel_at: string | null;
  cancelled_at: string | null;
  credentials?: ServiceCredentials;
}

export type ServiceWithPlan = Service & { plan: Plan };

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** `credentials` is added only when given: the caller decides whether the key may see them. */
export function serviceData(service: ServiceWithPlan, credentials?: ServiceCredentials): ServiceData {
  const data: ServiceData = {
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
