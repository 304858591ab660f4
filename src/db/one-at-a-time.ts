import pg from 'pg';

/** In order, whatever the earlier pieces' outcome: node-postgres warns that pg 9 will refuse a query sent while another runs. */
export function oneAtATime(): <T>(work: () => Promise<T>) => Promise<T> {
  let previous: Promise<unknown> = Promise.resolve();
  return (work) => {
    const result = previous.then(work);
    previous = result.catch(() => undefined);
    return result;
  };
}

/**
 * Prisma's driver adapter sends a transaction step's queries (a record and its relations) at once on
 * one connection. A callback query or a submittable (cursor, COPY) goes through as is: its caller waits on its own terms.
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
