/**
 * The one door to writing services, requests and webhook endpoints (docs/architecture.md "Writes
 * and their events"): the client the rest of src/ holds (ReadClient, src/shared/db-errors.ts) only
 * reads those tables, and a writing one exists only inside `writeWithEvents`, which records the events the
 * change returns in its own transaction, after its writes. test/lint/event-writes.test.ts compiles
 * a write outside this file and expects the compiler to refuse it.
 */
import type { Prisma } from '../../generated/prisma/client.ts';
import type { ReadClient, ReadTx } from '../shared/db-errors.ts';
import { recordEvents, recordFixedEvents, type FixedEvent, type NewEvent } from './store.ts';

/** A transaction's client that writes every table: handed only to a `writeWithEvents` function. */
export type WriteTx = Prisma.TransactionClient;

/**
 * What a change did: its value and the events that tell of it (`at`: when their deliveries fall due,
 * default now). A FixedEvent (a fixed id and a wished date: the demo's contract examples) goes
 * before the others, which are stamped now.
 */
export interface Changed<T> {
  value: T;
  events: Array<NewEvent | FixedEvent>;
  at?: Date;
}

type TransactionOptions = Parameters<ReadClient['$transaction']>[1];

/**
 * Runs `make` with a writing client in a transaction of its own and records the events it returns
 * in that transaction, as its last work: a change never commits without them.
 */
export async function writeWithEvents<T>(prisma: ReadClient, make: (tx: WriteTx) => Promise<Changed<T>>, options?: TransactionOptions): Promise<T> {
  return prisma.$transaction((tx) => applied(tx as unknown as WriteTx, make), options);
}

/**
 * writeWithEvents inside the caller's transaction (the demo's two changes, one after the other's
 * events): the change and its events commit or roll back with it.
 */
export async function writeWithEventsIn<T>(tx: ReadTx, make: (tx: WriteTx) => Promise<Changed<T>>): Promise<T> {
  return applied(tx as unknown as WriteTx, make);
}

// A declaration, not an arrow in a `const`: a mutant of module-level code would be chosen at import,
// before `npm run mutate:events` switches any on (scripts/mutate-events-runner.mjs).
function isFixed(e: NewEvent | FixedEvent): e is FixedEvent {
  return 'wishedAt' in e;
}

async function applied<T>(tx: WriteTx, make: (tx: WriteTx) => Promise<Changed<T>>): Promise<T> {
  const made = await make(tx);
  await recordFixedEvents(tx, made.events.filter(isFixed));
  await recordEvents(tx, made.events.filter((e) => !isFixed(e)), made.at);
  return made.value;
}
