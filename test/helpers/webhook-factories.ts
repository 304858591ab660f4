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

/** Records one event (and the deliveries it owes) the way a change does; its id. */
export async function event(
  prisma: PrismaClient,
  options: { brokerId: string; type?: EventType; mode?: EventMode; object?: object; at?: Date },
): Promise<string> {
  const [id] = await recordEvents(
    prisma,
    [{ brokerId: options.brokerId, type: options.type ?? 'service.created', mode: options.mode ?? 'live', object: options.object ?? { service_number: 482913570 } }],
    options.at,
  );
  return id!;
}
