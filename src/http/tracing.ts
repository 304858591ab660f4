import type { RequestHandler } from 'express';
import { traced, tracingOn } from '../shared/tracing.ts';

/**
 * A span per request, named by its operation (`createInvoicesReport`), never by its URL, which may
 * hold a key; a request that matched no operation is named by its method alone. On it: the
 * operation, the status, the broker and the request id. Ended when the response closes (answered
 * or abandoned); everything the request queues or queries is its child.
 */
const requestSpan: RequestHandler = (req, res, next) => {
  void traced(`HTTP ${req.method}`, 'server', { 'http.request.method': req.method, 'client_api.request_id': res.locals.requestId }, (span) =>
    new Promise<void>((resolve) => {
      res.once('close', () => {
        const operation = res.locals.operation;
        if (operation) span.rename(operation.operationId);
        span.set({
          'client_api.operation_id': operation?.operationId,
          'http.route': operation?.pathTemplate,
          'http.response.status_code': res.statusCode,
          'client_api.broker_id': res.locals.auth?.brokerId,
          'client_api.aborted': res.writableFinished ? undefined : true,
        });
        if (res.statusCode >= 500) span.fail(res.locals.failure);
        resolve();
      });
      next();
    }),
  );
};

/** The request's span step, or none with tracing off (not even a check per request). */
export const requestTracing = (): RequestHandler[] => (tracingOn() ? [requestSpan] : []);
