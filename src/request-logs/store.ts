/**
 * The API log as its broker reads it (rows written by the gate, src/auth/api-log.ts): one broker
 * and one mode at a time, newest first by the request's arrival (`at`, then the row's id).
 */
import type { Prisma } from '../../generated/prisma/client.ts';
import { instantRange } from '../shared/dates.ts';
import type { Db, ReadClient } from '../shared/db-errors.ts';
import { InvalidValueError, NotFoundError } from '../shared/errors.ts';

export type RequestLogMode = 'live' | 'test';

/** Entries older than this are deleted by the worker. */
export const REQUEST_LOG_RETENTION_DAYS = 30;

export interface RequestLogScope {
  brokerId: string;
  mode: RequestLogMode;
}

export interface RequestLogRow {
  requestId: string;
  at: Date;
  method: string;
  path: string;
  operation: string | null;
  status: number;
  errorCode: string | null;
  errorMessage: string | null;
  errorDetails: unknown;
  durationMs: number;
  apiKeyId: string | null;
  mode: RequestLogMode | null;
  ip: string;
  idempotencyReplayed: boolean;
  viaConsole: boolean;
}

export interface RequestLogQuery {
  requestId?: string | undefined;
  /** Statuses from `min` up to, not including, `below` (one code, or a class). */
  status?: { min: number; below: number } | undefined;
  /** Upper case. */
  method?: string | undefined;
  operation?: string | undefined;
  apiKeyId?: string | undefined;
  /** The name of the broker's keys whose entries are wanted (several keys may share one). */
  apiKeyName?: string | undefined;
  createdGte?: Date | undefined;
  createdLt?: Date | undefined;
  limit: number;
  startingAfter?: string | undefined;
}

const FIELDS = {
  requestId: true,
  at: true,
  method: true,
  path: true,
  operation: true,
  status: true,
  errorCode: true,
  errorMessage: true,
  errorDetails: true,
  durationMs: true,
  apiKeyId: true,
  mode: true,
  ip: true,
  idempotencyReplayed: true,
  viaConsole: true,
} as const;

const NEWEST_FIRST = [{ at: 'desc' }, { id: 'desc' }] as const satisfies Prisma.ApiLogOrderByWithRelationInput[];

function filters(scope: RequestLogScope, query: RequestLogQuery, namedKeys: string[] | undefined): Prisma.ApiLogWhereInput {
  const at = instantRange(query.createdGte, query.createdLt);
  return {
    ...scope,
    ...(namedKeys !== undefined && { AND: [{ apiKeyId: { in: namedKeys } }] }),
    ...(query.requestId !== undefined && { requestId: query.requestId }),
    ...(query.status !== undefined && { status: { gte: query.status.min, lt: query.status.below } }),
    ...(query.method !== undefined && { method: query.method }),
    ...(query.operation !== undefined && { operation: query.operation }),
    ...(query.apiKeyId !== undefined && { apiKeyId: query.apiKeyId }),
    ...(at && { at }),
  };
}

/**
 * Where the page after `requestId` starts. A client may send its own X-Request-Id more than once:
 * the cursor is then its OLDEST entry, so paging always moves on (the newest could bring a page
 * back again and again), at the price of the entries between its uses.
 */
async function cursorOf(prisma: ReadClient, scope: RequestLogScope, requestId: string): Promise<Prisma.ApiLogWhereInput> {
  const cursor = await prisma.apiLog.findFirst({
    where: { ...scope, requestId },
    orderBy: [{ at: 'asc' }, { id: 'asc' }],
    select: { at: true, id: true },
  });
  if (!cursor) {
    throw new InvalidValueError('starting_after', 'query', 'exists', `no request log ${requestId} to start after`);
  }
  return { OR: [{ at: { lt: cursor.at } }, { at: cursor.at, id: { lt: cursor.id } }] };
}

/** A page of entries, newest first, and whether older ones follow. */
export async function listRequestLogs(
  prisma: ReadClient,
  scope: RequestLogScope,
  query: RequestLogQuery,
): Promise<{ rows: RequestLogRow[]; hasMore: boolean }> {
  const after = query.startingAfter !== undefined ? await cursorOf(prisma, scope, query.startingAfter) : undefined;
  const namedKeys = query.apiKeyName === undefined ? undefined : await keysNamed(prisma, scope.brokerId, query.apiKeyName);
  const where = filters(scope, query, namedKeys);
  const rows = await prisma.apiLog.findMany({
    where: after ? { AND: [where, after] } : where,
    orderBy: [...NEWEST_FIRST],
    take: query.limit + 1,
    select: FIELDS,
  });
  return { rows: rows.slice(0, query.limit), hasMore: rows.length > query.limit };
}

/** The ids of the broker's keys of this name (any mode: the entries' mode is filtered anyway). */
async function keysNamed(prisma: ReadClient, brokerId: string, name: string): Promise<string[]> {
  const keys = await prisma.apiKey.findMany({ where: { brokerId, name }, select: { id: true } });
  return keys.map((k) => k.id);
}

/**
 * The names of the broker's keys among `ids` (the log keeps a key's id, not its name: a renamed
 * key shows its name of now); a key deleted since, or another broker's id, is missing.
 */
export async function keyNames(prisma: ReadClient, brokerId: string, ids: Array<string | null>): Promise<Map<string, string>> {
  const wanted = [...new Set(ids.filter((id): id is string => id !== null))];
  if (wanted.length === 0) return new Map();
  const keys = await prisma.apiKey.findMany({ where: { brokerId, id: { in: wanted } }, select: { id: true, name: true } });
  return new Map(keys.map((k) => [k.id, k.name]));
}

/** The newest entry of a request id (one a client reused names several). */
export async function findRequestLog(prisma: ReadClient, scope: RequestLogScope, requestId: string): Promise<RequestLogRow> {
  const row = await prisma.apiLog.findFirst({ where: { ...scope, requestId }, orderBy: [...NEWEST_FIRST], select: FIELDS });
  if (!row) throw requestLogNotFound(requestId);
  return row;
}

/** Worded once: the sandbox's `not_found` scenario answers it too (sandbox.ts). */
export const requestLogNotFound = (requestId: string) => new NotFoundError(`Request log ${requestId} not found`);

/**
 * Deletes the entries of requests that arrived before `before`, `batch` rows at a time, until a
 * batch finds fewer (at most `maxBatches` per call); how many went. Each batch takes the lowest
 * ids by the primary key, so it never scans the table: rows are written in about arrival order,
 * and an old row behind a slightly newer one goes in a later call. The roll-up's hours go with them.
 */
export async function deleteRequestLogsBefore(db: Db, before: Date, batch = 10_000, maxBatches = 20): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < maxBatches; i++) {
    const count = await db.$executeRaw`
      DELETE FROM "api_logs" WHERE "id" IN (SELECT "id" FROM "api_logs" ORDER BY "id" LIMIT ${batch}) AND "at" < ${before}`;
    deleted += count;
    if (count < batch) break;
  }
  // The hourly roll-up of getRequestStats (a few rows an hour): the hours that ended before `before`.
  const ended = new Date(before.getTime() - 3_600_000);
  await db.$executeRaw`DELETE FROM "api_log_hour_counts" WHERE "hour" < ${ended}`;
  await db.$executeRaw`DELETE FROM "api_log_hours" WHERE "hour" < ${ended}`;
  return deleted;
}
