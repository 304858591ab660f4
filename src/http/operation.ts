/**
 * `operation()`: how every operation of openapi.yaml is mounted and run. Once per request it
 * resolves who is asking (the gate's key), the use cases of the key's mode (live records or the
 * sandbox) and the Caller they act for, runs the operation's own input rules (`validate`), then its
 * `handle(input, { caller, useCases })` inside the Idempotency-Key wrapper, and writes the answer
 * (errors included) through the one write path, `sendAnswer`.
 */
import type { Request, RequestHandler, Response, Router } from 'express';
import type { ByMode, Caller } from '../shared/caller.ts';
import type { UnitOfWork } from '../shared/unit-of-work.ts';
import { hasScope, type AuthContext } from './auth-context.ts';
import type { Contract, OperationInfo } from './contract.ts';
import type { AnsweredError } from './errors.ts';
import type { ErrorAnswers } from './error-middleware.ts';
import { isRead, sendNotModified, type ConditionalReads } from './conditional.ts';
import { answerOf, sendAnswer, type Answer, type SerializedReply } from './fast-path.ts';
import type { Idempotency } from './idempotency.ts';
import type { OperationId, OperationRequest, Reply } from './operation-types.ts';
import { scenarioOf, simulatedFailureOf, throwScenarioError, type TestScenario } from './scenario.ts';
import type { AnswerCheck, OperationRules } from './validation.ts';

export { serialized, type SerializedReply } from './fast-path.ts';
export type { DataOf } from './operation-types.ts';

/** Inside `namespace Express` below, `Response` would name Express's own empty interface. */
type RateLimitRefund = (res: Response) => void;

/** `res.locals`, typed once for every step that sets or reads it (declaration merging: no casts). */
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express's own declaration to merge into
  namespace Express {
    interface Locals {
      /** Set by the request-id step, the second step of every request. */
      requestId: string;
      /** The operation of openapi.yaml an /api request resolved to (src/app.ts); unset for an unknown one. */
      operation?: OperationInfo;
      /** The key that called, set by the gate once it has passed every check. */
      auth?: AuthContext;
      /** The error envelope's `error` of an error answer, for the API log (set where the answer is made). */
      error?: AnsweredError;
      /** The answer is an Idempotency-Key replay, for the API log. */
      idempotencyReplayed?: boolean;
      /** Set by the gate for a call made with a console session's cookie instead of the key. */
      viaConsole?: boolean;
      /** Set by the gate with `auth`: gives the request's unit of rate limit back (a `304` costs none). */
      refundRateLimit?: RateLimitRefund;
      /** Set by the error middleware on a 503 for an outage: its cause, for the request's warning line. */
      outage?: string;
    }
  }
}

/** What `validate` is handed: the key and the use cases of its mode (input rules that need the catalogue). */
export interface InputContext<U> {
  readonly auth: AuthContext;
  readonly useCases: U;
}

/** What `handle` is handed, resolved once per request. */
export interface OperationContext<U> extends InputContext<U> {
  /** Who the use cases act for, with the unit of work the operation's changes are written in. */
  readonly caller: Caller;
}

export interface OperationHandler<O extends OperationId, Input, U> extends OperationRules {
  /** Both implementations of the operation's use cases; the key's mode chooses one per request. */
  useCases?: ByMode<U>;
  /**
   * The operation's own input rules beyond the schema (e.g. recipients normalisation). Runs after
   * the schema validator and before any sandbox test scenario, so validation always comes first.
   */
  validate?: (request: OperationRequest<O>, context: InputContext<U>) => Input | Promise<Input>;
  handle: (input: Input, context: OperationContext<U>) => Promise<Reply<O> | SerializedReply<O>>;
  /**
   * What an Idempotency-Key's retry must repeat, where it is less than the raw body: the input as
   * the operation reads it (a report's recipients are a set). Default: the body, keys sorted.
   */
  sameRequest?: (input: Input) => unknown;
}

/** What the app hands every operation it mounts (src/app.ts). */
export interface OperationRuntime {
  /** The Idempotency-Key wrapper around the operation (src/http/idempotency.ts). */
  idempotency: Idempotency;
  /** The error envelope of anything thrown (src/http/error-middleware.ts). */
  errorAnswer: ErrorAnswers;
  /** With response validation on (tests): the contract's check of each answer's bytes before they are sent. */
  checkAnswer: AnswerCheck | undefined;
  /** ETags and `304`s (src/http/conditional.ts). */
  conditionalReads: ConditionalReads;
}

interface Mounted {
  rules: OperationRules | undefined;
  handlerWith(runtime: OperationRuntime): RequestHandler;
}

const mountedByRouter = new WeakMap<Router, Map<string, Mounted>>();

function mountedOn(router: Router): Map<string, Mounted> {
  let byOperation = mountedByRouter.get(router);
  if (!byOperation) {
    byOperation = new Map();
    mountedByRouter.set(router, byOperation);
  }
  return byOperation;
}

