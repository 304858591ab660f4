/**
 * Each operation's request and reply, typed straight from openapi.yaml through `generated/api.ts`:
 * below both `operation()` and the write path (fast-path.ts), which share them.
 */
import type { operations } from '../../generated/api.ts';

export type OperationId = keyof operations;
type Op<O extends OperationId> = operations[O];
type JsonContent<T> = T extends { content: { 'application/json': infer J } } ? J : never;

type RequestBody<O extends OperationId> = Op<O> extends { requestBody: infer B }
  ? JsonContent<B>
  : Op<O> extends { requestBody?: infer B }
    ? JsonContent<NonNullable<B>> | undefined
    : undefined;
type QueryOf<O extends OperationId> = Op<O>['parameters'] extends { query?: infer Q } ? NonNullable<Q> : never;
type PathOf<O extends OperationId> = Op<O>['parameters'] extends { path?: infer P } ? NonNullable<P> : never;

type Responses<O extends OperationId> = Op<O>['responses'];
export type SuccessStatus<O extends OperationId> = Extract<keyof Responses<O>, 200 | 202>;
type ResponseBody<O extends OperationId, S extends SuccessStatus<O>> = JsonContent<Responses<O>[S]>;
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

/** The request's input, typed from the contract (the schema validator has checked it). */
export interface OperationRequest<O extends OperationId> {
  body: RequestBody<O>;
  query: QueryOf<O>;
  params: PathOf<O>;
}
