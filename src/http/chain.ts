import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Runs middleware one after the other as ONE layer of the app's router, with Express's own rules
 * for each step: `next()` goes on, `next(err)` leaves with the error, and a thrown error or a
 * rejected promise is passed on as `next(err)`.
 *
 * Why: an /api request walked sixteen router layers before its route, and each layer costs a path
 * match, a URL parse and Express's bookkeeping (the router's share of the API's CPU under load
 * is in bench/README.md).
 * `when` keeps the chain to the requests it is for (the router's mount path did that before).
 */
export function chain(handlers: RequestHandler[], when?: (req: Request) => boolean): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    if (when && !when(req)) {
      done();
      return;
    }
    let index = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== false) {
        done(err);
        return;
      }
      const handler = handlers[index++];
      if (!handler) {
        done();
        return;
      }
      try {
        const result: unknown = handler(req, res, next);
        if (result instanceof Promise) result.catch((e: unknown) => done(e ?? new Error('middleware rejected')));
      } catch (e) {
        done(e);
      }
    };
    next();
  };
}
