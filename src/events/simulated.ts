/** A simulated change writes its live twin's events in test mode, so an integrator can try a receiver without live data. */
import type { Caller } from '../shared/caller.ts';
import type { Effect } from '../shared/unit-of-work.ts';
import type { PreviousAttributes } from './previous-attributes.ts';
import { recordEvents, type EventType } from './store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export interface SimulatedEvent {
  type: EventType;
  /** The object as the sandbox's answer shows it (never credentials). */
  object: object;
  /** A simulated change of a record: what it changed, as a live change's event says (previous-attributes.ts). */
  previousAttributes?: PreviousAttributes;
}

/** With the Idempotency-Key's record of `effect`, so a retry replays the answer and writes no second event. */
export async function recordSimulatedEvents(prisma: ReadClient, caller: Caller, effect: Effect, events: SimulatedEvent[]): Promise<void> {
  await prisma.$transaction(async (tx) => {
    await recordEvents(
      tx,
      events.map((e) => ({ ...e, brokerId: caller.brokerId, mode: 'test', object: { ...e.object, simulated: true } })),
    );
    await caller.unitOfWork.within(tx).recordEffect(effect);
  });
}

/** How far back the sandbox looks for what it simulated: the broker's newest simulated requests (or cancellations). */
const MADE_REQUESTS_SEARCHED = 1000;

/**
 * The object of the newest `request.created` the sandbox wrote for this broker with `requestId`, if
 * any of its newest ones has it: what a sandbox decision reads back instead of a stored request.
 */
export async function simulatedRequestObject(prisma: ReadClient, brokerId: string, requestId: string): Promise<Record<string, unknown> | undefined> {
  const rows = await prisma.$queryRaw<Array<{ object: Record<string, unknown> }>>`
    SELECT e."data"->'object' AS "object"
      FROM (SELECT "data", "seq" FROM "events"
             WHERE "broker_id" = ${brokerId} AND "mode" = 'test' AND "type" = 'request.created'
             ORDER BY "seq" DESC LIMIT ${MADE_REQUESTS_SEARCHED}) AS e
     WHERE e."data"->'object'->>'request_id' = ${requestId}
     ORDER BY e."seq" DESC LIMIT 1`;
  return rows[0]?.object;
}

/**
 * Whether the sandbox cancelled this service number for this broker (a test-mode `service.cancelled`
 * among its newest): cancelled is final, so no later simulated change may tell of it otherwise.
 */
export async function simulatedCancellation(prisma: ReadClient, brokerId: string, serviceNumber: number): Promise<boolean> {
  const rows = await prisma.$queryRaw<Array<{ found: number }>>`
    SELECT 1 AS "found"
      FROM (SELECT "data" FROM "events"
             WHERE "broker_id" = ${brokerId} AND "mode" = 'test' AND "type" = 'service.cancelled'
             ORDER BY "seq" DESC LIMIT ${MADE_REQUESTS_SEARCHED}) AS e
     WHERE e."data"->'object'->>'service_number' = ${String(serviceNumber)}
     LIMIT 1`;
  return rows.length > 0;
}
