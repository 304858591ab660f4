/**
 * A sandbox key's requests are real entries of the API log (stored with mode `test` by the gate),
 * so live and sandbox share this one implementation, each bound to its mode: there is nothing to
 * simulate, and a sandbox key must read its own requests as they were.
 */
import type { components } from '../../generated/api.ts';
import type { Caller } from '../shared/caller.ts';
import type { StatsRange } from '../shared/stats-range.ts';
import { requestStats, type RequestStatsData } from './stats.ts';
import { findRequestLog, keyNames, listRequestLogs, type RequestLogMode, type RequestLogQuery, type RequestLogRow } from './store.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export type RequestLogData = components['schemas']['RequestLog'];
export type RequestLogPagination = components['schemas']['RequestLogPagination'];

export interface RequestLogUseCases {
  list(caller: Caller, query: RequestLogQuery): Promise<{ data: RequestLogData[]; pagination: RequestLogPagination }>;
  get(caller: Caller, requestId: string): Promise<RequestLogData>;
  /** The requests of the range per hour or day (`getRequestStats`). */
  stats(caller: Caller, range: StatsRange): Promise<RequestStatsData>;
}

export interface RequestLogDeps {
  prisma: ReadClient;
  /**
   * Writes this process's buffered API log entries (src/auth/api-log.ts) before a read, so a key
   * reads its last requests to this process at once; other processes write theirs on their timer.
   */
  flushApiLog: () => Promise<void>;
}

/** The answer's error as kept; an entry written before 1.4.0 kept only its code. */
function loggedError(row: RequestLogRow): NonNullable<RequestLogData['error']> {
  const details = row.errorDetails as Record<string, unknown> | null;
  return { code: row.errorCode ?? '', message: row.errorMessage, ...(details !== null && { details }) };
}

export function requestLogData(row: RequestLogRow, mode: RequestLogMode, names: ReadonlyMap<string, string>): RequestLogData {
  return {
    object: 'request_log',
    request_id: row.requestId,
    created_at: row.at.toISOString(),
    method: row.method,
    path: row.path,
    operation: row.operation,
    status: row.status,
    error_code: row.errorCode,
    error: row.errorCode === null ? null : loggedError(row),
    duration_ms: row.durationMs,
    // The gate writes both for every entry; the columns are nullable for rows of older versions.
    api_key_id: row.apiKeyId ?? '',
    api_key_name: row.apiKeyId === null ? null : (names.get(row.apiKeyId) ?? null),
    mode: row.mode ?? mode,
    ip: row.ip,
    idempotency_replayed: row.idempotencyReplayed,
    source: row.viaConsole ? 'console' : 'api',
  };
}

export function requestLogs(deps: RequestLogDeps, mode: RequestLogMode): RequestLogUseCases {
  const { prisma } = deps;
  // A failed flush keeps its entries for the next one; the read that follows says what is wrong.
  const written = (): Promise<void> => deps.flushApiLog().catch(() => undefined);
  return {
    async list(caller, query) {
      await written();
      const { rows, hasMore } = await listRequestLogs(prisma, { brokerId: caller.brokerId, mode }, query);
      const last = rows.at(-1);
      const names = await keyNames(prisma, caller.brokerId, rows.map((row) => row.apiKeyId));
      return {
        data: rows.map((row) => requestLogData(row, mode, names)),
        pagination: { limit: query.limit, has_more: hasMore, next_starting_after: hasMore && last ? last.requestId : null },
      };
    },
    async get(caller, requestId) {
      await written();
      const row = await findRequestLog(prisma, { brokerId: caller.brokerId, mode }, requestId);
      return requestLogData(row, mode, await keyNames(prisma, caller.brokerId, [row.apiKeyId]));
    },
    async stats(caller, range) {
      await written();
      return requestStats(prisma, { brokerId: caller.brokerId, mode }, range);
    },
  };
}
