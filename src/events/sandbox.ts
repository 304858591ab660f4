/**
 * A sandbox key's events are real test-mode records, read by the one implementation; only the
 * failures `X-Test-Scenario` asks for are the sandbox's own, worded as reads.ts words the live
 * refusals (test/http/scenarios.test.ts holds them equal): `not_found` as for an unknown event,
 * `conflict` on a redelivery to an `endpoint_id` as for a disabled endpoint.
 */
import type { Caller } from '../shared/caller.ts';
import { ConflictError, NotFoundError } from '../shared/errors.ts';
import type { EventUseCases } from './use-cases.ts';

export function sandboxEvents(events: EventUseCases): EventUseCases {
  const known = (caller: Caller, id: string): void => {
    if (caller.simulatedFailure === 'not_found') throw new NotFoundError(`Event ${id} not found`);
  };
  return {
    ...events,
    get: (caller, id) => (known(caller, id), events.get(caller, id)),
    async redeliver(caller, id, endpointId) {
      known(caller, id);
      if (caller.simulatedFailure !== 'conflict' || endpointId === undefined) return events.redeliver(caller, id, endpointId);
      // An unknown event is still the live 404; then the named endpoint answers as if it were disabled.
      await events.get(caller, id);
      throw new ConflictError(`Webhook endpoint ${endpointId} is disabled; enable it before redelivering to it`, 'disabled');
    },
  };
}
