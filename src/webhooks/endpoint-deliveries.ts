/**
 * One endpoint's deliveries as the API lists them (`listWebhookEndpointDeliveries`): newest first,
 * paged by the delivery's public id, each with its event's id and type and its last attempt. The
 * endpoint is looked up in the key's scope first, so another broker's or mode's is not found.
 */
import type { components } from '../../generated/api.ts';
import { ATTEMPT_FIELDS } from '../events/reads.ts';
import { attemptData } from '../events/use-cases.ts';
import { InvalidValueError } from '../shared/errors.ts';
import { findEndpoint, type EndpointScope } from './endpoint-store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export type DeliveryData = components['schemas']['WebhookDelivery'];
export type DeliveryStatus = DeliveryData['status'];
export type DeliveryPage = components['schemas']['WebhookDeliveryListEnvelope'];

export interface DeliveryQuery {
  status?: DeliveryStatus | undefined;
  limit: number;
  /** A delivery's public id: the page starts with the next older delivery. */
  startingAfter?: string | undefined;
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/**
 * For each failed delivery of `ids`, the first later delivery of the same event to the same
 * endpoint that succeeded (a redelivery or a recover), if any: one probe of the (event, endpoint)
 * index each.
 */
async function supersededBy(prisma: ReadClient, ids: bigint[]): Promise<Map<bigint, string>> {
  if (ids.length === 0) return new Map();
  const rows = await prisma.$queryRaw<Array<{ id: bigint; by: string }>>`
    SELECT f."id", s."public_id" AS "by"
      FROM "webhook_deliveries" f
      JOIN LATERAL (
        SELECT n."public_id" FROM "webhook_deliveries" n
         WHERE n."event_id" = f."event_id" AND n."endpoint_id" = f."endpoint_id" AND n."id" > f."id" AND n."status" = 'delivered'
         ORDER BY n."id" LIMIT 1) s ON true
     WHERE f."id" = ANY(${ids.map(String)}::bigint[])`;
  return new Map(rows.map((r) => [BigInt(r.id), r.by]));
}

export async function listDeliveries(prisma: ReadClient, scope: EndpointScope, endpointId: string, query: DeliveryQuery): Promise<Omit<DeliveryPage, 'success'>> {
  await findEndpoint(prisma, scope, endpointId);
  let before: bigint | undefined;
  if (query.startingAfter !== undefined) {
    const row = await prisma.webhookDelivery.findFirst({ where: { publicId: query.startingAfter, endpointId }, select: { id: true } });
    if (!row) {
      throw new InvalidValueError('starting_after', 'query', 'exists', `no delivery ${query.startingAfter} of endpoint ${endpointId} to start after`);
    }
    before = row.id;
  }
  const rows = await prisma.webhookDelivery.findMany({
    where: {
      endpointId,
      ...(query.status !== undefined && { status: query.status }),
      ...(before !== undefined && { id: { lt: before } }),
    },
    orderBy: { id: 'desc' },
    take: query.limit + 1,
    select: {
      id: true,
      publicId: true,
      eventId: true,
      status: true,
      attempts: true,
      nextAttemptAt: true,
      completedAt: true,
      createdAt: true,
      event: { select: { type: true } },
      attemptsMade: {
        orderBy: { number: 'desc' },
        take: 1,
        select: ATTEMPT_FIELDS,
      },
    },
  });
  const page = rows.slice(0, query.limit);
  const recoveredBy = await supersededBy(prisma, page.filter((row) => row.status === 'failed').map((row) => row.id));
  const data = page.map((row): DeliveryData => {
    const [last] = row.attemptsMade;
    return {
      object: 'webhook_delivery',
      id: row.publicId,
      endpoint_id: endpointId,
      event_id: row.eventId,
      event_type: row.event.type as DeliveryData['event_type'],
      status: row.status,
      attempt_count: row.attempts,
      next_attempt_at: row.status === 'pending' ? iso(row.nextAttemptAt) : null,
      completed_at: iso(row.completedAt),
      created_at: row.createdAt.toISOString(),
      last_attempt: last ? attemptData(last) : null,
      superseded_by: recoveredBy.get(row.id) ?? null,
    };
  });
  const hasMore = rows.length > query.limit;
  return { data, pagination: { limit: query.limit, has_more: hasMore, next_starting_after: hasMore ? (page.at(-1)?.publicId ?? null) : null } };
}
