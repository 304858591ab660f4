/**
 * A sandbox key's endpoints are real test-mode rows, served by the one implementation; only the
 * failures `X-Test-Scenario` asks for are the sandbox's own, answered as the live refusals
 * (endpoint-store.ts): `not_found` as for an unknown id, `conflict` on `recover` as for a disabled
 * endpoint (openapi.yaml, *Test scenarios*).
 */
import type { Caller } from '../shared/caller.ts';
import { notFound, recoverRefused } from './endpoint-store.ts';
import type { WebhookEndpointUseCases } from './endpoint-use-cases.ts';

export function sandboxEndpoints(endpoints: WebhookEndpointUseCases): WebhookEndpointUseCases {
  const known = (caller: Caller, id: string): void => {
    if (caller.simulatedFailure === 'not_found') throw notFound(id);
  };
  return {
    ...endpoints,
    get: (caller, id) => (known(caller, id), endpoints.get(caller, id)),
    update: (caller, id, change) => (known(caller, id), endpoints.update(caller, id, change)),
    remove: (caller, id) => (known(caller, id), endpoints.remove(caller, id)),
    rotateSecret: (caller, id) => (known(caller, id), endpoints.rotateSecret(caller, id)),
    ping: (caller, id) => (known(caller, id), endpoints.ping(caller, id)),
    deliveries: (caller, id, query) => (known(caller, id), endpoints.deliveries(caller, id, query)),
    sendExample: (caller, id, type) => (known(caller, id), endpoints.sendExample(caller, id, type)),
    stats: (caller, id, range) => (known(caller, id), endpoints.stats(caller, id, range)),
    async recover(caller, id, since) {
      known(caller, id);
      if (caller.simulatedFailure !== 'conflict') return endpoints.recover(caller, id, since);
      // An unknown id is still the live 404; a known one answers as if it were disabled.
      await endpoints.get(caller, id);
      throw recoverRefused(id, 'disabled');
    },
  };
}