/**
 * Mounts one operation of openapi.yaml, by operationId, so an operation can never be served
 * off-contract: the app dispatches each /api request to the operation the contract resolved it to
 * (`operationHandlers`).
 */
export function operation<O extends OperationId, Input = undefined, U = undefined>(
  router: Router,
  contract: Contract,
  operationId: O,
  handler: OperationHandler<O, Input, U>,
): void {
  if (!contract.byId.has(operationId)) throw new Error(`openapi.yaml has no operation ${operationId}`);
  const { bodyRules, fieldDetails } = handler;
  const rules = bodyRules || fieldDetails ? { ...(bodyRules && { bodyRules }), ...(fieldDetails && { fieldDetails }) } : undefined;
  mountedOn(router).set(operationId, { rules, handlerWith: (runtime) => requestHandler(operationId, handler, runtime) });
}

function requestHandler<O extends OperationId, Input, U>(
  operationId: O,
  handler: OperationHandler<O, Input, U>,
  runtime: OperationRuntime,
): RequestHandler {
  return async (req, res) => {
    let answer: Answer;
    try {
      answer = await answered(req, res, operationId, handler, runtime);
    } catch (err) {
      answer = await checked(req, res, runtime, runtime.errorAnswer(err, req, res));
    }
    // Only a 200 of a GET (or HEAD) is a representation a client can keep and ask about again.
    if (answer.status === 200 && isRead(req) && runtime.conditionalReads.notModified(req, res, answer)) sendNotModified(res);
    else sendAnswer(res, answer);
  };
}

/**
 * The operation's answer. Not an async function (it may also throw): the promise it returns is the
 * Idempotency-Key wrapper's own, not one more wrapped around it on every request.
 */
function answered<O extends OperationId, Input, U>(
  req: Request,
  res: Response,
  operationId: O,
  handler: OperationHandler<O, Input, U>,
  runtime: OperationRuntime,
): Promise<Answer> {
  const { auth } = res.locals;
  if (!auth) throw new Error(`operation ${operationId} reached without authentication`);
  const useCases = (handler.useCases && (auth.mode === 'test' ? handler.useCases.sandbox : handler.useCases.live)) as U;
  const request = { body: req.body, query: req.query, params: req.params } as OperationRequest<O>;
  const run = (input: Input): Promise<Answer> => {
    const scenario = scenarioOf(req, auth);
    return runtime.idempotency.run(req, res, auth.keyId, async (work) => {
      try {
        throwScenarioError(scenario);
        const reply = await handler.handle(input, { auth, useCases, caller: callerOf(auth, scenario, work) });
        return checked(req, res, runtime, answerOf(reply));
      } catch (err) {
        return checked(req, res, runtime, runtime.errorAnswer(err, req, res));
      }
    }, handler.sameRequest?.(input));
  };
  // Waited for only when it is a promise: most operations' own checks are synchronous.
  const validated = handler.validate ? handler.validate(request, { auth, useCases }) : (undefined as Input);
  return validated instanceof Promise ? validated.then(run) : run(validated as Input);
}

/** The answer, once the contract has checked its bytes (response validation on); else the error's answer. */
function checked(req: Request, res: Response, runtime: OperationRuntime, answer: Answer): Answer | Promise<Answer> {
  if (!runtime.checkAnswer) return answer;
  return runtime.checkAnswer(req, answer).then(
    () => answer,
    (err: unknown) => runtime.errorAnswer(err, req, res),
  );
}

/** The caller of a request, in the use cases' words. */
function callerOf(auth: AuthContext, scenario: TestScenario, unitOfWork: UnitOfWork): Caller {
  return {
    brokerId: auth.brokerId,
    apiKeyId: auth.keyId,
    approval: auth.brokerApproval,
    mayReadCredentials: hasScope(auth, 'admin:full'),
    providerReview: scenario === 'provider_review',
    simulatedFailure: simulatedFailureOf(scenario),
    unitOfWork,
  };
}

/** The request handler of each operation mounted on `router`, by operationId, run with the app's `runtime`. */
export function operationHandlers(router: Router, runtime: OperationRuntime): Map<string, RequestHandler> {
  return new Map([...mountedOn(router)].map(([operationId, mounted]) => [operationId, mounted.handlerWith(runtime)]));
}

/** The body rules and field details `operation()` was handed for each operation mounted on `router`. */
export function operationRules(router: Router): (operationId: string | undefined) => OperationRules | undefined {
  const byOperation = mountedOn(router);
  return (operationId) => (operationId === undefined ? undefined : byOperation.get(operationId)?.rules);
}

/** Whether `operation()` mounted `operationId` on `router`. */
export function isMounted(router: Router, operationId: string): boolean {
  return mountedOn(router).has(operationId);
}
