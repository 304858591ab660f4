/**
 * Factories for services and service requests (the services engineer's additions to the shared
 * harness). Passwords are encrypted with the app's own credentials key, so the app can show them.
 */
import { randomInt } from 'node:crypto';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { AppDeps } from '../../src/deps.ts';

export type PlanName = 'Basic VPS' | 'Standard VPS' | 'Professional VPS' | 'Enterprise VPS';
type ServiceStatus = 'pending' | 'active' | 'suspended' | 'cancelled';
type BillingCycle = 'monthly' | 'quarterly' | 'annually';

export interface ServiceOptions {
  brokerId: string;
  plan?: PlanName;
  status?: ServiceStatus;
  serviceNumber?: number;
  hostname?: string;
  customerEmail?: string;
  customerName?: string | null;
  billingCycle?: BillingCycle;
  username?: string;
  password?: string;
  createdAt?: Date;
  updatedAt?: Date;
  cancelAt?: Date | null;
  cancelledAt?: Date | null;
}

export async function planId(prisma: PrismaClient, name: PlanName): Promise<number> {
  return (await prisma.plan.findUniqueOrThrow({ where: { name } })).id;
}

/** A service row of `brokerId` (active Standard VPS with a random nine-digit number by default). */
export async function service(t: { prisma: PrismaClient; deps: Pick<AppDeps, 'credentials'> }, options: ServiceOptions) {
  const credentials = await t.deps.credentials();
  const serviceNumber = options.serviceNumber ?? randomInt(100_000_000, 1_000_000_000);
  const createdAt = options.createdAt ?? new Date();
  return t.prisma.service.create({
    data: {
      serviceNumber,
      brokerId: options.brokerId,
      planId: await planId(t.prisma, options.plan ?? 'Standard VPS'),
      status: options.status ?? 'active',
      hostname: options.hostname ?? `vps${serviceNumber}.example.com`,
      customerEmail: options.customerEmail ?? `customer${serviceNumber}@example.com`,
      customerName: options.customerName === undefined ? 'Customer Ltd' : options.customerName,
      billingCycle: options.billingCycle ?? 'monthly',
      username: options.username ?? 'root',
      passwordEnc: credentials.encrypt(options.password ?? 'Initial-Passw0rd'),
      createdAt,
      updatedAt: options.updatedAt ?? createdAt,
      cancelAt: options.cancelAt ?? null,
      cancelledAt: options.cancelledAt ?? null,
    },
    include: { plan: true },
  });
}

export interface RequestOptions {
  brokerId: string;
  type: 'create' | 'upgrade' | 'downgrade' | 'cancel';
  /** The service changed (upgrade, downgrade, cancel). */
  service?: { id: number; planId: number; hostname: string; customerEmail: string };
  status?: 'pending' | 'provider_review' | 'approved' | 'denied';
  source?: 'api' | 'import' | 'portal' | 'admin';
  requestedPlan?: PlanName;
  hostname?: string;
  customerEmail?: string;
  customerName?: string | null;
  billingCycle?: BillingCycle;
  reason?: string;
  cancelWhen?: 'immediate' | 'end_of_billing_period';
  createdAt?: Date;
}

/** A service request row; a `create` without a service gets a host name and customer of its own. */
export async function serviceRequest(prisma: PrismaClient, options: RequestOptions) {
  const createdAt = options.createdAt ?? new Date();
  const n = randomInt(1_000_000);
  return prisma.serviceRequest.create({
    data: {
      brokerId: options.brokerId,
      serviceId: options.service?.id ?? null,
      type: options.type,
      status: options.status ?? 'pending',
      source: options.source ?? 'api',
      currentPlanId: options.service?.planId ?? null,
      requestedPlanId: options.requestedPlan ? await planId(prisma, options.requestedPlan) : null,
      hostname: options.hostname ?? options.service?.hostname ?? `new${n}.example.com`,
      customerEmail: options.customerEmail ?? options.service?.customerEmail ?? `buyer${n}@example.com`,
      customerName: options.customerName ?? null,
      billingCycle: options.billingCycle ?? (options.type === 'create' ? 'monthly' : null),
      reason: options.reason ?? (options.type === 'cancel' ? 'No longer needed' : null),
      cancelWhen: options.cancelWhen ?? (options.type === 'cancel' ? 'immediate' : null),
      decidedAt: options.status === 'approved' || options.status === 'denied' ? createdAt : null,
      createdAt,
      updatedAt: createdAt,
    },
  });
}
