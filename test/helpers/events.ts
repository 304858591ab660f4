/** Events as stored, read back for assertions: the columns a test compares, and the object each carries. */
import type { Prisma, PrismaClient } from '../../generated/prisma/client.ts';

export interface StoredEvent {
  id: string;
  type: string;
  mode: string;
  createdAt: Date;
  object: Record<string, unknown>;
  /** `data.previous_attributes`, for an event of a change. */
  previousAttributes?: Record<string, unknown>;
}

/** The events `where` selects, in the order they were written. */
export async function storedEvents(prisma: PrismaClient, where: Prisma.EventWhereInput): Promise<StoredEvent[]> {
  const rows = await prisma.event.findMany({ where, orderBy: { seq: 'asc' } });
  return rows.map((e) => {
    const data = e.data as { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> };
    return { id: e.id, type: e.type, mode: e.mode, createdAt: e.createdAt, object: data.object, ...(data.previous_attributes && { previousAttributes: data.previous_attributes }) };
  });
}

/** What `change` came to, and the broker's events it wrote, oldest first. */
export async function eventsWrittenBy<T>(prisma: PrismaClient, brokerId: string, change: () => Promise<T>): Promise<{ result: T; events: StoredEvent[] }> {
  const last = await prisma.event.findFirst({ where: { brokerId }, orderBy: { seq: 'desc' }, select: { seq: true } });
  const result = await change();
  return { result, events: await storedEvents(prisma, { brokerId, seq: { gt: last?.seq ?? -1n } }) };
}
