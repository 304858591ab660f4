/**
 * `Idempotency-Key` on POST (openapi.yaml, "Idempotent retries"): a retry with the same key and
 * the same request gets the first answer again (`Idempotent-Replayed: true`) without the operation
 * running again. The /api chain's step (`idempotency`) prepares the check; `operation()` runs it
 * (`claimIdempotencyKey`) after the operation's own input rules and before the sandbox scenario,
 * so a request that fails any input check takes no key. The keys are kept by a store
 * (src/idempotency/store.ts).
 */
import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import stringify from 'safe-stable-stringify';
import type { Logger } from '../logger.ts';
import type { Caller, Effect } from '../shared/caller.ts';
import type { IdempotencyKeys } from '../shared/idempotency-keys.ts';
import type { AuthContext } from './auth-context.ts';
import { ApiError } from './errors.ts';

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

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';

const RETRY_IN_USE_SECONDS = 1;

/** `recordEffect` of a request without a key: nothing to record. */
export const noEffectRecord: Caller['recordEffect'] = async () => {};

/** The Caller's `recordEffect` for this request (set by the step when the request holds a key). */
export function effectRecordOf(res: Response): Caller['recordEffect'] {
  return (res.locals.recordEffect as Caller['recordEffect'] | undefined) ?? noEffectRecord;
}

/** What makes two requests "the same": method, path, the body with its keys sorted, and the test scenario. */
export function fingerprintOf(req: Request): string {
  const scenario = String(req.headers['x-test-scenario'] ?? '').toLowerCase();
  return createHash('sha256').update(stringify([req.method, req.path, scenario, req.body ?? null]) ?? '').digest('hex');
}

type KeyCheck = () => Promise<'answered' | 'go on'>;

/**
 * For a POST with an Idempotency-Key: leaves the check for `claimIdempotencyKey`, which the
 * operation runs once its input is known to be valid.
 */
export function idempotency(keys: IdempotencyKeys, logger: Logger, options: IdempotencyOptions): RequestHandler {
  const purgeEveryMs = options.purgeEveryMs ?? 60_000;
  let nextPurge = 0;
  return (req, res, next) => {
    const key = req.method === 'POST' ? req.headers[IDEMPOTENCY_HEADER] : undefined;
    if (typeof key !== 'string') return next();
    if (Date.now() >= nextPurge) {
      nextPurge = Date.now() + purgeEveryMs;
      keys.purgeExpired().catch((err: unknown) => logger.warn({ err }, 'could not delete expired idempotency keys'));
    }
    const check: KeyCheck = () => checkKey(keys, logger, options, req, res, key);
    res.locals.idempotencyCheck = check;
    next();
  };
}

/**
 * Takes the request's Idempotency-Key, or answers for it: `answered` when the recorded answer
 * was replayed; throws the key's errors. Without a key: `go on`.
 */
export function claimIdempotencyKey(res: Response): Promise<'answered' | 'go on'> {
  const check = res.locals.idempotencyCheck as KeyCheck | undefined;
  return check ? check() : Promise.resolve('go on');
}

async function checkKey(
  keys: IdempotencyKeys,
  logger: Logger,
  options: IdempotencyOptions,
  req: Request,
  res: Response,
  key: string,
): Promise<'answered' | 'go on'> {
  const auth = res.locals.auth as AuthContext;
  // Opened before the key is taken: a cipher that cannot be opened must not leave the key held.
  const seal = await options.seal();
  const claim = await keys.claim(auth.keyId, key, fingerprintOf(req), options.leaseMs);
  switch (claim.kind) {
    case 'run':
      hold(keys, logger, seal, res, key, claim.id, claim.owner);
      return 'go on';
    case 'replay': {
      const body = claim.body === '' ? '' : seal.decrypt(claim.body);
      res.status(claim.status).setHeader(REPLAYED_HEADER, 'true').setHeader('Content-Type', 'application/json; charset=utf-8');
      res.end(body);
      return 'answered';
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

/**
 * This request holds the key: its operation records its effect through `recordEffect`, and its
 * answer is recorded before it is sent, so a retry can never get an answer the record does not
 * hold. An answer that asks for a retry (429, 5xx) is not kept: without an effect the key is free
 * again; with one, a retry is told the answer was lost.
 */
function hold(keys: IdempotencyKeys, logger: Logger, seal: AnswerSeal, res: Response, key: string, id: bigint, owner: string): void {
  const recordEffect: Caller['recordEffect'] = async (tx, effect) => {
    if (!(await keys.recordEffect(tx, id, owner, effect))) throw inUse(key);
  };
  res.locals.recordEffect = recordEffect;
  const end = res.end;
  res.end = function endAfterRecording(this: Response, ...args: unknown[]) {
    res.end = end;
    const chunk = args[0];
    const body = Buffer.isBuffer(chunk) ? chunk.toString('utf8') : typeof chunk === 'string' ? chunk : '';
    const status = res.statusCode;
    const keep = status < 500 && status !== 429;
    const recorded = keep ? Promise.resolve().then(() => keys.finish(id, owner, status, body === '' ? '' : seal.encrypt(body))) : keys.release(id, owner);
    recorded
      .catch((err: unknown) => logger.error({ err, requestId: res.locals.requestId }, 'could not record the answer of an idempotent request'))
      .finally(() => (end as (...a: unknown[]) => Response).apply(this, args));
    return this;
  } as Response['end'];
}
