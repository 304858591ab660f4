import { Prisma } from '../../generated/prisma/client.ts';
import type { Credentials } from '../db/credentials.ts';
import { windowCursorSql } from '../shared/cursor-sql.ts';
import { BrokenRecordError, ConflictError, NotFoundError } from '../shared/errors.ts';
import type { PageWindow } from '../shared/page.ts';
import { endOfCurrentBillingPeriod } from '../services/billing.ts';
import { escapeLike, type Db } from '../shared/db-errors.ts';
import type { UnitOfWork } from '../shared/unit-of-work.ts';
import { clampInstant } from '../shared/dates.ts';
import {
  applyDueCancellations,
  insertActiveService,
  lockService,
  serviceAlreadyCancelled,
  withServiceNumberRetry,
} from '../services/store.ts';
import { canonicalRequestId, formatRequestId, isStorableRequestId } from '../shared/ids.ts';
import { REQUEST_INCLUDE, requestData, type RequestWithRelations } from '../services/change-requests.ts';
import { serviceData, type ServiceData, type ServiceWithPlan } from '../services/present.ts';
import { writeWithEvents, type WriteTx } from '../events/writes.ts';
import { previousAttributes, type PreviousAttributes } from '../events/previous-attributes.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export type RequestStatus = 'pending' | 'provider_review' | 'approved' | 'denied';
export type RequestType = 'create' | 'upgrade' | 'downgrade' | 'cancel';
export type RequestSource = 'api' | 'import' | 'portal' | 'admin';

/** A page of the list: by offset, or after or before a request (its parsed id) as a cursor. */
export interface RequestListQuery extends PageWindow<bigint> {
  status?: RequestStatus | undefined;
  type?: RequestType | undefined;
  source?: RequestSource | undefined;
  /** `YYYY-MM-DD`: requests created that UTC day. */
  date?: string | undefined;
  search?: string | undefined;
}

/** Newest first (created_at, then id: stable); one SQL query filters and pages, then the page is loaded by id. */
export async function listRequests(
  db: Db,
  brokerId: string,
  query: RequestListQuery,
): Promise<{ rows: RequestWithRelations[]; total: number; ahead: number }> {
  const cursor = await windowCursorSql(query, {
    table: 'service_requests',
    alias: 'r',
    find: async (id) => (isStorableRequestId(id) ? db.serviceRequest.findFirst({ where: { id: Number(id), brokerId }, select: { id: true } }) : null),
    missing: (id) => `no request ${canonicalRequestId(id)} of this broker`,
  });
  const conditions: Prisma.Sql[] = [Prisma.sql`r."broker_id" = ${brokerId}`];
  if (query.status !== undefined) conditions.push(Prisma.sql`r."status" = ${query.status}::"request_status"`);
  if (query.type !== undefined) conditions.push(Prisma.sql`r."type" = ${query.type}::"request_type"`);
  if (query.source !== undefined) conditions.push(Prisma.sql`r."source" = ${query.source}::"request_source"`);
  if (query.date !== undefined) {
    // A day outside the storable years (0000-01-01) clamps to an empty range: no request.
    const day = new Date(`${query.date}T00:00:00.000Z`);
    const start = clampInstant(day);
    const end = clampInstant(new Date(day.getTime() + 86_400_000));
    conditions.push(Prisma.sql`r."created_at" >= ${start} AND r."created_at" < ${end}`);
  }
  if (query.search !== undefined) {
    // Request id as shown (REQ-000042), host name and customer e-mail (of the request, else of its
    // service), plan names, reason and service number.
    const pattern = `%${escapeLike(query.search)}%`;
    conditions.push(Prisma.sql`(('REQ-' || lpad(r."id"::text, GREATEST(6, length(r."id"::text)), '0')) ILIKE ${pattern} ESCAPE '\\'
      OR COALESCE(r."hostname", s."hostname", '') ILIKE ${pattern} ESCAPE '\\'
      OR COALESCE(r."customer_email", s."customer_email", '') ILIKE ${pattern} ESCAPE '\\'
      OR COALESCE(cp."name", '') ILIKE ${pattern} ESCAPE '\\'
      OR COALESCE(rp."name", '') ILIKE ${pattern} ESCAPE '\\'
      OR COALESCE(r."reason", '') ILIKE ${pattern} ESCAPE '\\'
      OR COALESCE(s."service_number"::text, '') ILIKE ${pattern} ESCAPE '\\')`);
  }
  const where = Prisma.join(conditions, ' AND ');
  const from = Prisma.sql`"service_requests" r
    LEFT JOIN "services" s ON s."id" = r."service_id"
    LEFT JOIN "plans" cp ON cp."id" = r."current_plan_id"
    LEFT JOIN "plans" rp ON rp."id" = r."requested_plan_id"`;
  const [page, counted] = await Promise.all([
    db.$queryRaw<Array<{ id: number }>>`
      SELECT r."id" FROM ${from} WHERE ${where} AND ${cursor.page}
       ORDER BY r."created_at" ${cursor.direction}, r."id" ${cursor.direction} LIMIT ${query.limit} OFFSET ${query.offset}`,
    db.$queryRaw<Array<{ total: number; ahead: number }>>`SELECT count(*)::int AS "total", (${cursor.ahead})::int AS "ahead" FROM ${from} WHERE ${where}`,
  ]);
  // Before a cursor the rows were read oldest first; the list shows them newest first.
  const ids = (query.startingAfter !== undefined || query.endingBefore === undefined ? page : page.reverse()).map((r) => r.id);
  const loaded = await db.serviceRequest.findMany({ where: { id: { in: ids } }, include: REQUEST_INCLUDE });
  const byId = new Map(loaded.map((row) => [row.id, row]));
  return { rows: ids.flatMap((id) => byId.get(id) ?? []), total: counted[0]?.total ?? 0, ahead: counted[0]?.ahead ?? 0 };
}

