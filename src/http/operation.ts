import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import type { operations } from '../../generated/api.ts';
import type { ByMode, Caller } from '../shared/caller.ts';
import { hasScope, type AuthContext } from './auth-context.ts';
import type { Contract } from './contract.ts';
import { handlersOf, sendReply, type SerializedReply } from './fast-path.ts';
import { claimIdempotencyKey, effectRecordOf } from './idempotency.ts';
import { scenarioOf, throwScenarioError, type TestScenario } from './scenario.ts';

export { serialized, type SerializedReply } from './fast-path.ts';
import type { OperationRules } from './validation.ts';

/** Types of each operation, straight from openapi.yaml through `generated/api.ts`. */
export type OperationId = keyof operations;
type Op<O extends OperationId> = operations[O];
type JsonContent<T> = T extends { content: { 'application/json': infer J } } ? J : never;

export type RequestBody<O extends OperationId> = Op<O> extends { requestBody: infer B }
  ? JsonContent<B>
  : Op<O> extends { requestBody?: infer B }
    ? JsonContent<NonNullable<B>> | undefined
    : undefined;
export type QueryOf<O extends OperationId> = Op<O>['parameters'] extends { query?: infer Q } ? NonNullable<Q> : never;
export type PathOf<O extends OperationId> = Op<O>['parameters'] extends { path?: infer P } ? NonNullable<P> : never;

type Responses<O extends OperationId> = Op<O>['responses'];
export type SuccessStatus<O extends OperationId> = Extract<keyof Responses<O>, 200 | 202>;
export type ResponseBody<O extends OperationId, S extends SuccessStatus<O>> = JsonContent<Responses<O>[S]>;
export type DataOf<O extends OperationId, S extends SuccessStatus<O>> = ResponseBody<O, S> extends { data: infer D }
  ? D
  : never;
type PaginationOf<O extends OperationId, S extends SuccessStatus<O>> = ResponseBody<O, S> extends { pagination?: infer P }
  ? P
  : never;

/** What a handler answers: a success status of its operation with that status's `data`. */
export type Reply<O extends OperationId> = {
  [S in SuccessStatus<O>]: { status: S; data: DataOf<O, S>; pagination?: PaginationOf<O, S> };
}[SuccessStatus<O>];

export interface OperationContext<O extends OperationId> {
  req: Request;
  res: Response;
  body: RequestBody<O>;
  query: QueryOf<O>;
  params: PathOf<O>;
  auth: AuthContext;
  /** The sandbox test scenario (`success` for live keys). */
  scenario: TestScenario;
  requestId: string;
}

/** The caller of a request, in the use cases' words. */
export function callerOf(ctx: Pick<OperationContext<OperationId>, 'auth' | 'scenario' | 'res'>): Caller {
  const { auth } = ctx;
  return {
    brokerId: auth.brokerId,
    apiKeyId: auth.keyId,
    approval: auth.brokerApproval,
    mayReadCredentials: hasScope(auth, 'admin:full'),
    providerReview: ctx.scenario === 'provider_review',
    recordEffect: effectRecordOf(ctx.res),
  };
}

/** The use cases for this request: the key's mode chooses live records or the sandbox, once. */
export function useCasesFor<T>(useCases: ByMode<T>, auth: AuthContext): T {
  return auth.mode === 'test' ? useCases.sandbox : useCases.live;
}

export interface OperationHandler<O extends OperationId, Input> extends OperationRules {
  /**
   * The operation's own input rules beyond the schema (e.g. recipients normalisation). Runs after
   * the schema validator and before any sandbox test scenario, so validation always comes first.
   */
  validate?: (ctx: OperationContext<O>) => Input | Promise<Input>;
  handle: (ctx: OperationContext<O>, input: Input) => Promise<Reply<O> | SerializedReply<O>>;
}

/**
 * Mounts one operation of openapi.yaml on the router, at the method and path the contract gives
 * for its operationId, so a route can never be registered off-contract.
 */
export function operation<O extends OperationId, Input = undefined>(
  router: Router,
  contract: Contract,
  operationId: O,
  handler: OperationHandler<O, Input>,
): void {
  const info = contract.byId.get(operationId);
  if (!info) throw new Error(`openapi.yaml has no operation ${operationId}`);
  const method = info.method.toLowerCase() as 'get' | 'post';
  const handle = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const auth = res.locals.auth as AuthContext | undefined;
      if (!auth) throw new Error(`operation ${operationId} reached without authentication`);
      const ctx: OperationContext<O> = {
        req,
        res,
        body: req.body as RequestBody<O>,
        query: req.query as QueryOf<O>,
        params: req.params as PathOf<O>,
        auth,
        scenario: scenarioOf(req, auth),
        requestId: String(res.locals.requestId),
      };
      // Awaited only when it is a promise: most operations' own checks are synchronous.
      const validated = handler.validate ? handler.validate(ctx) : (undefined as Input);
      const input = validated instanceof Promise ? await validated : (validated as Input);
      if ((await claimIdempotencyKey(res)) === 'answered') return;
      throwScenarioError(ctx.scenario);
      const reply = await handler.handle(ctx, input);
      sendReply(req, res, reply);
    } catch (err) {
      next(err);
    }
  };
  router[method](info.expressPath, handle);
  handlersOf(router).set(operationId, handle as RequestHandler);
  const { bodyRules, fieldDetails } = handler;
  if (bodyRules || fieldDetails) rulesOf(router).set(operationId, { ...(bodyRules && { bodyRules }), ...(fieldDetails && { fieldDetails }) });
}

const rulesByRouter = new WeakMap<Router, Map<string, OperationRules>>();

function rulesOf(router: Router): Map<string, OperationRules> {
  let byOperation = rulesByRouter.get(router);
  if (!byOperation) {
    byOperation = new Map();
    rulesByRouter.set(router, byOperation);
  }
  return byOperation;
}

/** The body rules and field details `operation()` was handed for each operation mounted on `router`. */
export function operationRules(router: Router): (operationId: string | undefined) => OperationRules | undefined {
  const byOperation = rulesOf(router);
  return (operationId) => (operationId === undefined ? undefined : byOperation.get(operationId));
}
