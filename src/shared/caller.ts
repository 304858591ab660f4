import type { UnitOfWork } from './unit-of-work.ts';

/**
 * Who a use case acts for, in the domain's words: the broker, the key that asked (recorded on
 * what it creates) and how the broker approves changes, and the unit of work its changes are
 * written in. Built once per request by `operation()` (src/http/operation.ts) from the
 * authenticated key.
 */
export interface Caller {
  readonly brokerId: string;
  readonly apiKeyId: string;
  /** `automatic`: changes take effect at once; `manual`: they wait as requests for a decision. */
  readonly approval: 'automatic' | 'manual';
  /** May read service credentials (an `admin:full` key). */
  readonly mayReadCredentials: boolean;
  /** Sandbox only: the caller asked to see requests wait for the provider's review (`X-Test-Scenario: provider_review`). */
  readonly providerReview: boolean;
  /**
   * What commits with the operation's change, in the change's own transaction (the request's
   * Idempotency-Key record of the effect): `unitOfWork.within(tx).recordEffect(effect)`.
   */
  readonly unitOfWork: UnitOfWork;
}

/** The two implementations of one resource's use cases: live records, or the sandbox's simulation. */
export interface ByMode<T> {
  readonly live: T;
  readonly sandbox: T;
}
