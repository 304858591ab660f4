/**
 * A run's workbook, stored in the database (PostgreSQL, or the embedded PGlite) as numbered chunks,
 * so every API and worker process reads the one workbook a run was built with and no process needs
 * a disk shared with another. Written and read a chunk at a time: a workbook is never whole in memory.
 *
 * Chunks are keyed by run and build attempt: a repeated or stalled build job that runs beside
 * another never mixes its chunks with theirs. The build that records the run `sending` first is the
 * run's workbook (`report_runs.workbook_build`); the others' chunks are deleted.
 */
import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { CONNECT_TIMEOUT_MS } from '../../db/connect-timeout.ts';
import type { ReadClient } from '../../shared/db-errors.ts';

/** Bytes per stored chunk: few rows for a large workbook, little memory per row for the embedded database. */
export const WORKBOOK_CHUNK_BYTES = 512 * 1024;

/** What one build stored: the chunks of `build`, `bytes` long in all, with their SHA-256 (hex). */
export interface StoredWorkbook {
  build: string;
  bytes: number;
  chunks: number;
  sha256: string;
}

/** A stored workbook that could not be read (a chunk missing, the database away): the reader's error. */
export class WorkbookUnavailableError extends Error {
  override name = 'WorkbookUnavailableError';
  /** Read by the mail step: a send that failed because of this is tried again, never failed for good. */
  readonly code = 'EWORKBOOK';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Stores one chunk of a build's workbook. */
export type InsertChunk = (runId: string, build: string, seq: number, data: Uint8Array<ArrayBuffer>) => Promise<void>;

/** The chunk's row, for a connection that sends a Buffer as a binary `bytea` parameter (node-postgres). */
export const INSERT_CHUNK_SQL = 'INSERT INTO "report_workbook_chunks" ("report_run_id", "build", "seq", "data") VALUES ($1, $2::uuid, $3, $4)';

/**
 * Chunks stored through Prisma: as base64 text decoded by the database, several times cheaper than a
 * bytea parameter through the driver adapter, on the embedded database most of all (bench/README.md).
 */
export function insertChunkWith(prisma: ReadClient): InsertChunk {
  return async (runId, build, seq, data) => {
    const base64 = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
    await prisma.$executeRaw`
      INSERT INTO "report_workbook_chunks" ("report_run_id", "build", "seq", "data")
      VALUES (${runId}, ${build}::uuid, ${seq}, decode(${base64}, 'base64'))`;
  };
}

/**
 * The Writable a build streams a workbook into: it keeps one chunk of bytes, inserts it as a row
 * and goes on filling the next while that insert runs (at most one in flight); the producer waits
 * (backpressure) while a full chunk waits for the previous insert. `stored()` tells what was written
 * once the stream has finished.
 */
export class WorkbookWriter extends Writable {
  private parts: Buffer[] = [];
  private buffered = 0;
  private seq = 0;
  private bytes = 0;
  private readonly hash = createHash('sha256');
  private inFlight: Promise<void> | undefined;
  private sha256: string | undefined;

  /** The chunks as written, while the workbook is no larger than `keepUpTo`. */
  private copy: Buffer[] | undefined = [];

  constructor(
    private readonly insertChunk: InsertChunk,
    readonly runId: string,
    readonly build: string,
    private readonly chunkBytes = WORKBOOK_CHUNK_BYTES,
    private readonly keepUpTo = 0,
  ) {
    super();
    if (keepUpTo <= 0) this.copy = undefined;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    this.parts.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered < this.chunkBytes) {
      callback();
      return;
    }
    this.flushFullChunks().then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    (async () => {
      await this.flushFullChunks();
      await this.inFlight;
      if (this.buffered > 0 || this.seq === 0) await this.insert(this.take(this.buffered));
      this.sha256 = this.hash.digest('hex');
    })().then(() => callback(), callback);
  }

  /** What this build stored; only once the stream has finished. */
  stored(): StoredWorkbook {
    if (!this.writableFinished || this.sha256 === undefined) throw new Error('the workbook is not written yet');
    return { build: this.build, bytes: this.bytes, chunks: this.seq, sha256: this.sha256 };
  }

  private async flushFullChunks(): Promise<void> {
    while (this.buffered >= this.chunkBytes) {
      const piece = this.take(this.chunkBytes);
      await this.inFlight;
      const inserting = this.insert(piece);
      // Awaited by the next chunk or by _final; this only keeps a failure from going unhandled meanwhile.
      inserting.catch(() => undefined);
      this.inFlight = inserting;
    }
  }

  /** The first `size` buffered bytes, as a buffer of their own. */
  private take(size: number): Uint8Array<ArrayBuffer> {
    const piece = Buffer.alloc(size) as Buffer<ArrayBuffer>;
    let filled = 0;
    while (filled < size) {
      const part = this.parts[0]!;
      const n = Math.min(part.length, size - filled);
      part.copy(piece, filled, 0, n);
      filled += n;
      if (n === part.length) this.parts.shift();
      else this.parts[0] = part.subarray(n);
    }
    this.buffered -= size;
    return piece;
  }

