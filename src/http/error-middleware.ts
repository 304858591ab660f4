import type { ErrorRequestHandler, Request, Response } from 'express';
import type { Contract } from './contract.ts';
import { ApiError, fromDomainError, fromOutage } from './errors.ts';
import { sendAnswer, type Answer } from './fast-path.ts';
import { BODY_TOO_LARGE, unsupportedCoding } from './json-body.ts';
import { isValidatorError, mapValidatorError, type OperationRules } from './validation.ts';

interface BodyParserError {
  type: string;
  status?: number;
}

const isBodyParserError = (err: unknown): err is BodyParserError =>
  typeof err === 'object' && err !== null && typeof (err as { type?: unknown }).type === 'string' &&
  typeof (err as { status?: unknown }).status === 'number';

/** A compressed body that does not decompress: zlib's error, passed on by body-parser as a 400. */
const isDecompressionError = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && /^Z_|^ERR_BROTLI|^ERR__ERROR_/.test(String((err as { code?: unknown }).code ?? '')) &&
  (err as { status?: unknown }).status === 400;

function toApiError(
  err: unknown,
  req: Request,
  contract: Contract,
  operationId?: string,
  rules?: OperationRules,
): ApiError {
  if (err instanceof ApiError) return err;
  const fromDomain = fromDomainError(err);
  if (fromDomain) return fromDomain;
  const outage = fromOutage(err);
  if (outage) return outage;
  if (isDecompressionError(err)) {
    return new ApiError('invalid_request', `Request body could not be decompressed (Content-Encoding: ${String(req.headers['content-encoding'] ?? '').slice(0, 40)})`);
  }
  if (isBodyParserError(err)) {
    switch (err.type) {
      case 'entity.parse.failed':
        return new ApiError('invalid_request', 'Invalid JSON in request body');
      case 'entity.too.large':
        return new ApiError('invalid_request', BODY_TOO_LARGE);
      case 'encoding.unsupported':
        return unsupportedCoding(req.headers['content-encoding']);
      case 'charset.unsupported':
        return new ApiError('invalid_request', 'Request body must be UTF-8 encoded JSON');
      case 'request.aborted':
      case 'request.size.invalid':
        return new ApiError('invalid_request', 'Request body was incomplete');
      default:
        if ((err.status ?? 500) < 500) return new ApiError('invalid_request', 'The request body could not be read');
    }
  }
  if (isValidatorError(err)) return mapValidatorError(err, req, contract, operationId, rules);
  return new ApiError('server_error', 'An internal error occurred; the request may be retried after a delay');
}

/** The error envelope of anything thrown, as its answer; marks what is the server's fault for the request log. */
export type ErrorAnswers = (err: unknown, req: Request, res: Response) => Answer;

/**
 * The one place where anything thrown becomes the error envelope (openapi.yaml, "Errors"). No
 * stack ever leaves. Used by the error middleware and by `operation()`, which answers its own
 * errors (so an Idempotency-Key can record them).
 */
export function errorAnswers(
  contract: Contract,
  rulesOf: (operationId: string | undefined) => OperationRules | undefined = () => undefined,
): ErrorAnswers {
  return (err, req, res) => {
    const operationId = res.locals.operation?.operationId;
    const apiError = toApiError(err, req, contract, operationId, rulesOf(operationId));
    if (apiError.code === 'service_unavailable') {
      // An outage is not the server's fault: a warning on the request's own line (request-log.ts)
      // with the cause, and the key's unit given back.
      res.locals.outage = err instanceof Error ? err.message : String(err);
      const refund = res.locals.refundRateLimit;
      delete res.locals.refundRateLimit;
      refund?.(res);
    } else if (apiError.status >= 500 && !(err instanceof ApiError && err.details?.scenario)) {
      // Logged once, with its stack, on the request's own line when the response ends (request-log.ts).
      res.locals.failure = err;
    }
    // Set by the request-id middleware, which runs first; the header already carries it.
    const requestId = String(res.locals.requestId ?? res.getHeader('X-Request-Id') ?? '');
    res.locals.error = { code: apiError.code, message: apiError.message, details: apiError.details };
    return { status: apiError.status, headers: apiError.headers, body: JSON.stringify(apiError.toBody(requestId)) };
  };
}

/** The app's last handler: whatever a step before the operation (or outside /api) threw. */
export function errorMiddleware(answers: ErrorAnswers): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const answer = answers(err, req, res);
    if (res.headersSent) {
      res.end();
      return;
    }
    sendAnswer(res, answer);
  };
}
