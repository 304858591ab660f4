/**
 * `Idempotency-Key` on POST (openapi.yaml, "Idempotent retries"): a retry with the same key and
 * the same request gets the first answer again (`Idempotent-Replayed: true`) without the operation
 * running again. A wrapper around the operation (`operation()` runs it after the operation's own
 * input rules and before the sandbox scenario, so a request that fails any input check takes no
 * key): it takes the key, hands the operation the unit of work that records its effect in the
 * effect's own transaction, and records the answer the operation returns before it is sent. The
 * keys are kept by a store (src/idempotency/store.ts).
 */
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import stringify from 'safe-stable-stringify';
import type { Logger } from '../logger.ts';
import type { IdempotencyKeys } from '../shared/idempotency-keys.ts';
import { NO_RECORDS, type Effect, type UnitOfWork } from '../shared/unit-of-work.ts';
import { ApiError, type AnsweredError } from './errors.ts';
import type { Answer } from './fast-path.ts';

/** Seals a recorded answer at rest and opens it again (the service-password cipher). */
export interface AnswerSeal {
  encrypt(plaintext: string): string;
  decrypt(stored: string): string;
}

export interface IdempotencyOptions {
  /** How long the first request holds its key before a retry may take it over (it had no effect then). */
  leaseMs: number;
  /** Recorded answers may hold a generated password: they are stored sealed, like the passwords themselves. */
  seal: () => Promise<AnswerSeal>;
  /** How often (at most) this process deletes expired keys. */
  purgeEveryMs?: number;
}

const IDEMPOTENCY_HEADER = 'idempotency-key';
const REPLAYED = { 'Idempotent-Replayed': 'true' } as const;

const RETRY_IN_USE_SECONDS = 1;

/** The operation, run for one request: it answers every outcome (its errors as their envelope). */
export type AnsweredOperation = (unitOfWork: UnitOfWork) => Promise<Answer>;

export interface Idempotency {
  /**
   * Runs the operation of a request. Without an Idempotency-Key (or on another method than POST)
   * just that; with one, once per key: a retry gets the recorded answer, and the key's errors
   * (reused, in use, answer lost) are thrown.
   */
  run(req: Request, res: Response, apiKeyId: string, operation: AnsweredOperation, sameRequest?: unknown): Promise<Answer>;
}

/**
 * What makes two requests "the same": method, path, the body with its keys sorted (or, where the
 * operation says what it reads of the body, `sameRequest`: recipients as the set they normalize to),
 * and the test scenario.
 */
export function fingerprintOf(req: Request, sameRequest?: unknown): string {
  const scenario = String(req.headers['x-test-scenario'] ?? '').toLowerCase();
  const body = sameRequest === undefined ? (req.body ?? null) : sameRequest;
  return createHash('sha256').update(stringify([req.method, req.path, scenario, body]) ?? '').digest('hex');
}

export function createIdempotency(keys: IdempotencyKeys, logger: Logger, options: IdempotencyOptions): Idempotency {
  const purgeEveryMs = options.purgeEveryMs ?? 60_000;
  let nextPurge = 0;
  const runWithKey = async (req: Request, res: Response, apiKeyId: string, key: string, operation: AnsweredOperation, sameRequest: unknown): Promise<Answer> => {
    if (Date.now() >= nextPurge) {
      nextPurge = Date.now() + purgeEveryMs;
      keys.purgeExpired().catch((err: unknown) => logger.warn({ err }, 'could not delete expired idempotency keys'));
    }
    // Opened before the key is taken: a cipher that cannot be opened must not leave the key held.
    const seal = await options.seal();
    const claim = await keys.claim(apiKeyId, key, fingerprintOf(req, sameRequest), options.leaseMs);
    switch (claim.kind) {
      case 'run':
        return hold({ keys, logger, seal, res, key, id: claim.id, owner: claim.owner }, operation);
      case 'replay': {
        const body = claim.body === '' ? '' : seal.decrypt(claim.body);
        res.locals.idempotencyReplayed = true;
        if (claim.status >= 400) res.locals.error = errorOf(body);
        return { status: claim.status, headers: REPLAYED, body };
      }
      case 'reused':
        throw new ApiError(
          'idempotency_key_reused',
          'This Idempotency-Key was already used for a different request (method, path or body); send a new request with a new key',
          { idempotency_key: key },
        );
      case 'in_use':
        throw inUse(key);
      case 'answer_lost':
        throw answerLost(key, claim.effect);
    }
  };
  return {
    run(req, res, apiKeyId, operation, sameRequest) {
      const key = req.method === 'POST' ? req.headers[IDEMPOTENCY_HEADER] : undefined;
      // Without a key, the operation's own promise: not one more async step on every request.
      if (typeof key !== 'string') return operation(NO_RECORDS);
      return runWithKey(req, res, apiKeyId, key, operation, sameRequest);
    },
  };
}

/** The `error` of a recorded error envelope, for the API log of its replay. */
function errorOf(body: string): AnsweredError | undefined {
  try {
    const error = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown; details?: unknown } }).error;
    if (typeof error?.code !== 'string' || typeof error.message !== 'string') return undefined;
    const details = typeof error.details === 'object' && error.details !== null ? (error.details as Record<string, unknown>) : undefined;
    return { code: error.code, message: error.message, details };
  } catch {
    return undefined;
  }
}

function inUse(key: string): ApiError {
  return new ApiError(
    'idempotency_key_in_use',
    `The first request with this Idempotency-Key is still being carried out; retry after ${RETRY_IN_USE_SECONDS} second(s) for its answer`,
    { idempotency_key: key, retry_after: RETRY_IN_USE_SECONDS },
    { 'Retry-After': String(RETRY_IN_USE_SECONDS) },
  );
}

function answerLost(key: string, effect: Effect | null): ApiError {
  const what = effect ? ` (${effect.type} ${effect.id})` : '';
  return new ApiError(
    'idempotency_key_answer_lost',
    `The first request with this Idempotency-Key took effect${what}, but its answer was not recorded; read the result instead of sending the request again`,
    { idempotency_key: key, ...(effect && { effect_type: effect.type, effect_id: effect.id }) },
  );
}

interface Held {
  keys: IdempotencyKeys;
  logger: Logger;
  seal: AnswerSeal;
  res: Response;
  key: string;
  id: bigint;
  owner: string;
}

/**
 * This request holds the key: its operation records its effect through the unit of work (in the
 * effect's transaction), and its answer is recorded before it is sent, so a retry can never get an
 * answer the record does not hold. An answer that asks for a retry (429, 5xx) is not kept: without
 * an effect the key is free again; with one, a retry is told the answer was lost. An answer that
 * could not be recorded is still sent (the retry is then told the answer was lost).
 */
async function hold(held: Held, operation: AnsweredOperation): Promise<Answer> {
  const { keys, seal, key, id, owner } = held;
  const unitOfWork: UnitOfWork = {
    within: (tx) => ({
      async recordEffect(effect) {
        if (!(await keys.recordEffect(tx, id, owner, effect))) throw inUse(key);
      },
    }),
  };
  const answer = await operation(unitOfWork);
  try {
    if (answer.status < 500 && answer.status !== 429) {
      const body = typeof answer.body === 'string' ? answer.body : answer.body.toString('utf8');
      await keys.finish(id, owner, answer.status, body === '' ? '' : seal.encrypt(body));
    } else {
      await keys.release(id, owner);
    }
  } catch (err) {
    held.logger.error({ err, requestId: held.res.locals.requestId }, 'could not record the answer of an idempotent request');
  }
  return answer;
}
