import type { Db } from './db-errors.ts';

/** What an operation made or changed, by its public id (service number, REQ-…, run id, we_…, evt_…). */
export interface Effect {
  readonly type: 'service' | 'request' | 'report' | 'webhook_endpoint' | 'event';
  readonly id: string;
}

/**
 * Whatever must commit with an operation's change (the Idempotency-Key's record of the effect), in
 * the change's own transaction so both commit or neither. Made per request by src/http/idempotency.ts.
 */
export interface UnitOfWork {
  /** What this operation writes in `tx`, the transaction of its change. */
  within(tx: Db): InTransaction;
}

/** The writer of one transaction: everything written through it commits or rolls back with the change. */
export interface InTransaction {
  /** Throws when another request has taken the key over, so the change rolls back. */
  recordEffect(effect: Effect): Promise<void>;
}

const nothingToRecord: InTransaction = { recordEffect: async () => {} };

/** A request without an Idempotency-Key (or a use case run outside a request): nothing to write beside the change. */
export const NO_RECORDS: UnitOfWork = { within: () => nothingToRecord };