/** The refusals of a decision, worded once: the sandbox's scenarios answer them too (sandbox.ts). */
export const alreadyDecided = (id: number | bigint, status: string) =>
  new ConflictError(`Request ${canonicalRequestId(BigInt(id))} is ${status}; only a pending request can be approved or denied`, status);
export const requestNotFound = (id: bigint) => new NotFoundError(`Request ${canonicalRequestId(id)} not found`);
export const planChangeRefused = (serviceNumber: number, status: string) =>
  new ConflictError(`Service ${serviceNumber} is ${status}; a plan change applies only to an active service`, status);

/** The broker's request, or `404 not_found` (also for another broker's request). */
async function findRequest(db: Db, brokerId: string, id: bigint): Promise<RequestWithRelations> {
  const request = isStorableRequestId(id)
    ? await db.serviceRequest.findFirst({ where: { id: Number(id), brokerId }, include: REQUEST_INCLUDE })
    : null;
  if (!request) throw requestNotFound(id);
  return request;
}

/** The request's row locked until the decision's transaction ends, as it stands: what its event compares with. */
async function lockRequest(tx: Db, brokerId: string, id: number): Promise<RequestWithRelations> {
  await tx.$queryRaw`SELECT 1 FROM "service_requests" WHERE "id" = ${id} FOR UPDATE`;
  return findRequest(tx, brokerId, BigInt(id));
}

/** One conditional UPDATE: of two concurrent decisions, row locking lets exactly one through; the other answers 409. */
async function claim(
  db: WriteTx,
  brokerId: string,
  id: number,
  decision: 'approved' | 'denied',
  now: Date,
  denialReason: string | null,
): Promise<void> {
  const changed = await db.$executeRaw`
    UPDATE "service_requests"
       SET "status" = ${decision}::"request_status", "denial_reason" = ${denialReason},
           "decided_at" = ${now}, "updated_at" = ${now}
     WHERE "id" = ${id} AND "broker_id" = ${brokerId} AND "status" = 'pending'`;
  if (changed === 0) {
    const current = await db.serviceRequest.findFirst({ where: { id, brokerId }, select: { status: true } });
    throw alreadyDecided(id, current?.status ?? 'unknown');
  }
}

export async function denyRequest(
  prisma: ReadClient,
  brokerId: string,
  id: bigint,
  denialReason: string,
  work: UnitOfWork,
  now = new Date(),
): Promise<RequestWithRelations> {
  const request = await findRequest(prisma, brokerId, id);
  // The request as decided, read in the decision's transaction: its event's object and the answer.
  return writeWithEvents(prisma, async (tx) => {
    const before = requestData(await lockRequest(tx, brokerId, request.id));
    await claim(tx, brokerId, request.id, 'denied', now, denialReason);
    const denied = await findRequest(tx, brokerId, id);
    const object = requestData(denied);
    await work.within(tx).recordEffect({ type: 'request', id: formatRequestId(request.id) });
    return { value: denied, events: [{ brokerId, mode: 'live' as const, type: 'request.denied', object, previousAttributes: previousAttributes(before, object) }], at: now };
  });
}

