import type { Db } from './db-errors.ts';

/**
 * What an operation made or changed: a service (its number), a request (REQ-…), a report run (its
 * id), a webhook endpoint (we_…) or an event (evt_…: a ping, a redelivery).
 */
export interface Effect {
  readonly type: 'service' | 'request' | 'report' | 'webhook_endpoint' | 'event';
  readonly id: string;
}

/**
 * Whatever must commit with an operation's change, written through the change's own transaction,
 * so both commit or neither: today the request's Idempotency-Key record of the effect (the next
 * such record, an outbox of events, is written the same way). One per request, made by the HTTP
 * layer (src/http/idempotency.ts for a request that holds a key, `NO_RECORDS` otherwise) and handed
 * to the use case with its Caller; the use case asks it for the writer of each transaction it opens.
 */
export interface UnitOfWork {
  /** What this operation writes in `tx`, the transaction of its change. */
  within(tx: Db): InTransaction;
}

/** The writer of one transaction: everything written through it commits or rolls back with the change. */
export interface InTransaction {
  /**
   * Records what the operation made or changed: the request's Idempotency-Key is marked as having
   * taken effect in this commit (nothing is written without a key). Throws when another request
   * has taken the key over: the transaction then rolls back.
   */
  recordEffect(effect: Effect): Promise<void>;
}

const nothingToRecord: InTransaction = { recordEffect: async () => {} };

/** A request without an Idempotency-Key (or a use case run outside a request): nothing to write beside the change. */
export const NO_RECORDS: UnitOfWork = { within: () => nothingToRecord };
