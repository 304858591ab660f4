import pg from 'pg';

/**
 * Runs the work handed to it one piece at a time, in the order it was handed over, whatever the
 * earlier pieces' outcome. For a node-postgres connection that two flows query at once: node-postgres
 * queues a query sent while another runs, but warns that pg 9 will refuse it.
 */
export function oneAtATime(): <T>(work: () => Promise<T>) => Promise<T> {
  let previous: Promise<unknown> = Promise.resolve();
  return (work) => {
    const result = previous.then(work);
    previous = result.catch(() => undefined);
    return result;
  };
}

/**
 * A node-postgres client that hands node-postgres one promised query at a time. Prisma's driver
 * adapter sends the queries of one step of a transaction (a record and its relations) at once on the
 * transaction's connection. A query with a callback, or a submittable (a cursor, a COPY stream),
 * goes through as it is: its caller already waits for it on its own terms. Given to a pool as its
 * `Client`.
 */
export class OneQueryAtATimeClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    const query = pg.Client.prototype.query.bind(this) as (...args: unknown[]) => unknown;
    const inTurn = oneAtATime();
    this.query = ((...args: unknown[]) => {
      const first = args[0] as { submit?: unknown } | undefined;
      if (typeof args.at(-1) === 'function' || typeof first?.submit === 'function') return query(...args);
      return inTurn(() => query(...args) as Promise<unknown>);
    }) as pg.Client['query'];
  }
}
