import type { UnitOfWork } from './unit-of-work.ts';

/**
 * Sandbox only (`X-Test-Scenario`): a failure the sandbox answers as a live key would meet it, the
 * record in the state that refuses the call (openapi.yaml, *Test scenarios*).
 */
export type SimulatedFailure = 'conflict' | 'not_found' | 'no_data' | 'recipient_failed';

/** Who a use case acts for; built once per request from the authenticated key (src/http/operation.ts). */
export interface Caller {
  readonly brokerId: string;
  readonly apiKeyId: string;
  /** `automatic`: changes take effect at once; `manual`: they wait as requests for a decision. */
  readonly approval: 'automatic' | 'manual';
  /** May read service credentials (an `admin:full` key). */
  readonly mayReadCredentials: boolean;
  /** Sandbox only: the caller asked to see requests wait for the provider's review (`X-Test-Scenario: provider_review`). */
  readonly providerReview: boolean;
  /** Sandbox only: the failure the caller asked to see, for the operations it applies to. */
  readonly simulatedFailure: SimulatedFailure | undefined;
  /** What must commit with the change, in its transaction: `unitOfWork.within(tx).recordEffect(effect)`. */
  readonly unitOfWork: UnitOfWork;
}

/** The two implementations of one resource's use cases: live records, or the sandbox's simulation. */
export interface ByMode<T> {
  readonly live: T;
  readonly sandbox: T;
}
