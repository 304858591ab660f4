import { Prisma } from '../../generated/prisma/client.ts';
import type { Credentials } from '../db/credentials.ts';
import { windowCursorSql } from '../shared/cursor-sql.ts';
import { ConflictError, NotFoundError } from '../shared/errors.ts';
import type { PageWindow } from '../shared/page.ts';
import { formatRequestId, MAX_INT4, randomServiceNumber } from '../shared/ids.ts';
import { escapeLike, isUniqueViolation, type Db } from '../shared/db-errors.ts';
import type { UnitOfWork } from '../shared/unit-of-work.ts';
import { writeWithEvents, type WriteTx } from '../events/writes.ts';
import { previousAttributes } from '../events/previous-attributes.ts';
import { REQUEST_INCLUDE, requestData } from './change-requests.ts';
import { generatePassword, SERVICE_USERNAME } from './generate.ts';
import { serviceData, type BillingCycle, type ServiceStatus, type ServiceWithPlan } from './present.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export type { BillingCycle, ServiceStatus };



/** Request statuses that still wait for something: a service has at most one such request. */
export const OPEN_REQUEST_STATUSES = ['pending', 'provider_review'] as const;

/**
 * Due scheduled cancellations take effect on read, so every read is exact. The statuses are named
 * (not `<> 'cancelled'`) so the index (broker_id, status, cancel_at) answers with three short range
 * scans; two callers at once cancel once, as the UPDATE's locking sub-select re-checks its condition
 * on the locked row.
 */
export async function applyDueCancellations(prisma: ReadClient, brokerId: string, now = new Date()): Promise<number> {
  const [due] = await prisma.$queryRaw<Array<{ due: boolean }>>(dueCancellationsProbe(brokerId, now));
  if (!due?.due) return 0;
  return cancelDueOf(prisma, brokerId, now);
}

/** The broker's due cancellations, with their events, without the probe (its caller has probed). */
const cancelDueOf = (prisma: ReadClient, brokerId: string, now: Date) => cancelDue(prisma, Prisma.sql`"broker_id" = ${brokerId}`, now);

/** Every broker's due cancellations (the worker, once a minute); how many services were cancelled. */
export async function applyAllDueCancellations(prisma: ReadClient, now = new Date()): Promise<number> {
  return cancelDue(prisma, Prisma.sql`true`, now);
}

/** What a due cancellation changes, as the row stood before it (the event's `previous_attributes`). */
type BeforeCancel = Pick<ServiceWithPlan, 'id' | 'status' | 'updatedAt' | 'cancelledAt'>;

async function cancelDue(prisma: ReadClient, which: Prisma.Sql, now: Date): Promise<number> {
  return writeWithEvents(prisma, async (tx) => {
    // The rows are locked and re-checked by the sub-select before the update, which returns their old values.
    const cancelled = await tx.$queryRaw<BeforeCancel[]>`
      UPDATE "services" s
         SET "status" = 'cancelled', "cancelled_at" = s."cancel_at", "updated_at" = ${now}
        FROM (SELECT "id", "status", "updated_at", "cancelled_at" FROM "services"
               WHERE ${which} AND "status" IN ('pending', 'active', 'suspended') AND "cancel_at" <= ${now}
               FOR UPDATE) old
       WHERE s."id" = old."id"
      RETURNING s."id", old."status"::text AS "status", old."updated_at" AS "updatedAt", old."cancelled_at" AS "cancelledAt"`;
    if (cancelled.length === 0) return { value: 0, events: [] };
    const before = new Map(cancelled.map((c) => [c.id, c]));
    const services = await tx.service.findMany({ where: { id: { in: cancelled.map((c) => c.id) } }, include: { plan: true } });
    return {
      value: cancelled.length,
      events: services.map((service) => {
        const object = serviceData(service);
        const { status, updatedAt, cancelledAt } = before.get(service.id)!;
        return { brokerId: service.brokerId, mode: 'live' as const, type: 'service.cancelled' as const, object, previousAttributes: previousAttributes(serviceData({ ...service, status, updatedAt, cancelledAt }), object) };
      }),
      at: now,
    };
  });
}

/** Whether any of the broker's services has a scheduled cancellation due at `now` (one row: `due`). */
function dueCancellationsProbe(brokerId: string, now: Date): Prisma.Sql {
  return Prisma.sql`
    SELECT EXISTS (
      SELECT 1 FROM "services"
       WHERE "broker_id" = ${brokerId} AND "status" IN ('pending', 'active', 'suspended')
         AND "cancel_at" <= ${now}) AS "due"`;
}

/** The service's row locked until the transaction ends, as it stands (null: none): what a change's event compares with (`previous_attributes`). */
export async function lockService(tx: Db, id: number): Promise<ServiceWithPlan | null> {
  await tx.$queryRaw`SELECT 1 FROM "services" WHERE "id" = ${id} FOR UPDATE`;
  return tx.service.findUnique({ where: { id }, include: { plan: true } });
}

