/**
 * The sandbox's events: a test-mode key's simulated change writes no business record, but it
 * does write the events the same live change would, marked `mode: "test"` with `simulated: true`
 * in the object, so they reach the broker's test-mode endpoints only and an integrator can try a
 * receiver without touching live data.
 */
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { Caller } from '../shared/caller.ts';
import type { Effect } from '../shared/unit-of-work.ts';
import { recordEvents, type EventType } from './store.ts';

export interface SimulatedEvent {
  type: EventType;
  /** The object as the sandbox's answer shows it (never credentials). */
  object: object;
}

/**
 * Writes `events` in test mode, with the deliveries they owe to test-mode endpoints, in one
 * transaction with the request's Idempotency-Key record of `effect` (the simulated record): a
 * retry of the request replays the answer and writes no second event.
 */
export async function recordSimulatedEvents(prisma: PrismaClient, caller: Caller, effect: Effect, events: SimulatedEvent[]): Promise<void> {
  await prisma.$transaction(async (tx) => {
    await recordEvents(
      tx,
      events.map((e) => ({ brokerId: caller.brokerId, type: e.type, mode: 'test', object: { ...e.object, simulated: true } })),
    );
    await caller.unitOfWork.within(tx).recordEffect(effect);
  });
}
