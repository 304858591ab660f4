/** Every run issues a fresh pair of keys: a key is shown once and cannot be printed again. */
import type { Plan, Prisma, ServiceStatus, InvoiceStatus } from '../../generated/prisma/client.ts';
import type { Credentials } from '../db/credentials.ts';
import { createKey } from './keys.ts';
import { randomId, randomServiceNumber } from '../shared/ids.ts';
import { generatePassword } from '../services/generate.ts';
import { isUniqueViolation } from '../shared/db-errors.ts';
import { putContractExamples, type DemoSamples, type NewDemoBroker } from './demo-examples.ts';
import { REQUEST_INCLUDE, type RequestWithRelations } from '../services/change-requests.ts';
import type { ServiceWithPlan } from '../services/present.ts';
import type { ReadClient } from '../shared/db-errors.ts';
import type { WriteTx } from '../events/writes.ts';

export const DEMO_SLUG = 'demo';

export interface DemoResult {
  broker: string;
  test_key: string;
  live_key: string;
}

export interface DemoOutcome {
  result: DemoResult;
  /** False when the demo broker already existed (its sample data was kept). */
  created: boolean;
  /** Contract examples left out because another broker holds their id (one line each). */
  skipped: string[];
}

const DAY = 86_400_000;

interface SampleService {
  plan: string;
  status: ServiceStatus;
  host: string;
  customer: [string, string];
  ageDays: number;
}

const SAMPLE_SERVICES: SampleService[] = [
  { plan: 'Basic VPS', status: 'active', host: 'web01', customer: ['Ada Lovelace', 'ada@example.com'], ageDays: 150 },
  { plan: 'Standard VPS', status: 'active', host: 'web02', customer: ['Grace Hopper', 'grace@example.com'], ageDays: 120 },
  { plan: 'Professional VPS', status: 'active', host: 'db01', customer: ['Alan Turing', 'alan@example.com'], ageDays: 100 },
  { plan: 'Enterprise VPS', status: 'suspended', host: 'batch01', customer: ['Edsger Dijkstra', 'edsger@example.com'], ageDays: 130 },
  { plan: 'Basic VPS', status: 'cancelled', host: 'old01', customer: ['Barbara Liskov', 'barbara@example.com'], ageDays: 160 },
  { plan: 'Standard VPS', status: 'pending', host: 'new01', customer: ['Ken Thompson', 'ken@example.com'], ageDays: 1 },
];

/** Nine-digit service numbers not in use yet. */
async function freeServiceNumbers(tx: WriteTx, count: number): Promise<number[]> {
  for (;;) {
    const wanted = new Set<number>();
    while (wanted.size < count) wanted.add(randomServiceNumber());
    const taken = await tx.service.findMany({ where: { serviceNumber: { in: [...wanted] } }, select: { serviceNumber: true } });
    if (taken.length === 0) return [...wanted];
  }
}

/** First day of the month `monthsAgo` months before `now`, UTC midnight. */
function monthStart(now: Date, monthsAgo: number): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - monthsAgo, 1));
}

function invoiceStatus(service: SampleService, monthsAgo: number): InvoiceStatus | undefined {
  switch (service.status) {
    case 'active':
      return monthsAgo === 0 ? 'pending' : 'paid';
    case 'suspended':
      return monthsAgo >= 3 ? 'paid' : 'overdue';
    case 'cancelled':
      return monthsAgo >= 2 ? 'paid' : monthsAgo === 1 ? 'refunded' : 'cancelled';
    default:
      return undefined; // a pending service has not been billed
  }
}

type PlanOf = (name: string) => Plan;
type DemoService = ServiceWithPlan;

async function createDemoServices(tx: WriteTx, brokerId: string, plan: PlanOf, credentials: Credentials, now: Date): Promise<DemoService[]> {
  const numbers = await freeServiceNumbers(tx, SAMPLE_SERVICES.length);
  const services = [];
  for (const [i, s] of SAMPLE_SERVICES.entries()) {
    const createdAt = new Date(now.getTime() - s.ageDays * DAY);
    services.push(
      await tx.service.create({
        data: {
          serviceNumber: numbers[i]!,
          brokerId: brokerId,
          planId: plan(s.plan).id,
          status: s.status,
          hostname: `${s.host}.demo.example.com`,
          customerName: s.customer[0],
          customerEmail: s.customer[1],
          billingCycle: 'monthly',
          username: `u${numbers[i]}`,
          passwordEnc: credentials.encrypt(generatePassword()),
          createdAt,
          updatedAt: s.status === 'cancelled' ? new Date(now.getTime() - 30 * DAY) : createdAt,
          cancelledAt: s.status === 'cancelled' ? new Date(now.getTime() - 30 * DAY) : null,
        },
        include: { plan: true },
      }),
    );
  }
  return services;
}

