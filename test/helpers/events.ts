/** Events as stored, read back for assertions: the columns a test compares, and the object each carries. */
import type { Prisma, PrismaClient } from '../../generated/prisma/client.ts';

export interface StoredEvent {
  id: string;
  type: string;
  mode: string;
  createdAt: Date;
  object: Record<string, unknown>;
}

/** The events `where` selects, in the order they were written. */
export async function storedEvents(prisma: PrismaClient, where: Prisma.EventWhereInput): Promise<StoredEvent[]> {
  const rows = await prisma.event.findMany({ where, orderBy: { seq: 'asc' } });
  return rows.map((e) => ({ id: e.id, type: e.type, mode: e.mode, createdAt: e.createdAt, object: (e.data as { object: Record<string, unknown> }).object }));
}
