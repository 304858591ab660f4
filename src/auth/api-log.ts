import type { AnsweredError } from '../http/errors.ts';
import type { Logger } from '../logger.ts';
import { scrubSecrets } from '../ops/redact.ts';
import type { KeyMode } from './keys.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** One row of `api_logs`. Never carries the key itself: only its id. */
export interface ApiLogEntry {
  at: Date;
  apiKeyId: string;
  brokerId: string;
  mode: KeyMode;
  method: string;
  /** The path without the query string (queries can hold customer data). */
  path: string;
  status: number;
  ip: string;
  durationMs: number;
  requestId: string;
  /** The operationId the request reached; null for an unknown path or method. */
  operation: string | null;
  /** The error envelope's code; null for a success. */
  errorCode: string | null;
  /** The error envelope's message and details, their secrets redacted (loggedError); null for a success. */
  errorMessage: string | null;
  errorDetails: Record<string, unknown> | null;
  idempotencyReplayed: boolean;
  /** Made by the console with a console session's cookie, not with the key itself. */
  viaConsole: boolean;
}

/** An error's message and details as the log keeps them: at most this many characters of JSON. */
const MAX_STORED_ERROR = 8192;

/**
 * Text a jsonb column takes: an error can echo a client's value, and PostgreSQL refuses U+0000 and
 * an unpaired surrogate in JSON, which would fail the whole batch's INSERT.
 */
const storable = (text: string): string =>
  // `toWellFormed` (Node 20+): ES2023, the project's TypeScript lib, does not declare it.
  scrubSecrets((text as string & { toWellFormed(): string }).toWellFormed().replaceAll('\u0000', '\uFFFD'));

/** Every string in `value` with its secrets redacted, as the log's path is (scrubSecrets), and storable. */
function redacted(value: unknown): unknown {
  if (typeof value === 'string') return storable(value);
  if (Array.isArray(value)) return value.map(redacted);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [storable(k), redacted(v)]));
  return value;
}

/**
 * The answer's error as the API log keeps it, redacted; details whose JSON would pass
 * MAX_STORED_ERROR are kept as `{ omitted: true }` (no detail the server makes comes near it).
 */
export function loggedError(error: AnsweredError | undefined): Pick<ApiLogEntry, 'errorCode' | 'errorMessage' | 'errorDetails'> {
  if (error === undefined) return { errorCode: null, errorMessage: null, errorDetails: null };
  const details = error.details === undefined ? null : (redacted(error.details) as Record<string, unknown>);
  const fits = details === null || JSON.stringify(details).length <= MAX_STORED_ERROR;
  return { errorCode: error.code, errorMessage: storable(error.message).slice(0, MAX_STORED_ERROR), errorDetails: fits ? details : { omitted: true } };
}

export interface ApiLogOptions {
  /** How often buffered entries are written (default API_LOG_FLUSH_MS). */
  flushIntervalMs?: number;
  /**
   * A flush starts at once when this many entries are waiting (default: one INSERT's worth). Under
   * load fewer, fuller INSERTs cost the database less a row than many small ones (bench/README.md).
   */
  flushAtEntries?: number;
  /** Beyond this many waiting entries (the database is down), the oldest are dropped (default 50 000). */
  maxBuffered?: number;
}

export interface ApiLog {
  /** Buffers one entry; written by the next flush. */
  record(entry: ApiLogEntry): void;
  /** Notes that a key was used at `at`; coalesced to one update per key per flush. */
  touch(keyId: string, at: Date): void;
  /** Writes everything buffered so far. Rejects if the database refused (the entries stay buffered). */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left (for a graceful shutdown, after the server stops accepting). */
  close(): Promise<void>;
  /** Entries and key touches waiting to be written. */
  pending(): { entries: number; keys: number };
}

/**
 * The default flush interval. A request's entry is written at most this long after its answer
 * (plus the write itself) by whichever process served it, so another process reads it within
 * 2 s (openapi.yaml, "Request logs"); a read of the logs flushes its own process first.
 */
export const API_LOG_FLUSH_MS = 500;

/** Entries per INSERT statement. */
const CHUNK = 1000;

/**
 * Writes `rows` as ONE statement with ONE bound parameter (a JSON array). `createMany` cost
 * Prisma CPU per row on the request thread; this costs far less, most of it in the database
 * (figures in bench/README.md). Rows are inserted in array order, so ids follow it.
 */
async function insertEntries(prisma: ReadClient, rows: ApiLogEntry[]): Promise<void> {
  const json = JSON.stringify(
    rows.map((e) => ({
      at: e.at.toISOString(),
      api_key_id: e.apiKeyId,
      broker_id: e.brokerId,
      mode: e.mode,
      method: e.method,
      path: e.path,
      status: e.status,
      ip: e.ip,
      duration_ms: Math.round(e.durationMs),
      request_id: e.requestId,
      // A null or false is left out (JSON.stringify drops undefined): most entries are successes, and
      // the database parses a third less JSON a row (bench/README.md); absent keys read as NULL.
      operation: e.operation ?? undefined,
      error_code: e.errorCode ?? undefined,
      error_message: e.errorMessage ?? undefined,
      error_details: e.errorDetails ?? undefined,
      idempotency_replayed: e.idempotencyReplayed || undefined,
      via_console: e.viaConsole || undefined,
    })),
  );
  await prisma.$executeRaw`
    INSERT INTO "api_logs" ("at", "api_key_id", "broker_id", "mode", "method", "path", "status", "ip", "duration_ms", "request_id",
                            "operation", "error_code", "error_message", "error_details", "idempotency_replayed", "via_console")
    SELECT x."at", x."api_key_id", x."broker_id", x."mode"::"key_mode", x."method", x."path", x."status", x."ip", x."duration_ms", x."request_id",
           x."operation", x."error_code", x."error_message", x."error_details", COALESCE(x."idempotency_replayed", false), COALESCE(x."via_console", false)
      FROM jsonb_to_recordset(${json}::jsonb) AS x("at" timestamptz(3), "api_key_id" text, "broker_id" text, "mode" text,
           "method" text, "path" text, "status" int, "ip" text, "duration_ms" int, "request_id" text,
           "operation" text, "error_code" text, "error_message" text, "error_details" jsonb, "idempotency_replayed" boolean, "via_console" boolean)`;
}