/** The broker's service with that number, or `404 not_found` (also for another broker's service). */
export async function findService(db: Db, brokerId: string, serviceNumber: number): Promise<ServiceWithPlan> {
  const service = Number.isSafeInteger(serviceNumber) && serviceNumber <= MAX_INT4
    ? await db.service.findFirst({ where: { brokerId, serviceNumber }, include: { plan: true } })
    : null;
  if (!service) throw serviceNotFound(serviceNumber);
  return service;
}

/** The refusals of a missing or cancelled service, worded once: the sandbox's scenarios answer them too (sandbox.ts). */
export const serviceNotFound = (serviceNumber: number) => new NotFoundError(`Service ${serviceNumber} not found`);
export const serviceInStatus = (serviceNumber: number, status: string, action: string) =>
  new ConflictError(`Service ${serviceNumber} is ${status}; it cannot be ${action}`, status);
export const serviceAlreadyCancelled = (serviceNumber: number) => new ConflictError(`Service ${serviceNumber} is already cancelled`, 'cancelled');

/** A page of the list: by offset, or after or before a service (its number) as a cursor. */
export interface ServiceListQuery extends PageWindow<number> {
  status?: ServiceStatus | undefined;
  search?: string | undefined;
  modifiedSince?: Date | undefined;
}

/**
 * The due-cancellation probe, the count and the page in one statement: under load a round trip is
 * what a list costs most (bench/README.md). Until `nextDueAt` the page cannot change without a write.
 */
export async function listServices(
  db: ReadClient,
  brokerId: string,
  query: ServiceListQuery,
  now = new Date(),
): Promise<{ rows: ServiceWithPlan[]; total: number; ahead: number; nextDueAt: Date | null }> {
  const cursor = await windowCursorSql(query, {
    table: 'services',
    alias: 's',
    find: async (serviceNumber) => (serviceNumber <= MAX_INT4 ? db.service.findFirst({ where: { brokerId, serviceNumber }, select: { id: true } }) : null),
    missing: (serviceNumber) => `no service ${serviceNumber} of this broker`,
  });
  const conditions: Prisma.Sql[] = [Prisma.sql`s."broker_id" = ${brokerId}`];
  if (query.status !== undefined) conditions.push(Prisma.sql`s."status" = ${query.status}::"service_status"`);
  if (query.modifiedSince !== undefined) conditions.push(Prisma.sql`s."updated_at" >= ${query.modifiedSince}`);
  if (query.search !== undefined) {
    // One case-insensitive substring test over every searchable column, the number included.
    const pattern = `%${escapeLike(query.search)}%`;
    conditions.push(Prisma.sql`(s."hostname" ILIKE ${pattern} ESCAPE '\\'
      OR s."customer_email" ILIKE ${pattern} ESCAPE '\\'
      OR COALESCE(s."customer_name", '') ILIKE ${pattern} ESCAPE '\\'
      OR s."service_number"::text ILIKE ${pattern} ESCAPE '\\')`);
  }
  const where = Prisma.join(conditions, ' AND ');
  const read = () => db.$queryRaw<PageRow[]>`
    SELECT c."total", c."ahead", (${dueCancellationsProbe(brokerId, now)}) AS "due",
           (SELECT min(n."cancel_at") FROM "services" n
             WHERE n."broker_id" = ${brokerId} AND n."status" IN ('pending', 'active', 'suspended')
               AND n."cancel_at" > ${now}) AS "nextDueAt",
           page.*
      FROM (SELECT count(*)::int AS "total", (${cursor.ahead})::int AS "ahead" FROM "services" s WHERE ${where}) c
      LEFT JOIN LATERAL (
        SELECT s."id", s."service_number" AS "serviceNumber", s."broker_id" AS "brokerId", s."plan_id" AS "planId",
               s."status"::text AS "status", s."hostname", s."customer_email" AS "customerEmail",
               s."customer_name" AS "customerName", s."billing_cycle"::text AS "billingCycle", s."username",
               s."password_enc" AS "passwordEnc", s."created_at" AS "createdAt", s."updated_at" AS "updatedAt",
               s."cancel_at" AS "cancelAt", s."cancelled_at" AS "cancelledAt",
               p."name" AS "planName", p."tier" AS "planTier", p."monthly_price"::text AS "planMonthlyPrice",
               p."currency" AS "planCurrency"
          FROM "services" s JOIN "plans" p ON p."id" = s."plan_id"
         WHERE ${where} AND ${cursor.page}
         ORDER BY s."created_at" ${cursor.direction}, s."id" ${cursor.direction} LIMIT ${query.limit} OFFSET ${query.offset}
      ) page ON true
     ORDER BY page."createdAt" DESC, page."id" DESC`;
  let result = await read();
  if (result[0]?.due) {
    await cancelDueOf(db, brokerId, now);
    result = await read();
  }
  const rows = result
    .filter((row) => row.id !== null)
    .map(({ planName, planTier, planMonthlyPrice, planCurrency, total: _total, ahead: _ahead, due: _due, nextDueAt: _next, ...service }): ServiceWithPlan => ({
      ...service,
      plan: { id: service.planId, name: planName, tier: planTier, monthlyPrice: new Prisma.Decimal(planMonthlyPrice), currency: planCurrency },
    }));
  return { rows, total: result[0]?.total ?? 0, ahead: result[0]?.ahead ?? 0, nextDueAt: result[0]?.nextDueAt ?? null };
}

