import type { ErrorRequestHandler } from 'express';
import type { Logger } from 'pino';
import type { Contract } from './contract.ts';
import { ApiError, fromDomainError } from './errors.ts';
import { BODY_TOO_LARGE } from './json-body.ts';
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
  req: Parameters<ErrorRequestHandler>[1],
  contract: Contract,
  operationId?: string,
  rules?: OperationRules,
): ApiError {
  if (err instanceof ApiError) return err;
  const fromDomain = fromDomainError(err);
  if (fromDomain) return fromDomain;
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
        return new ApiError(
          'invalid_request',
          `Content-Encoding ${String(req.headers['content-encoding'] ?? '').slice(0, 40)} is not supported: send the body as it is, or gzip, deflate or br`,
        );
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

/** The one place where anything thrown becomes the error envelope (openapi.yaml, "Errors"). No stack ever leaves. */
export function errorMiddleware(
  contract: Contract,
  logger: Logger,
  rulesOf: (operationId: string | undefined) => OperationRules | undefined = () => undefined,
): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const operationId = (res.locals.operation as { operationId?: string } | undefined)?.operationId;
    const apiError = toApiError(err, req, contract, operationId, rulesOf(operationId));
    if (apiError.status >= 500 && !(err instanceof ApiError && err.details?.scenario)) {
      logger.error({ err, requestId: res.locals.requestId, operationId }, 'request failed');
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
    // Set by the request-id middleware, which runs first; the header already carries it.
    const requestId = String(res.locals.requestId ?? res.getHeader('X-Request-Id') ?? '');
    res.status(apiError.status).json(apiError.toBody(requestId));
  };
}
