/**
 * A sandbox key's request log is its real test-mode entries, read by the one implementation; only
 * `X-Test-Scenario: not_found` is the sandbox's own, answered as the live 404 (store.ts).
 */
import { requestLogNotFound } from './store.ts';
import type { RequestLogUseCases } from './use-cases.ts';

export function sandboxRequestLogs(logs: RequestLogUseCases): RequestLogUseCases {
  return {
    ...logs,
    async get(caller, requestId) {
      if (caller.simulatedFailure === 'not_found') throw requestLogNotFound(requestId);
      return logs.get(caller, requestId);
    },
  };
}