/**
 * Last-used times of every touched key in ONE statement (was one updateMany per key in a
 * transaction). GREATEST and the WHERE keep a time from ever moving backwards.
 */
async function updateLastUsed(prisma: ReadClient, touches: Map<string, Date>): Promise<void> {
  const json = JSON.stringify([...touches].map(([id, at]) => ({ id, at: at.toISOString() })));
  await prisma.$executeRaw`
    UPDATE "api_keys" AS k SET "last_used_at" = GREATEST(k."last_used_at", x."at")
      FROM jsonb_to_recordset(${json}::jsonb) AS x("id" text, "at" timestamptz(3))
     WHERE k."id" = x."id" AND (k."last_used_at" IS NULL OR k."last_used_at" < x."at")`;
}

/**
 * API log and last-used times, written off the request path: entries are buffered in memory and
 * written with one INSERT per batch (insertEntries) every `flushIntervalMs` or as soon as `flushAtEntries` are waiting;
 * last-used times are coalesced per key (the latest wins, and never moves backwards in the
 * database). Flushes run one at a time. A failed write keeps its entries for the next flush.
 */
/** What waits to be written: entries in order, and each key's latest last-used time. */
class Pending {
  entries: ApiLogEntry[] = [];
  lastUsed = new Map<string, Date>();
  dropped = 0;

  constructor(private readonly maxBuffered: number, private readonly logger: Logger) {}

  get empty(): boolean {
    return this.entries.length === 0 && this.lastUsed.size === 0;
  }

  touch(keyId: string, at: Date): void {
    const known = this.lastUsed.get(keyId);
    if (!known || known < at) this.lastUsed.set(keyId, at);
  }

  /** Everything waiting, handed to one write; the buffer starts over. */
  take(): { batch: ApiLogEntry[]; touches: Map<string, Date> } {
    const taken = { batch: this.entries, touches: this.lastUsed };
    this.entries = [];
    this.lastUsed = new Map();
    return taken;
  }

  /** What a failed write did not write, put back ahead of anything recorded meanwhile. */
  putBack(unwritten: ApiLogEntry[], touches: Map<string, Date>): void {
    this.entries = [...unwritten, ...this.entries];
    for (const [id, at] of touches) this.touch(id, at);
    this.trim();
  }

  trim(): void {
    if (this.entries.length > this.maxBuffered) {
      const excess = this.entries.length - this.maxBuffered;
      this.entries.splice(0, excess);
      this.dropped += excess;
      this.logger.error({ dropped: this.dropped }, 'API log buffer full: oldest entries dropped');
    }
  }
}

async function write(prisma: ReadClient, pending: Pending): Promise<void> {
  const { batch, touches } = pending.take();
  if (batch.length === 0 && touches.size === 0) return;
  let written = 0;
  try {
    for (; written < batch.length; written += CHUNK) {
      await insertEntries(prisma, batch.slice(written, written + CHUNK));
    }
    if (touches.size > 0) await updateLastUsed(prisma, touches);
  } catch (err) {
    pending.putBack(batch.slice(written), touches);
    throw err;
  }
}

export function createApiLog(prisma: ReadClient, logger: Logger, options: ApiLogOptions = {}): ApiLog {
  const flushIntervalMs = options.flushIntervalMs ?? API_LOG_FLUSH_MS;
  const flushAtEntries = options.flushAtEntries ?? CHUNK;
  const pending = new Pending(options.maxBuffered ?? 50_000, logger);
  let chain: Promise<void> = Promise.resolve();
  let queued = false;
  let closed = false;

  function flush(): Promise<void> {
    const run = chain.then(() => {
      queued = false;
      return write(prisma, pending);
    });
    chain = run.catch(() => {});
    return run;
  }

  function flushInBackground(): void {
    if (queued) return;
    queued = true;
    flush().catch((err: unknown) => logger.error({ err }, 'API log flush failed; entries kept for the next attempt'));
  }

  const timer = setInterval(() => {
    if (!pending.empty) flushInBackground();
  }, flushIntervalMs);
  timer.unref();

  return {
    record(entry) {
      pending.entries.push(entry);
      pending.trim();
      if (pending.entries.length >= flushAtEntries || closed) flushInBackground();
    },
    touch(keyId, at) {
      pending.touch(keyId, at);
      if (closed) flushInBackground();
    },
    flush,
    async close() {
      closed = true;
      clearInterval(timer);
      await flush();
    },
    pending: () => ({ entries: pending.entries.length, keys: pending.lastUsed.size }),
  };
}