/** The sample requests, as created (with what their events show). */
async function createDemoRequests(tx: WriteTx, brokerId: string, plan: PlanOf, services: DemoService[], now: Date): Promise<RequestWithRelations[]> {
  const requests: RequestWithRelations[] = [];
  for (const [i, s] of SAMPLE_SERVICES.entries()) {
    if (s.status === 'pending') continue;
    const at = services[i]!.createdAt;
    requests.push(await tx.serviceRequest.create({
      data: {
        brokerId: brokerId,
        serviceId: services[i]!.id,
        type: 'create',
        status: 'approved',
        source: 'admin',
        requestedPlanId: plan(s.plan).id,
        hostname: services[i]!.hostname,
        customerEmail: s.customer[1],
        customerName: s.customer[0],
        billingCycle: 'monthly',
        createdAt: at,
        updatedAt: at,
        decidedAt: at,
      },
      include: REQUEST_INCLUDE,
    }));
  }
  requests.push(await tx.serviceRequest.create({
    data: {
      brokerId: brokerId,
      serviceId: services[0]!.id,
      type: 'upgrade',
      status: 'pending',
      source: 'portal',
      currentPlanId: plan('Basic VPS').id,
      requestedPlanId: plan('Standard VPS').id,
      reason: 'More memory for the shop',
      createdAt: new Date(now.getTime() - 2 * DAY),
      updatedAt: new Date(now.getTime() - 2 * DAY),
    },
    include: REQUEST_INCLUDE,
  }));
  requests.push(await tx.serviceRequest.create({
    data: {
      brokerId: brokerId,
      type: 'create',
      status: 'pending',
      source: 'portal',
      requestedPlanId: plan('Professional VPS').id,
      hostname: 'app01.demo.example.com',
      customerEmail: 'margaret@example.com',
      customerName: 'Margaret Hamilton',
      billingCycle: 'monthly',
      createdAt: new Date(now.getTime() - DAY),
      updatedAt: new Date(now.getTime() - DAY),
    },
    include: REQUEST_INCLUDE,
  }));
  return requests;
}

async function createDemoInvoices(tx: WriteTx, brokerId: string, plan: PlanOf, services: DemoService[], now: Date): Promise<void> {
  const invoices: Prisma.InvoiceCreateManyInput[] = [];
  for (let monthsAgo = 4; monthsAgo >= 0; monthsAgo--) {
    const date = monthStart(now, monthsAgo);
    const yyyymm = date.toISOString().slice(0, 7).replace('-', '');
    for (const [i, s] of SAMPLE_SERVICES.entries()) {
      const status = invoiceStatus(s, monthsAgo);
      if (status === undefined || services[i]!.createdAt > date) continue;
      invoices.push({
        brokerId: brokerId,
        number: `DEMO-${yyyymm}-${String(invoices.length + 1).padStart(4, '0')}`,
        serviceNumber: services[i]!.serviceNumber,
        amount: plan(s.plan).monthlyPrice,
        currency: 'USD',
        status,
        date,
      });
    }
  }
  await tx.invoice.createMany({ data: invoices });
}

/** The demo broker, made in the first run's one transaction: the examples' records and events, then the sample data. */
function newDemoBroker(credentials: Credentials, now: Date): NewDemoBroker {
  return {
    async create(tx) {
      const broker = await tx.broker.create({
        data: { id: randomId('brk_'), slug: DEMO_SLUG, name: 'Demo Hosting Reseller', email: 'demo@example.com', approval: 'automatic' },
      });
      return broker.id;
    },
    samples: (tx, brokerId) => createDemoData(tx, brokerId, credentials, now),
  };
}

async function createDemoData(tx: WriteTx, brokerId: string, credentials: Credentials, now: Date): Promise<DemoSamples> {
  const plans = new Map((await tx.plan.findMany()).map((p) => [p.name, p]));
  const plan = (name: string) => {
    const p = plans.get(name);
    if (!p) throw new Error(`plan catalogue is missing "${name}" (are the migrations applied?)`);
    return p;
  };
  const services = await createDemoServices(tx, brokerId, plan, credentials, now);
  const requests = await createDemoRequests(tx, brokerId, plan, services, now);
  await createDemoInvoices(tx, brokerId, plan, services, now);
  // Their events are the change's (putContractExamples), dated the run like the import's: the records are back-dated, their creation is now.
  return { services, requests };
}

export async function runDemo(prisma: ReadClient, options: { credentials: Credentials; now?: Date; linkTtlHours?: number }): Promise<DemoOutcome> {
  const now = options.now ?? new Date();
  const examples = { credentials: options.credentials, linkTtlHours: options.linkTtlHours ?? 168, now };
  let created = false;
  let skipped: string[] | undefined;
  if (!(await prisma.broker.findUnique({ where: { slug: DEMO_SLUG }, select: { id: true } }))) {
    try {
      ({ skipped } = await putContractExamples(prisma, newDemoBroker(options.credentials, now), examples));
      created = true;
    } catch (e) {
      // A demo run in another process created it a moment ago: use that one.
      if (!isUniqueViolation(e) || !(await prisma.broker.findUnique({ where: { slug: DEMO_SLUG } }))) throw e;
    }
  }
  if (skipped === undefined) {
    const broker = await prisma.broker.findUniqueOrThrow({ where: { slug: DEMO_SLUG }, select: { id: true } });
    ({ skipped } = await putContractExamples(prisma, broker.id, examples));
  }
  const test = await createKey(prisma, { brokerSlug: DEMO_SLUG, mode: 'test', scopes: ['admin:full'], name: 'Demo test key' });
  const live = await createKey(prisma, { brokerSlug: DEMO_SLUG, mode: 'live', scopes: ['admin:full'], name: 'Demo live key' });
  return { result: { broker: DEMO_SLUG, test_key: test.key, live_key: live.key }, created, skipped };
}
