/** Recognising the database errors the code recovers from, for the API and the CLI alike. */
import type { Prisma, PrismaClient } from '../../generated/prisma/client.ts';

/** The tables whose every change is an event: written only by src/events/writes.ts (docs/architecture.md "Writes and their events"). */
type EventedModel = 'service' | 'serviceRequest' | 'webhookEndpoint';
type ReadMethod = 'findUnique' | 'findUniqueOrThrow' | 'findFirst' | 'findFirstOrThrow' | 'findMany' | 'count' | 'aggregate' | 'groupBy' | 'fields';
/**
 * A statement built at run time is beyond every check of what it writes. Tagged templates and the
 * reports' page queries (`$queryRawUnsafe`, SQL constants) stay: their text is checked instead
 * (test/lint/event-writes.test.ts).
 */
type Unchecked = '$executeRawUnsafe';
type ReadDelegates<C> = { [M in EventedModel]: Pick<C[M & keyof C], ReadMethod & keyof C[M & keyof C]> };
type TransactionOptions = { maxWait?: number; timeout?: number; isolationLevel?: Prisma.TransactionIsolationLevel };

/** A transaction's client that may read, but not write, the evented tables. */
export type ReadTx = Omit<Prisma.TransactionClient, EventedModel | Unchecked> & ReadDelegates<Prisma.TransactionClient>;

/**
 * The Prisma client as the rest of src/ holds it (src/db/client.ts hands out no other): the evented
 * tables only read, in its transactions too, so a write of them compiles only in src/events/writes.ts.
 */
export type ReadClient = Omit<PrismaClient, EventedModel | Unchecked | '$transaction'> &
  ReadDelegates<PrismaClient> & {
    $transaction<P extends Prisma.PrismaPromise<unknown>[]>(arg: [...P], options?: TransactionOptions): Promise<{ [K in keyof P]: Awaited<P[K]> }>;
    $transaction<R>(fn: (tx: ReadTx) => Promise<R>, options?: TransactionOptions): Promise<R>;
  };

/** A Prisma client or the client of an open transaction: stores take either. */
export type Db = ReadClient | ReadTx;

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