/** Carried out in the claim's transaction, so any failure rolls the claim back too. */
export async function approveRequest(
  prisma: ReadClient,
  credentials: Credentials,
  brokerId: string,
  id: bigint,
  work: UnitOfWork,
  now = new Date(),
): Promise<RequestWithRelations> {
  // No status check here: the conditional UPDATE in `claim` is the only judge of "still pending".
  const request = await findRequest(prisma, brokerId, id);
  await applyDueCancellations(prisma, brokerId, now);
  // The request as carried out, read in the approval's transaction: its event's object and the answer.
  return withServiceNumberRetry(() =>
    writeWithEvents(prisma, async (tx) => {
      const before = requestData(await lockRequest(tx, brokerId, request.id));
      await claim(tx, brokerId, request.id, 'approved', now, null);
      const serviceEvent = await carryOut(tx, credentials, request, now);
      const approved = await findRequest(tx, brokerId, id);
      const object = requestData(approved);
      await work.within(tx).recordEffect({ type: 'request', id: formatRequestId(request.id) });
      return {
        value: approved,
        events: [{ brokerId, mode: 'live' as const, type: 'request.approved', object, previousAttributes: previousAttributes(before, object) }, { brokerId, mode: 'live' as const, ...serviceEvent }],
        at: now,
      };
    }),
  );
}

/** What carrying out a request did to its service, as the event that tells of it. */
type ServiceEvent =
  | { type: 'service.created'; object: ServiceData }
  | { type: 'service.updated' | 'service.cancelled'; object: ServiceData; previousAttributes: PreviousAttributes };

async function carryOut(tx: WriteTx, credentials: Credentials, request: RequestWithRelations, now: Date): Promise<ServiceEvent> {
  if (request.type === 'create') {
    if (request.requestedPlanId === null || request.hostname === null || request.customerEmail === null) {
      throw new BrokenRecordError(`Request ${formatRequestId(request.id)} lacks the data to create a service`);
    }
    const service = await insertActiveService(
      tx,
      credentials,
      {
        brokerId: request.brokerId,
        planId: request.requestedPlanId,
        hostname: request.hostname,
        customerEmail: request.customerEmail,
        customerName: request.customerName,
        billingCycle: request.billingCycle ?? 'monthly',
      },
      now,
    );
    await tx.serviceRequest.update({ where: { id: request.id }, data: { serviceId: service.id, updatedAt: now } });
    return { type: 'service.created', object: serviceData(service) };
  }
  const service = request.serviceId === null ? null : await lockService(tx, request.serviceId);
  if (!service) {
    throw new ConflictError(`The service of request ${formatRequestId(request.id)} no longer exists`, 'deleted');
  }
  if (request.type === 'upgrade' || request.type === 'downgrade') {
    if (service.status !== 'active') {
      throw planChangeRefused(service.serviceNumber, service.status);
    }
    if (request.requestedPlanId === null) {
      throw new BrokenRecordError(`Request ${formatRequestId(request.id)} names no plan`);
    }
    const changed = await tx.service.update({ where: { id: service.id }, data: { planId: request.requestedPlanId, updatedAt: now }, include: { plan: true } });
    return serviceChange('service.updated', service, changed);
  }
  // cancel
  if (service.status === 'cancelled') {
    throw serviceAlreadyCancelled(service.serviceNumber);
  }
  if (request.cancelWhen === 'immediate') {
    const cancelled = await tx.service.update({
      where: { id: service.id },
      data: { status: 'cancelled', cancelledAt: now, cancelAt: null, updatedAt: now },
      include: { plan: true },
    });
    return serviceChange('service.cancelled', service, cancelled);
  }
  // Scheduled: `cancel_at` is a change of the service (service.updated); `service.cancelled` is
  // written when the cancellation takes effect (applyDueCancellations).
  const cancelAt = endOfCurrentBillingPeriod(service.createdAt, service.billingCycle, now);
  const scheduled = await tx.service.update({ where: { id: service.id }, data: { cancelAt, updatedAt: now }, include: { plan: true } });
  return serviceChange('service.updated', service, scheduled);
}

function serviceChange(type: 'service.updated' | 'service.cancelled', before: ServiceWithPlan, after: ServiceWithPlan): ServiceEvent {
  const object = serviceData(after);
  return { type, object, previousAttributes: previousAttributes(serviceData(before), object) };
}
