import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import type { operations } from '../../generated/api.ts';
import type { ByMode, Caller } from '../shared/caller.ts';
import { hasScope, type AuthContext } from './auth-context.ts';
import type { Contract } from './contract.ts';
import { scenarioOf, throwScenarioError, type TestScenario } from './scenario.ts';
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

/**
 * A reply already written as JSON, for an answer served many times over (a cached list page):
 * serializing the page on every request showed in a list request's profile (bench/README.md). Build it with
 * `serialized()`, which takes the typed reply, so it holds to the contract like any other.
 */
export interface SerializedReply<O extends OperationId> {
  status: SuccessStatus<O>;
  /**
   * The whole response body, `{"success":true,"data":…[,"pagination":…]}`, as UTF-8 bytes made
   * once: Node writes a Buffer to the socket as it is, where a string body is first joined to the
   * header block, a fresh copy of an 8 KB page on every request for the garbage collector.
   */
  body: Buffer;
  /** `body.length`, as the Content-Length header's value. */
  contentLength: string;
}

function envelope<O extends OperationId>(reply: Reply<O>): Record<string, unknown> {
  const body: Record<string, unknown> = { success: true, data: reply.data };
  if (reply.pagination !== undefined) body.pagination = reply.pagination;
  return body;
}

export function serialized<O extends OperationId>(reply: Reply<O>): SerializedReply<O> {
  const body = Buffer.from(JSON.stringify(envelope(reply)), 'utf8');
  return { status: reply.status, body, contentLength: String(body.length) };
}

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
export function callerOf(ctx: Pick<OperationContext<OperationId>, 'auth' | 'scenario'>): Caller {
  const { auth } = ctx;
  return {
    brokerId: auth.brokerId,
    apiKeyId: auth.keyId,
    approval: auth.brokerApproval,
    mayReadCredentials: hasScope(auth, 'admin:full'),
    providerReview: ctx.scenario === 'provider_review',
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
      throwScenarioError(ctx.scenario);
      const reply = await handler.handle(ctx, input);
      res.status(reply.status as number);
      if (req.app.locals.validateResponses === true) {
        // Response validation checks what res.json is given: give it exactly the reply's JSON.
        res.json('body' in reply ? JSON.parse(reply.body.toString('utf8')) : envelope(reply));
        return;
      }
      // Sent with res.end, not res.json / res.send: res.send makes a Buffer of any body over 1,000
      // characters and works out the content type, charset and freshness of every answer, which
      // for this API are always the same. A one-off answer goes as a string (Node writes it in
      // one chunk with the headers); a pre-serialized one as its own bytes, copied by no one.
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      if ('body' in reply) {
        res.setHeader('Content-Length', reply.contentLength);
        res.end(reply.body);
        return;
      }
      const json = JSON.stringify(envelope(reply));
      res.setHeader('Content-Length', String(Buffer.byteLength(json)));
      res.end(json);
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

const handlersByRouter = new WeakMap<Router, Map<string, RequestHandler>>();

/** The handlers `operation()` mounted on `router`, by operationId. */
function handlersOf(router: Router): Map<string, RequestHandler> {
  let byOperation = handlersByRouter.get(router);
  if (!byOperation) {
    byOperation = new Map();
    handlersByRouter.set(router, byOperation);
  }
  return byOperation;
}

/**
 * The last step of the /api chain: calls the handler `operation()` mounted for the operation the
 * request was resolved to (`res.locals.operation`), without walking the router again. The request
 * was matched against the contract once already; the router's walk over every route's path
 * pattern showed in an API request's profile (bench/README.md). Anything without such a handler
 * goes on to the router.
 */
export function dispatchOperations(router: Router): RequestHandler {
  const byOperation = handlersOf(router);
  return (req, res, next) => {
    const op = res.locals.operation as { operationId: string } | undefined;
    const handle = op ? byOperation.get(op.operationId) : undefined;
    if (handle) return handle(req, res, next);
    next();
  };
}
