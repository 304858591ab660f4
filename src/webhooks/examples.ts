/**
 * `sendExampleEvent`: an event of any type for one endpoint only, as a ping is, its object the
 * contract's own example of that type (the example of the type's webhook in openapi.yaml), marked
 * `data.example: true`. Read from the contract the server serves, so what a receiver gets is what
 * the docs show; a contract without an example of some type is refused at start-up.
 */
import { EVENT_TYPES, recordEvents, type EventType } from '../events/store.ts';
import type { PreviousAttributes } from '../events/previous-attributes.ts';
import type { UnitOfWork } from '../shared/unit-of-work.ts';
import { notFound, pingObject, type EndpointScope } from './endpoint-store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export interface ExamplePayload {
  object: Record<string, unknown>;
  previousAttributes?: PreviousAttributes;
}

export type EventExamples = ReadonlyMap<EventType, ExamplePayload>;

type Json = Record<string, unknown>;
const at = (node: unknown, ...keys: string[]): unknown => keys.reduce((n, k) => (typeof n === 'object' && n !== null ? (n as Json)[k] : undefined), node);

/** Each event type's example payload, from the contract's `webhooks`; throws naming a type without one. */
export function eventExamples(document: Json): EventExamples {
  const examples = new Map<EventType, ExamplePayload>();
  for (const type of EVENT_TYPES) {
    const media = at(document, 'webhooks', type, 'post', 'requestBody', 'content', 'application/json') as Json | undefined;
    const first = Object.values((media?.examples ?? {}) as Record<string, Json>)[0];
    const data = at(first, 'value', 'data') as Json | undefined;
    const object = data?.object;
    if (typeof object !== 'object' || object === null) throw new Error(`openapi.yaml has no example of the ${type} webhook (webhooks > ${type} > post > requestBody)`);
    const previous = data?.previous_attributes as PreviousAttributes | undefined;
    examples.set(type, { object: object as Json, ...(previous !== undefined && { previousAttributes: previous }) });
  }
  return examples;
}

/**
 * Records the example event of `type` owed to this endpoint only (whatever its status and types),
 * as recordPing does; its id. A ping's object names this endpoint, as a real ping's does.
 */
export async function recordExample(
  prisma: ReadClient,
  scope: EndpointScope,
  id: string,
  type: EventType,
  examples: EventExamples,
  work: UnitOfWork,
  now: Date,
): Promise<string> {
  const example = examples.get(type)!;
  return prisma.$transaction(async (tx) => {
    const row = await tx.webhookEndpoint.findFirst({ where: { id, brokerId: scope.brokerId, mode: scope.mode }, select: { id: true } });
    if (!row) throw notFound(id);
    const object = type === 'ping' ? pingObject(id) : example.object;
    const [eventId] = await recordEvents(
      tx,
      [{ brokerId: scope.brokerId, type, mode: scope.mode, endpointId: id, object, example: true, ...(example.previousAttributes && { previousAttributes: example.previousAttributes }) }],
      now,
    );
    await work.within(tx).recordEffect({ type: 'event', id: eventId! });
    return eventId!;
  });
}