  private async insert(data: Uint8Array<ArrayBuffer>): Promise<void> {
    const seq = this.seq++;
    if (this.copy) {
      this.copy.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
      if (this.bytes > this.keepUpTo) this.copy = undefined;
    }
    await this.insertChunk(this.runId, this.build, seq, data);
  }

  /** The whole workbook, if it was no larger than `keepUpTo` (a copy kept for this process's own sends). */
  kept(): Buffer | undefined {
    return this.writableFinished && this.copy ? sharedConcat(this.copy) : undefined;
  }
}

/**
 * The parts as one Buffer in memory shared between threads: handed to the mail thread for each
 * recipient's attachment without a copy (a copy per e-mail was megabytes per recipient in both
 * memory and the time to post it).
 */
function sharedConcat(parts: Buffer[]): Buffer {
  const whole = Buffer.from(new SharedArrayBuffer(parts.reduce((n, p) => n + p.length, 0)));
  let at = 0;
  for (const part of parts) at += part.copy(whole, at);
  return whole;
}

/** Where a run's workbook is: its build and how many chunks it has. */
export interface WorkbookRef {
  runId: string;
  build: string;
  chunks: number;
}

/** Reads one stored chunk's bytes; undefined when there is no such chunk. */
export type ReadChunk = (ref: WorkbookRef, seq: number) => Promise<Buffer | undefined>;

const SELECT_CHUNK_SQL = 'SELECT encode("data", \'base64\') AS "data" FROM "report_workbook_chunks" WHERE "report_run_id" = $1 AND "build" = $2::uuid AND "seq" = $3';

/** A process's reader of stored chunks, and its connections' closer. */
export interface ChunkReader {
  read: ReadChunk;
  close(): Promise<void>;
}

/** PostgreSQL's binary COPY signature, which opens every binary COPY's output. */
const COPY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * The one bytea value of a binary `COPY … TO STDOUT` of one row and one column: the signature, a
 * flags field and a header extension, then the row (field count, length, bytes), then the trailer.
 * Undefined when the COPY has no row.
 */
export function copiedBytea(copy: Buffer): Buffer | undefined {
  if (copy.length < 21 || !copy.subarray(0, COPY_SIGNATURE.length).equals(COPY_SIGNATURE)) throw new Error('not a binary COPY');
  const row = 19 + copy.readUInt32BE(15);
  if (copy.readInt16BE(row) === -1) return undefined;
  const length = copy.readInt32BE(row + 2);
  if (copy.readInt16BE(row) !== 1 || length < 0 || copy.length < row + 6 + length) throw new Error('a binary COPY of one bytea was expected');
  return copy.subarray(row + 6, row + 6 + length);
}

/**
 * How this process reads stored chunks: where the database has a connection string (PostgreSQL, or
 * the embedded database's socket), through a small node-postgres pool of its own, each chunk by a
 * binary `COPY … TO STDOUT` whose bytes arrive as the socket's buffers; else through Prisma, as
 * base64 text (PostgreSQL's `encode`) decoded here. A chunk read as a query's text is a large
 * string in V8's large-object space, garbage that waits for a full collection (bench/README.md).
 */
export function openChunkReader(db: { prisma: ReadClient; url?: string | undefined; queryTimeoutMs?: number | undefined }): ChunkReader {
  const { prisma, url, queryTimeoutMs } = db;
  if (url) {
    // No query_timeout on this pool: node-postgres would arm it for a COPY and never clear it (the
    // COPY stream has no callback), failing the stream long after it ended. The read bounds itself.
    const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    pool.on('error', () => {}); // an idle connection dropped; the next read reconnects
    let closed: Promise<void> | undefined;
    return {
      read: async (ref, seq) => {
        const client = await pool.connect();
        let failed: Error | undefined;
        const copy = client.query(
          copyTo(
            `COPY (SELECT "data" FROM "report_workbook_chunks" WHERE "report_run_id" = ${client.escapeLiteral(ref.runId)} ` +
              `AND "build" = ${client.escapeLiteral(ref.build)}::uuid AND "seq" = ${Math.trunc(seq)}) TO STDOUT (FORMAT binary)`,
          ),
        );
        const timer = queryTimeoutMs === undefined ? undefined : setTimeout(() => copy.destroy(new Error(`no answer from the database in ${queryTimeoutMs} ms`)), queryTimeoutMs);
        try {
          const parts: Buffer[] = [];
          for await (const part of copy) parts.push(part as Buffer);
          return copiedBytea(Buffer.concat(parts));
        } catch (err) {
          failed = err instanceof Error ? err : new Error(String(err));
          throw err;
        } finally {
          clearTimeout(timer);
          // A connection whose COPY failed or was cut short is closed, not reused mid-protocol.
          client.release(failed);
        }
      },
      // Safe to call twice, as the closers of jobs are.
      close: () => (closed ??= pool.end()),
    };
  }
  return {
    read: async (ref, seq) => {
      const rows = await prisma.$queryRawUnsafe<Array<{ data: string }>>(SELECT_CHUNK_SQL, ref.runId, ref.build, seq);
      // PostgreSQL's base64 breaks lines every 76 characters; Node's decoder skips the line breaks.
      return rows[0] ? Buffer.from(rows[0].data, 'base64') : undefined;
    },
    close: async () => undefined,
  };
}

