/** Recognising the database errors the code recovers from, for the API and the CLI alike. */
import type { Prisma, PrismaClient } from '../../generated/prisma/client.ts';

/** A Prisma client or the client of an open transaction: stores take either. */
export type Db = PrismaClient | Prisma.TransactionClient;

interface PrismaLikeError {
  code?: unknown;
  meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; kind?: unknown } } } & Record<string, unknown>;
  message?: unknown;
}

/**
 * `P2002`, or a raw query's `P2010` with SQLSTATE 23505. Driver adapters put the constraint in
 * different places of `meta`, so `hint` (e.g. `service_number`) is searched for in the whole error.
 */
export function isUniqueViolation(err: unknown, hint?: string): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as PrismaLikeError;
  const cause = e.meta?.driverAdapterError?.cause;
  const isUnique =
    e.code === 'P2002' || e.code === '23505' ||
    (e.code === 'P2010' && (cause?.originalCode === '23505' || cause?.kind === 'UniqueConstraintViolation'));
  if (!isUnique) return false;
  if (hint === undefined) return true;
  let text = typeof e.message === 'string' ? e.message : '';
  try {
    text += JSON.stringify(e.meta ?? {});
  } catch {
    // meta with cycles: the message is all we have
  }
  return text.includes(hint);
}

/** `text` with LIKE wildcards escaped (for `ILIKE … ESCAPE '\'`). */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
