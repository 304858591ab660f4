import type { UnitOfWork } from './unit-of-work.ts';

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
  /** What must commit with the change, in its transaction: `unitOfWork.within(tx).recordEffect(effect)`. */
  readonly unitOfWork: UnitOfWork;
}

/** The two implementations of one resource's use cases: live records, or the sandbox's simulation. */
export interface ByMode<T> {
  readonly live: T;
  readonly sandbox: T;
}
