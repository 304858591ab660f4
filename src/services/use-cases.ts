import type { Credentials } from '../db/credentials.ts';
import type { Logger } from '../logger.ts';
import type { Caller } from '../shared/caller.ts';
import { clampInstant } from '../shared/dates.ts';
import { formatRequestId } from '../shared/ids.ts';
import { cursorOffset, pageOf, type Page, type PageWindow } from '../shared/page.ts';
import { writeWithEvents } from '../events/writes.ts';
import { previousAttributes } from '../events/previous-attributes.ts';
import { REQUEST_INCLUDE, requestData, type RequestData } from './change-requests.ts';
import { generatePassword } from './generate.ts';
import { requirePlan, requireTierChange, type Catalogue } from './plans.ts';
import { serviceData, type BillingCycle, type ServiceCredentials, type ServiceData, type ServiceStatus } from './present.ts';
import type { Freshness, ServiceReadCache } from './read-cache.ts';
import {
  applyDueCancellations,
  createChangeRequest,
  findService,
  insertActiveService,
  listServices,
  lockService,
  requireNoOpenRequest,
  requireStatus,
  serviceAlreadyCancelled,
  serviceNotFound,
  withServiceNumberRetry,
} from './store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export interface NewService {
  plan: string;
  hostname: string;
  customerEmail: string;
  customerName: string | null;
  billingCycle: BillingCycle;
}

/** A create either makes the service (automatic approval) or a create request that waits for a decision. */
export type CreateOutcome =
  | { created: ServiceData }
  | { requested: RequestData & { request_type: 'create'; service_number: null } };

export interface ServiceFilters {
  status?: ServiceStatus | undefined;
  search?: string | undefined;
  modifiedSince?: Date | undefined;
}

/** A page by offset, or after or before a service number (a cursor). */
export interface ServicePageQuery extends ServiceFilters, PageWindow<number> {
  /** Asked for; given only to a caller who may read credentials. */
  includeCredentials: boolean;
}

export type { Page };

export interface PasswordChange {
  object: 'password_update';
  service_number: number;
  password_generated: boolean;
  customer_notified: boolean;
  updated_at: string;
  /** Only a generated password is shown (once). */
  password?: string;
  mode?: 'test';
  simulated?: true;
}

export type PlanChange = 'upgrade' | 'downgrade';
export type CancelWhen = 'immediate' | 'end_of_billing_period';

export interface ServiceUseCases {
  /** The input rules that need the catalogue: checked before anything else happens. */
  checkNewService(plan: string): Promise<void>;
  checkPlanChange(change: PlanChange, plan: string): Promise<void>;
  createService(caller: Caller, service: NewService): Promise<CreateOutcome>;
  listServices(caller: Caller, query: ServicePageQuery): Promise<Page<ServiceData>>;
  /** For a page listServices returned from the read cache: true while it is still the answer. */
  pageFreshness(page: Page<ServiceData>): Freshness | undefined;
  getService(caller: Caller, serviceNumber: number): Promise<ServiceData & { credentials: ServiceCredentials }>;
  changePassword(caller: Caller, serviceNumber: number, chosen: string | undefined): Promise<PasswordChange>;
  requestPlanChange(caller: Caller, serviceNumber: number, change: PlanChange, plan: string): Promise<RequestData>;
  requestCancellation(caller: Caller, serviceNumber: number, reason: string, when: CancelWhen): Promise<RequestData>;
}

export interface ServiceDeps {
  prisma: ReadClient;
  logger: Logger;
  catalogue: () => Promise<Catalogue>;
  credentials: () => Promise<Credentials>;
  /** Service list pages held briefly; told of every change. */
  serviceReads: ServiceReadCache;
  /** Queues an e-mail to a customer; rejects when it could not be queued. */
  sendMail: (mail: { to: string; subject: string; text: string }) => Promise<unknown>;
}

