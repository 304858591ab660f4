import { asDatabaseUnavailable } from '../shared/db-outage.ts';
import { ConflictError, DomainError, InvalidValueError, LimitReachedError, NoDataError, NotFoundError } from '../shared/errors.ts';

/** The error codes of openapi.yaml ("Errors"), and the HTTP status each one leaves with. */
export const ERROR_STATUS = {
  invalid_request: 400,
  missing_parameter: 400,
  invalid_parameter: 400,
  too_many_recipients: 400,
  no_data: 400,
  authentication_failed: 401,
  insufficient_permissions: 403,
  not_found: 404,
  conflict: 409,
  idempotency_key_in_use: 409,
  idempotency_key_answer_lost: 409,
  idempotency_key_reused: 422,
  rate_limit_exceeded: 429,
  server_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorDetails = Record<string, unknown>;

/**
 * The one error type of the service. Anything thrown that is not an ApiError becomes a
 * `500 server_error` in the error middleware, so internals never reach a client.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: ErrorDetails | undefined;
  /** Extra response headers (e.g. `Retry-After` on a 429). */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, details?: ErrorDetails, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = details;
    this.headers = headers;
  }

  /** The envelope; `requestId` is the answer's `X-Request-Id`, repeated so a logged body can be traced. */
  toBody(requestId: string): {
    success: false;
    error: { code: ErrorCode; message: string; details?: ErrorDetails; request_id: string };
  } {
    return {
      success: false,
      error: this.details === undefined
        ? { code: this.code, message: this.message, request_id: requestId }
        : { code: this.code, message: this.message, details: this.details, request_id: requestId },
    };
  }
}

/** An error answer's `error` as its envelope carried it (the request id aside), for the API log. */
export interface AnsweredError {
  code: string;
  message: string;
  details?: Record<string, unknown> | undefined;
}

export const notFound = (message = 'Resource not found', details?: ErrorDetails) =>
  new ApiError('not_found', message, details);

/**
 * `400 missing_parameter`, in the one shape every check uses: `Missing required parameter(s): <missing>`
 * (and a `note` in parentheses), details `{ required, missing }`: every required field of the
 * request, then those missing.
 */
export const missingParameter = (missing: string[], required: string[] = missing, note?: string) =>
  new ApiError('missing_parameter', `Missing required parameter${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}${note ? ` (${note})` : ''}`, {
    required,
    missing,
  });

/**
 * `400 invalid_parameter` about one field, in the one shape every check uses (the schema
 * validator's mapped errors included): `Invalid parameter <field>: <reason>`, details
 * `{ field, location, rule, reason }` and any `extra` after them.
 */
export const invalidParameter = (field: string, location: string, rule: string, reason: string, extra: ErrorDetails = {}) =>
  new ApiError('invalid_parameter', `Invalid parameter ${field}: ${reason}`, { field, location, rule, reason, ...extra });

/** A dependency is away for a while (an outage, not a fault of ours): retry after `retryAfterSeconds`. */
export const serviceUnavailable = (retryAfterSeconds = 1) =>
  new ApiError('service_unavailable', `The service is temporarily unavailable; retry after ${retryAfterSeconds} seconds`, undefined, {
    'Retry-After': String(retryAfterSeconds),
  });

/**
 * The contract's code for each domain error (src/shared/errors.ts): the one place where what a use
 * case or store says becomes a status and code. `undefined` for anything else.
 */
export function fromDomainError(err: unknown): ApiError | undefined {
  if (!(err instanceof DomainError)) return undefined;
  if (err instanceof NotFoundError) return new ApiError('not_found', err.message, err.details);
  if (err instanceof ConflictError) return new ApiError('conflict', err.message, err.details);
  if (err instanceof InvalidValueError) return new ApiError('invalid_parameter', err.message, err.details);
  if (err instanceof NoDataError) return new ApiError('no_data', err.message, err.details);
  if (err instanceof LimitReachedError) {
    return new ApiError('rate_limit_exceeded', err.message, err.details, { 'Retry-After': String(err.retryAfterSeconds) });
  }
  return undefined;
}

/**
 * `503 service_unavailable` with `Retry-After` when `err` says the database is out (src/shared/db-outage.ts:
 * unreachable, out of connections, a transaction that cannot start); `undefined` for anything else.
 */
export function fromOutage(err: unknown): ApiError | undefined {
  const outage = asDatabaseUnavailable(err);
  if (!outage) return undefined;
  return serviceUnavailable(outage.retryAfterSeconds);
}