/** The stored workbook as a stream, one chunk (one query) at a time, read only as the consumer asks. */
export function readWorkbook(read: ReadChunk, ref: WorkbookRef): Readable {
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let seq = 0; seq < ref.chunks; seq++) {
      let data: Buffer | undefined;
      try {
        data = await read(ref, seq);
      } catch (err) {
        throw new WorkbookUnavailableError(`the workbook of report ${ref.runId} could not be read: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      if (!data) throw new WorkbookUnavailableError(`chunk ${seq} of the workbook of report ${ref.runId} is missing`);
      yield data;
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}

/** Deletes the chunks one build stored (a build that failed, or lost the run to another). */
export async function discardBuild(prisma: ReadClient, runId: string, build: string): Promise<void> {
  await prisma.reportWorkbookChunk.deleteMany({ where: { reportRunId: runId, build } });
}

/** Deletes every chunk of the run that is not of `build` (the winner's). */
export async function discardOtherBuilds(prisma: ReadClient, runId: string, build: string): Promise<void> {
  await prisma.reportWorkbookChunk.deleteMany({ where: { reportRunId: runId, build: { not: build } } });
}

/** Deletes the run's stored workbook for good and records when. */
export async function releaseWorkbook(prisma: ReadClient, runId: string): Promise<void> {
  await prisma.$transaction([
    prisma.reportWorkbookChunk.deleteMany({ where: { reportRunId: runId } }),
    prisma.reportRun.updateMany({ where: { id: runId, workbookDeletedAt: null }, data: { workbookDeletedAt: new Date() } }),
  ]);
}

/**
 * Chunks nobody will read: of builds that lost their run, of a build killed after the winner had
 * cleaned up, or of a run whose workbook was released. Runs still waiting for a build keep theirs
 * (a build may be writing them).
 */
export async function sweepOrphanChunks(prisma: ReadClient): Promise<number> {
  return prisma.$executeRaw`
    DELETE FROM "report_workbook_chunks" AS c
    USING "report_runs" AS r
    WHERE c."report_run_id" = r."id"
      AND r."status" NOT IN ('queued', 'building')
      AND (r."workbook_build" IS NULL OR c."build" <> r."workbook_build" OR r."workbook_deleted_at" IS NOT NULL)`;
}

/**
 * Workbooks this process holds whole, for the e-mails that attach them: every recipient of a run
 * attaches the same bytes, so they are read from the database once per process (not once per
 * e-mail), and not at all by the process that built them. Only attachments are kept (no larger
 * than REPORT_ATTACHMENT_MAX_BYTES), at most `maxBytes` in all; the least recently used go first.
 */
export class WorkbookCache {
  private readonly entries = new Map<string, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  private static keyOf(ref: Pick<WorkbookRef, 'runId' | 'build'>): string {
    return `${ref.runId}/${ref.build}`;
  }

  put(ref: Pick<WorkbookRef, 'runId' | 'build'>, workbook: Buffer): void {
    if (workbook.length > this.maxBytes) return;
    this.drop(ref);
    this.entries.set(WorkbookCache.keyOf(ref), workbook);
    this.bytes += workbook.length;
    for (const key of [...this.entries.keys()]) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(key);
    }
  }

  /** The workbook: kept, or read from the database (and kept). */
  async get(read: ReadChunk, ref: WorkbookRef): Promise<Buffer> {
    const key = WorkbookCache.keyOf(ref);
    const kept = this.entries.get(key);
    if (kept) {
      // Most recently used last: Map keeps insertion order.
      this.entries.delete(key);
      this.entries.set(key, kept);
      return kept;
    }
    const parts: Buffer[] = [];
    for await (const part of readWorkbook(read, ref)) parts.push(part as Buffer);
    const workbook = sharedConcat(parts);
    this.put(ref, workbook);
    return workbook;
  }

  drop(ref: Pick<WorkbookRef, 'runId' | 'build'>): void {
    this.remove(WorkbookCache.keyOf(ref));
  }

  /** Drops every workbook of a run (its workbook was deleted). */
  dropRun(runId: string): void {
    for (const key of [...this.entries.keys()]) if (key.startsWith(`${runId}/`)) this.remove(key);
  }

  private remove(key: string): void {
    const kept = this.entries.get(key);
    if (!kept) return;
    this.entries.delete(key);
    this.bytes -= kept.length;
  }
}
