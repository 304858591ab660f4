import type { PrismaClient } from '../../generated/prisma/client.ts';
import { recordEvents, type EventMode, type EventType } from '../../src/events/store.ts';
import { newEndpointId } from '../../src/webhooks/endpoint-store.ts';

/** Small factories for webhook endpoints, events and delivery attempts, written as the server writes them. */

export async function webhookEndpoint(
  prisma: PrismaClient,
  options: { brokerId: string; mode?: EventMode; url?: string; events?: string[]; status?: 'enabled' | 'disabled' },
): Promise<string> {
  const row = await prisma.webhookEndpoint.create({
    data: {
      id: newEndpointId(),
      brokerId: options.brokerId,
      mode: options.mode ?? 'live',
      url: options.url ?? 'https://93.184.216.34/hook',
      events: options.events ?? [],
      status: options.status ?? 'enabled',
      // Never decrypted by these tests' paths: a placeholder, not a real secret.
      secret: 'v1:placeholder',
    },
  });
  return row.id;
}

const AT = '2025-03-01T09:30:00.000Z';

/** The object an event of `type` carries (openapi.yaml EventObject: whole, as the answers show it), for events a test writes itself. */
export function sampleObject(type: EventType): Record<string, unknown> {
  if (type.startsWith('service.')) {
    return {
      object: 'service', service_number: 482913570, status: 'active', plan: 'Standard VPS', hostname: 'web01.client.example',
      customer_email: 'ops@client.example', customer_name: null, billing_cycle: 'monthly', created_at: AT, updated_at: AT, cancel_at: null, cancelled_at: null,
    };
  }
  if (type.startsWith('request.')) {
    return {
      object: 'service_request', request_id: 'REQ-000044', request_type: 'upgrade', request_status: 'pending', source: 'api',
      service_number: 482913570, current_plan: 'Standard VPS', requested_plan: 'Professional VPS', hostname: 'web01.client.example',
      customer_email: 'ops@client.example', reason: null, cancel_when: null, denial_reason: null, created_at: AT, updated_at: AT, decided_at: null,
    };
  }
  if (type.startsWith('report.')) {
    return {
      object: 'report', report_id: '5b0c8a52-31f4-4d7e-9d3c-2f7f1b6f0a11', report_type: 'services', status: 'completed', date_range: null,
      status_filter: null, recipients_sent: 0, recipients_failed: 0, recipients_pending: 0, created_at: AT, finished_at: AT, error: null, recipients: [],
    };
  }
  return { object: 'ping', endpoint_id: 'we_4bK9xT2mQ7vR1nL8pZ3cY6dW' };
}

/** Records one event (and the deliveries it owes) the way a change does; its id. */
export async function event(
  prisma: PrismaClient,
  options: { brokerId: string; type?: EventType; mode?: EventMode; object?: object; at?: Date },
): Promise<string> {
  const type = options.type ?? 'service.created';
  const [id] = await recordEvents(
    prisma,
    [{ brokerId: options.brokerId, type, mode: options.mode ?? 'live', object: options.object ?? sampleObject(type) }],
    options.at,
  );
  return id!;
}

/**
 * `count` events owed to this endpoint only, whose deliveries ended `status` at `endedAt` after
 * `attempts` attempts answered 500, written as the dispatcher leaves them; the events' ids.
 */
export async function endedDeliveries(
  prisma: PrismaClient,
  options: { brokerId: string; endpointId: string; mode?: EventMode; count?: number; status?: 'failed' | 'delivered'; endedAt?: Date; attempts?: number },
): Promise<string[]> {
  const { endpointId, count = 1, status = 'failed', endedAt = new Date(), attempts = 3 } = options;
  const object = sampleObject('service.updated');
  const events = Array.from({ length: count }, () => ({ brokerId: options.brokerId, type: 'service.updated' as const, mode: options.mode ?? 'live', endpointId, object }));
  const ids = await recordEvents(prisma, events, new Date(endedAt.getTime() - 60_000));
  const where = { eventId: { in: ids }, endpointId };
  await prisma.webhookDelivery.updateMany({ where, data: { status, attempts, nextAttemptAt: null, completedAt: endedAt } });
  const deliveries = await prisma.webhookDelivery.findMany({ where, select: { id: true } });
  await prisma.webhookAttempt.createMany({
    data: deliveries.flatMap((d) =>
      Array.from({ length: attempts }, (_, i) => ({ deliveryId: d.id, number: i + 1, attemptedAt: endedAt, statusCode: status === 'delivered' && i === attempts - 1 ? 200 : 500, durationMs: 5 })),
    ),
  });
  return ids;
}
