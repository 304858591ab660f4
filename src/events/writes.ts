/**
 * The one door to writing services, requests and webhook endpoints (docs/architecture.md "Writes
 * and their events"): the client the rest of src/ holds (ReadClient, src/shared/db-errors.ts) only
 * reads those tables, and a writing one exists only inside `writeWithEvents`, which records the events the
 * change returns in its own transaction, after its writes. test/lint/event-writes.test.ts compiles
 * a write outside this file and expects the compiler to refuse it.
 */
import type { Prisma } from '../../generated/prisma/client.ts';
import type { Db, ReadClient } from '../shared/db-errors.ts';
import { recordEvents, type NewEvent } from './store.ts';

/** A transaction's client that writes every table: handed only to a `writeWithEvents` function. */
export type WriteTx = Prisma.TransactionClient;

/** What a change did: its value and the events that tell of it (`at`: when their deliveries fall due, default now). */
export interface Changed<T> {
  value: T;
  events: NewEvent[];
  at?: Date;
}

type TransactionOptions = Parameters<ReadClient['$transaction']>[1];

/**
 * Runs `make` with a writing client in a transaction (the caller's own when `db` is one) and records
 * the events it returns in that transaction, as its last work: a change never commits without them.
 */
export async function writeWithEvents<T>(db: Db, make: (tx: WriteTx) => Promise<Changed<T>>, options?: TransactionOptions): Promise<T> {
  // A transaction's client has no `$connect`; outside one, one is opened, as recordEvents' lock needs.
  if (!('$connect' in db)) return applied(db as unknown as WriteTx, make);
  return (db as ReadClient).$transaction((tx) => applied(tx as unknown as WriteTx, make), options);
}

/** Events per statement: an import's 100,000 go in bounded statements (bench/README.md, `bench:import`). */
const EVENTS_PER_STATEMENT = 10_000;

async function applied<T>(tx: WriteTx, make: (tx: WriteTx) => Promise<Changed<T>>): Promise<T> {
  const made = await make(tx);
  // Stryker disable next-line EqualityOperator: `<=` adds an empty slice, which recordEvents skips.
  for (let i = 0; i < made.events.length; i += EVENTS_PER_STATEMENT) {
    // Stryker disable next-line MethodExpression: the whole list records the same events, in one statement (only the size differs).
    await recordEvents(tx, made.events.slice(i, i + EVENTS_PER_STATEMENT), made.at);
  }
  return made.value;
}