export function liveServices(deps: ServiceDeps): ServiceUseCases {
  return {
    async checkNewService(plan) {
      requirePlan(await deps.catalogue(), plan);
    },
    async checkPlanChange(_change, plan) {
      // The tier rule needs the service's current plan: checked when the change is asked for.
      requirePlan(await deps.catalogue(), plan);
    },
    createService: (caller, input) => createService(deps, caller, input),
    listServices: (caller, query) => listServicePage(deps, caller, query),
    pageFreshness: (page) => deps.serviceReads.freshness(page),
    getService: (caller, serviceNumber) => getService(deps, caller, serviceNumber),
    changePassword: (caller, serviceNumber, chosen) => changePassword(deps, caller, serviceNumber, chosen),
    requestPlanChange: (caller, serviceNumber, change, plan) => requestPlanChange(deps, caller, serviceNumber, change, plan),
    requestCancellation: (caller, serviceNumber, reason, when) => requestCancellation(deps, caller, serviceNumber, reason, when),
  };
}

async function createService(deps: ServiceDeps, caller: Caller, input: NewService): Promise<CreateOutcome> {
  const { prisma } = deps;
  const plan = requirePlan(await deps.catalogue(), input.plan);
  const fields = {
    brokerId: caller.brokerId,
    hostname: input.hostname,
    customerEmail: input.customerEmail,
    customerName: input.customerName,
    billingCycle: input.billingCycle,
  };
  if (caller.approval === 'manual') {
    const request = await writeWithEvents(prisma, async (tx) => {
      const created = await tx.serviceRequest.create({
        data: { ...fields, type: 'create', status: 'pending', source: 'api', requestedPlanId: plan.id, apiKeyId: caller.apiKeyId },
        include: REQUEST_INCLUDE,
      });
      await caller.unitOfWork.within(tx).recordEffect({ type: 'request', id: formatRequestId(created.id) });
      return { value: created, events: [{ brokerId: caller.brokerId, mode: 'live' as const, type: 'request.created', object: requestData(created) }] };
    });
    // A pending create request has no service yet: the contract's 202 says so in its type.
    return { requested: { ...requestData(request), request_type: 'create', service_number: null } };
  }
  // Automatic approval: the service and its (already approved) create request, together.
  const cipher = await deps.credentials();
  const now = new Date();
  const service = await withServiceNumberRetry(() =>
    writeWithEvents(prisma, async (tx) => {
      const created = await insertActiveService(tx, cipher, { ...fields, planId: plan.id }, now);
      const request = await tx.serviceRequest.create({
        data: {
          ...fields,
          type: 'create',
          status: 'approved',
          source: 'api',
          serviceId: created.id,
          requestedPlanId: plan.id,
          apiKeyId: caller.apiKeyId,
          createdAt: now,
          updatedAt: now,
          decidedAt: now,
        },
        include: REQUEST_INCLUDE,
      });
      await caller.unitOfWork.within(tx).recordEffect({ type: 'service', id: String(created.serviceNumber) });
      return {
        value: created,
        events: [
          { brokerId: caller.brokerId, mode: 'live' as const, type: 'service.created', object: serviceData(created) },
          { brokerId: caller.brokerId, mode: 'live' as const, type: 'request.created', object: requestData(request) },
        ],
        at: now,
      };
    }),
  );
  await deps.serviceReads.changed(caller.brokerId);
  return { created: serviceData(service) };
}

async function loadPage(deps: ServiceDeps, caller: Caller, query: ServicePageQuery, withCredentials: boolean) {
  // A bound outside the storable years (0000-01-01) is clamped: it still means "since always".
  const modifiedSince = query.modifiedSince && clampInstant(query.modifiedSince);
  const { rows, total, ahead, nextDueAt } = await listServices(deps.prisma, caller.brokerId, { ...query, modifiedSince });
  const cipher = withCredentials ? await deps.credentials() : undefined;
  const data = rows.map((s) => serviceData(s, cipher && { username: s.username, password: cipher.decrypt(s.passwordEnc) }));
  return { page: pageOf(data, total, query.limit, cursorOffset(query, ahead, data.length)), nextDueAt };
}

async function listServicePage(deps: ServiceDeps, caller: Caller, query: ServicePageQuery): Promise<Page<ServiceData>> {
  // Credentials only on request and only for admin keys; otherwise silently left out.
  if (query.includeCredentials && caller.mayReadCredentials) return (await loadPage(deps, caller, query, true)).page;
  // Passwords are never cached. JSON.stringify: the filters are free text, so no separator is safe.
  const key = `list ${JSON.stringify([query.status, query.search, query.modifiedSince, query.limit, query.offset, query.startingAfter, query.endingBefore])}`;
  return deps.serviceReads.read(caller.brokerId, key, async () => {
    const { page, nextDueAt } = await loadPage(deps, caller, query, false);
    return { value: page, until: nextDueAt };
  });
}

