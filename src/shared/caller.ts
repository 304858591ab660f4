import type { Db } from './db-errors.ts';

/** What an operation made or changed: a service (its number), a request (REQ-…) or a report run (its id). */
export interface Effect {
  readonly type: 'service' | 'request' | 'report';
  readonly id: string;
}

/**
 * Who a use case acts for, in the domain's words: the broker, the key that asked (recorded on
 * what it creates) and how the broker approves changes. Built once per request by the HTTP
 * adapter (`callerOf` in src/http/operation.ts) from the authenticated key.
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
   * Called inside the transaction that writes the operation's effect, so the request's
   * Idempotency-Key is marked as having taken effect in the same commit (nothing happens without a
   * key). Throws when another request has taken over the key: the transaction then rolls back.
   */
  readonly recordEffect: (tx: Db, effect: Effect) => Promise<void>;
}

/** The two implementations of one resource's use cases: live records, or the sandbox's simulation. */
export interface ByMode<T> {
  readonly live: T;
  readonly sandbox: T;
}
