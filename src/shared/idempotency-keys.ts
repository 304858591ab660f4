/** Shared by src/http/idempotency.ts and src/idempotency/store.ts, so neither imports the other. */
import type { Effect } from './unit-of-work.ts';
import type { Db } from './db-errors.ts';

/** What to do with a request that carries an Idempotency-Key. */
export type Claim =
  /** Carry it out: this request holds the key (`owner`). */
  | { kind: 'run'; id: bigint; owner: string }
  /** Answer as the first request was answered. */
  | { kind: 'replay'; status: number; body: string }
  /** The key was used for another request (method, path, body or test scenario). */
  | { kind: 'reused' }
  /** The first request is still being carried out. */
  | { kind: 'in_use' }
  /** The first request took effect, but its answer was not recorded. */
  | { kind: 'answer_lost'; effect: Effect | null };

export interface IdempotencyKeys {
  claim(apiKeyId: string, key: string, fingerprint: string, leaseMs: number): Promise<Claim>;
  /** In the effect's transaction: false when this request no longer holds the key. */
  recordEffect(tx: Db, id: bigint, owner: string, effect: Effect): Promise<boolean>;
  /** Records the answer; false when this request no longer holds the key. */
  finish(id: bigint, owner: string, status: number, body: string): Promise<boolean>;
  /** No answer to keep: a key without effect is forgotten; one with an effect ends its lease. */
  release(id: bigint, owner: string): Promise<void>;
  /** Deletes keys older than their 24 hours. */
  purgeExpired(): Promise<number>;
}