async function getService(deps: ServiceDeps, caller: Caller, serviceNumber: number) {
  await applyDueCancellations(deps.prisma, caller.brokerId);
  const service = await findService(deps.prisma, caller.brokerId, serviceNumber);
  const credentials = { username: service.username, password: (await deps.credentials()).decrypt(service.passwordEnc) };
  return { ...serviceData(service, credentials), credentials };
}

async function changePassword(deps: ServiceDeps, caller: Caller, serviceNumber: number, chosen: string | undefined): Promise<PasswordChange> {
  const { prisma } = deps;
  const now = new Date();
  await applyDueCancellations(prisma, caller.brokerId, now);
  const service = await findService(prisma, caller.brokerId, serviceNumber);
  requireStatus(service, ['pending', 'active', 'suspended'], 'given a new password');
  const password = chosen ?? generatePassword();
  const passwordEnc = (await deps.credentials()).encrypt(password);
  const updated = await writeWithEvents(prisma, async (tx) => {
    const locked = await lockService(tx, service.id);
    if (!locked) throw serviceNotFound(serviceNumber);
    const before = serviceData(locked);
    const changed = await tx.service.update({ where: { id: service.id }, data: { passwordEnc, updatedAt: now }, include: { plan: true } });
    const object = serviceData(changed);
    await caller.unitOfWork.within(tx).recordEffect({ type: 'service', id: String(service.serviceNumber) });
    return { value: changed, events: [{ brokerId: caller.brokerId, mode: 'live' as const, type: 'service.updated', object, previousAttributes: previousAttributes(before, object, { passwordChanged: true }) }], at: now };
  });
  await deps.serviceReads.changed(caller.brokerId);
  const notified = await deps
    .sendMail({
      to: service.customerEmail,
      subject: `New password for your server ${service.hostname}`,
      text: passwordMail(service.customerName, service.hostname, service.serviceNumber, service.username, password),
    })
    .then(
      () => true,
      (err: unknown) => {
        // The password is changed either way; the answer says the customer was not told.
        deps.logger.warn({ err, serviceNumber: service.serviceNumber }, 'password notice not queued');
        return false;
      },
    );
  const change: PasswordChange = {
    object: 'password_update',
    service_number: service.serviceNumber,
    password_generated: chosen === undefined,
    customer_notified: notified,
    updated_at: updated.updatedAt.toISOString(),
  };
  if (chosen === undefined) change.password = password;
  return change;
}

async function requestPlanChange(deps: ServiceDeps, caller: Caller, serviceNumber: number, change: PlanChange, plan: string) {
  const { prisma } = deps;
  await applyDueCancellations(prisma, caller.brokerId);
  const service = await findService(prisma, caller.brokerId, serviceNumber);
  requireStatus(service, ['active'], change === 'upgrade' ? 'upgraded' : 'downgraded');
  await requireNoOpenRequest(prisma, service);
  const requested = requireTierChange(await deps.catalogue(), service.plan, plan, change);
  const request = await createChangeRequest(prisma, service, { type: change, requestedPlanId: requested.id, apiKeyId: caller.apiKeyId }, caller.unitOfWork);
  return requestData(request);
}

async function requestCancellation(deps: ServiceDeps, caller: Caller, serviceNumber: number, reason: string, when: CancelWhen) {
  const { prisma } = deps;
  await applyDueCancellations(prisma, caller.brokerId);
  const service = await findService(prisma, caller.brokerId, serviceNumber);
  if (service.status === 'cancelled') throw serviceAlreadyCancelled(serviceNumber);
  await requireNoOpenRequest(prisma, service);
  const request = await createChangeRequest(prisma, service, { type: 'cancel', reason, cancelWhen: when, apiKeyId: caller.apiKeyId }, caller.unitOfWork);
  return requestData(request);
}

function passwordMail(name: string | null, hostname: string, serviceNumber: number, username: string, password: string): string {
  return [
    `Hello${name ? ` ${name}` : ''},`,
    '',
    `the password of your server ${hostname} (service ${serviceNumber}) has been changed.`,
    '',
    `Login:    ${username}`,
    `Password: ${password}`,
    '',
    'Please keep it safe. If you did not expect this change, contact your provider.',
  ].join('\n');
}
