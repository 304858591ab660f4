/**
 * The database could not take the work now: PostgreSQL unreachable or restarting, the pool or the
 * server out of connections, a transaction that could not start or expired waiting, a lock or
 * statement that timed out. An outage, not a fault of the request: the API answers `503
 * service_unavailable` with `Retry-After` (src/http/errors.ts), never `500`.
 */

/** What a client is told to wait before a retry; a restart or fail-over is usually a few seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

export class DatabaseUnavailableError extends Error {
  readonly retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS;
  constructor(message = 'The database is unavailable', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DatabaseUnavailableError';
  }
}

/**
 * SQLSTATE classes and codes of an outage: 08 connection exception, 53 insufficient resources
 * (too many connections, out of memory or disk), 57P01-57P05 shutdown / cannot connect now / idle
 * session timeout, 55P03 lock not available (lock_timeout), 57014 canceled (statement_timeout).
 */
const OUTAGE_SQLSTATE = /^(08...|53...|57P0[1-5]|55P03|57014)$/;

/** Prisma's driver adapters' names for a connection that failed (@prisma/adapter-pg convertDriverError). */
const OUTAGE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);

/**
 * Prisma's codes: P1001 cannot reach, P1002 timed out reaching, P1008 operation timed out, P1017
 * connection closed, P2024 pool timeout, P2028 transaction API (could not start in `maxWait`, or
 * expired after `timeout` while waiting), P2034 write conflict or deadlock.
 */
const OUTAGE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028', 'P2034']);

/** node-postgres and pg-pool throw these as plain `Error`s that no adapter converts. */
const OUTAGE_MESSAGES = [
  /timeout exceeded when trying to connect/i,
  /Connection terminated/i,
  /Query read timeout/i,
  /not queryable/i,
  /Client was closed and is not queryable/i,
  /Cannot use a pool after calling end on the pool/i,
  /\bECONN(REFUSED|RESET)\b/,
  /\bEPIPE\b/,
  /Unable to start a transaction in the given time/i,
  /expired transaction/i,
  // A database an operator closed to connections (ALTER DATABASE … ALLOW_CONNECTIONS false; SQLSTATE 55000).
  /is not currently accepting connections/i,
];

const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** The error and what it wraps (`cause`, Prisma's `meta.driverAdapterError`), a few levels deep. */
function* chain(err: unknown): Generator<Record<string, unknown>> {
  const seen = new Set<unknown>();
  const todo: unknown[] = [err];
  while (todo.length > 0 && seen.size < 8) {
    const e = todo.shift();
    if (typeof e !== 'object' || e === null || seen.has(e)) continue;
    seen.add(e);
    const r = e as Record<string, unknown>;
    yield r;
    todo.push(r.cause);
    const meta = r.meta as Record<string, unknown> | undefined;
    if (meta && typeof meta === 'object') todo.push(meta.driverAdapterError);
  }
}

/** Whether `err` (from Prisma, its pg adapter, node-postgres or pg-pool) says the database is out, not the query wrong. */
export function isDatabaseOutage(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return true;
  // Work that failed and was recorded so (a report run whose build failed) is no outage, whatever its reason says.
  if (typeof err === 'object' && err !== null && (err as { outage?: unknown }).outage === false) return false;
  for (const e of chain(err)) {
    const code = typeof e.code === 'string' ? e.code : undefined;
    const originalCode = typeof e.originalCode === 'string' ? e.originalCode : undefined;
    if (code && (OUTAGE_PRISMA_CODES.has(code) || SOCKET_CODES.has(code))) return true;
    if ((code && OUTAGE_SQLSTATE.test(code)) || (originalCode && OUTAGE_SQLSTATE.test(originalCode))) return true;
    if (typeof e.kind === 'string' && OUTAGE_KINDS.has(e.kind)) return true;
    if (e.name === 'PrismaClientInitializationError') return true;
    const message = typeof e.message === 'string' ? e.message : '';
    if (OUTAGE_MESSAGES.some((m) => m.test(message))) return true;
  }
  return false;
}

/** `err` as a `DatabaseUnavailableError` when it is an outage (the original kept as `cause`), else undefined. */
export function asDatabaseUnavailable(err: unknown): DatabaseUnavailableError | undefined {
  if (err instanceof DatabaseUnavailableError) return err;
  return isDatabaseOutage(err) ? new DatabaseUnavailableError(undefined, { cause: err }) : undefined;
}