/** One service of the page per row, with the count; all null when the page is empty. */
type PageRow = Omit<ServiceWithPlan, 'plan'> & {
  total: number;
  ahead: number;
  due: boolean;
  nextDueAt: Date | null;
  planName: string;
  planTier: number;
  planMonthlyPrice: string;
  planCurrency: string;
};

/** The row of a service to insert (the use cases' `NewService` is what a client asked for). */
export interface NewServiceRow {
  brokerId: string;
  planId: number;
  hostname: string;
  customerEmail: string;
  customerName: string | null;
  billingCycle: BillingCycle;
}

/** A number collision raises a unique violation that `withServiceNumberRetry` retries as a whole transaction. */
export async function insertActiveService(
  db: WriteTx,
  credentials: Credentials,
  input: NewServiceRow,
  now: Date,
): Promise<ServiceWithPlan> {
  // Most collisions are seen here, before the INSERT, so the transaction rarely aborts.
  let serviceNumber = randomServiceNumber();
  for (let i = 0; i < 5 && (await db.service.count({ where: { serviceNumber } })) > 0; i += 1) {
    serviceNumber = randomServiceNumber();
  }
  return db.service.create({
    data: {
      serviceNumber,
      brokerId: input.brokerId,
      planId: input.planId,
      status: 'active',
      hostname: input.hostname,
      customerEmail: input.customerEmail,
      customerName: input.customerName,
      billingCycle: input.billingCycle,
      username: SERVICE_USERNAME,
      passwordEnc: credentials.encrypt(generatePassword()),
      createdAt: now,
      updatedAt: now,
    },
    include: { plan: true },
  });
}

/** For two inserts racing for the same random number past the pre-check. */
export async function withServiceNumberRetry<T>(work: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (err) {
      if (attempt >= attempts || !isUniqueViolation(err, 'service_number')) throw err;
    }
  }
}

/** `409 conflict` unless the service is in one of `allowed`. */
export function requireStatus(service: ServiceWithPlan, allowed: readonly ServiceStatus[], action: string): void {
  if (!allowed.includes(service.status)) throw serviceInStatus(service.serviceNumber, service.status, action);
}

/** `409 conflict` when the service already has an open change request. */
export async function requireNoOpenRequest(db: Db, service: ServiceWithPlan): Promise<void> {
  const open = await db.serviceRequest.findFirst({
    where: { serviceId: service.id, status: { in: [...OPEN_REQUEST_STATUSES] } },
    orderBy: { id: 'asc' },
  });
  if (open) throw openRequestConflict(service, open.id, open.type, open.status);
}

function openRequestConflict(service: ServiceWithPlan, requestId: number, type: string, status: string) {
  // current_status names what blocks the change: the open request's status (openapi.yaml, ConflictError).
  return new ConflictError(
    `Service ${service.serviceNumber} already has a ${status} ${type} request (${formatRequestId(requestId)}); ` +
      'it must be approved or denied before another change',
    status,
    { pending_request_id: formatRequestId(requestId), service_status: service.status },
  );
}

export interface NewChangeRequest {
  type: 'upgrade' | 'downgrade' | 'cancel';
  requestedPlanId?: number;
  reason?: string;
  cancelWhen?: 'immediate' | 'end_of_billing_period';
  apiKeyId: string;
}

/** The partial unique index settles a race between two callers past `requireNoOpenRequest`: the loser gets the same 409. */
export async function createChangeRequest(
  prisma: ReadClient,
  service: ServiceWithPlan,
  input: NewChangeRequest,
  work: UnitOfWork,
) {
  try {
    return await writeWithEvents(prisma, async (tx) => {
      const request = await tx.serviceRequest.create({
        data: {
          brokerId: service.brokerId,
          serviceId: service.id,
          type: input.type,
          status: 'pending',
          source: 'api',
          currentPlanId: service.planId,
          requestedPlanId: input.requestedPlanId ?? null,
          hostname: service.hostname,
          customerEmail: service.customerEmail,
          customerName: service.customerName,
          billingCycle: service.billingCycle,
          reason: input.reason ?? null,
          cancelWhen: input.cancelWhen ?? null,
          apiKeyId: input.apiKeyId,
        },
        include: REQUEST_INCLUDE,
      });
      await work.within(tx).recordEffect({ type: 'request', id: formatRequestId(request.id) });
      return { value: request, events: [{ brokerId: service.brokerId, mode: 'live' as const, type: 'request.created', object: requestData(request) }] };
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      await requireNoOpenRequest(prisma, service);
    }
    throw err;
  }
}
