import type { PrismaClient, Prisma } from '../../generated/prisma/client.ts';

/** A Prisma client or the client of an open transaction: domain functions take either. */
export type Db = PrismaClient | Prisma.TransactionClient;

/**
 * Whether a Prisma error is a unique-constraint violation: P2002 from a model query, or P2010
 * (raw query failed) whose driver error is SQLSTATE 23505.
 */
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { code?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; kind?: unknown } } } };
  if (e.code === 'P2002') return true;
  const cause = e.meta?.driverAdapterError?.cause;
  return e.code === 'P2010' && (cause?.originalCode === '23505' || cause?.kind === 'UniqueConstraintViolation');
}
