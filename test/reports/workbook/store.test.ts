/**
 * The stored workbook (src/reports/workbook-store.ts): written in chunks and read back byte for
 * byte, whatever its size against the chunk size, through Prisma and through a node-postgres pool
 * of its own (as a server with a connection string reads it); a missing chunk is
 * WorkbookUnavailableError (a send tries again); and the per-process cache of attachments reads a
 * workbook once and holds no more than its bound.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, test } from 'node:test';
import { connectionOf, createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { broker } from '../../helpers/factories.ts';
import { PG_ADMIN_URL } from '../../ops/helpers.ts';
import pg from 'pg';
import {
  copiedBytea,
  insertChunkWith,
  openChunkReader,
  readWorkbook,
  WorkbookCache,
  WorkbookUnavailableError,
  WorkbookWriter,
  type ChunkReader,
  type WorkbookRef,
} from '../../../src/reports/workbook/store.ts';

let db: TestDatabase;
let connection: Awaited<ReturnType<typeof connectionOf>>;
let brokerId: string;
/** The two ways a process reads chunks: through Prisma, and through a node-postgres pool of its own. */
const opened: Record<string, ChunkReader> = {};
const readers: Record<string, () => ChunkReader['read']> = {
  prisma: () => (opened.prisma ??= openChunkReader({ prisma: db.prisma })).read,
  'node-postgres': () => (opened.pg ??= openChunkReader({ prisma: db.prisma, url: connection.url })).read,
};

before(async () => {
  db = await createTestDatabase();
  connection = await connectionOf(db);
  brokerId = (await broker(db.prisma)).id;
});
after(async () => {
  for (const reader of Object.values(opened)) await reader.close();
  await connection?.close();
  await db?.drop();
});

async function store(bytes: Buffer, chunkBytes: number, keepUpTo = 0): Promise<{ ref: WorkbookRef; writer: WorkbookWriter }> {
  const run = await db.prisma.reportRun.create({ data: { brokerId, reportType: 'invoices' } });
  const writer = new WorkbookWriter(insertChunkWith(db.prisma), run.id, randomUUID(), chunkBytes, keepUpTo);
  await new Promise<void>((resolve, reject) => {
    writer.on('finish', resolve).on('error', reject);
    // In uneven pieces, as the build thread hands them over.
    for (let at = 0; at < bytes.length; at += 777) writer.write(bytes.subarray(at, at + 777));
    writer.end();
  });
  const { chunks } = writer.stored();
  return { ref: { runId: run.id, build: writer.build, chunks }, writer };
}

describe('a stored workbook', () => {
  for (const [size, chunkBytes] of [[0, 1000], [1, 1000], [999, 1000], [1000, 1000], [1001, 1000], [25_000, 4096], [2 * 65_536, 2 * 65_536], [3 * 65_536 + 1, 2 * 65_536], [600_000, 512 * 1024]] as const) {
    test(`${size} bytes in chunks of ${chunkBytes}: read back byte for byte by each reader, its size and SHA-256 recorded`, async () => {
      const bytes = randomBytes(size);
      const { ref, writer } = await store(bytes, chunkBytes);
      assert.equal(ref.chunks, Math.max(1, Math.ceil(size / chunkBytes)));
      const stored = writer.stored();
      assert.equal(stored.bytes, size);
      assert.equal(stored.sha256, (await import('node:crypto')).createHash('sha256').update(bytes).digest('hex'));
      for (const [name, reader] of Object.entries(readers)) assert.deepEqual(await buffer(readWorkbook(reader(), ref)), bytes, name);
    });
  }

  for (const [name, reader] of Object.entries(readers)) {
    test(`a missing chunk is WorkbookUnavailableError, not a short workbook (${name})`, async () => {
      const { ref } = await store(randomBytes(3000), 1000);
      await db.prisma.reportWorkbookChunk.delete({ where: { reportRunId_build_seq: { reportRunId: ref.runId, build: ref.build, seq: 1 } } });
      await assert.rejects(buffer(readWorkbook(reader(), ref)), WorkbookUnavailableError);
    });
  }

  test('the writer keeps a copy only while the workbook is no larger than keepUpTo', async () => {
    const small = randomBytes(1500);
    assert.deepEqual((await store(small, 1000, 2000)).writer.kept(), small);
    assert.equal((await store(randomBytes(2500), 1000, 2000)).writer.kept(), undefined);
    assert.equal((await store(small, 1000)).writer.kept(), undefined);
  });
});

describe("the node-postgres reader's binary COPY", () => {
  const header = (extension = Buffer.alloc(0)) => {
    const fields = Buffer.alloc(8);
    fields.writeUInt32BE(extension.length, 4);
    return Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), fields, extension]);
  };
  const row = (bytes: Buffer) => {
    const lead = Buffer.alloc(6);
    lead.writeInt16BE(1, 0);
    lead.writeInt32BE(bytes.length, 2);
    return Buffer.concat([lead, bytes]);
  };
  const trailer = Buffer.from([0xff, 0xff]);

  test('one row: its bytes, after a header extension too', () => {
    const bytes = randomBytes(300);
    assert.deepEqual(copiedBytea(Buffer.concat([header(), row(bytes), trailer])), bytes);
    assert.deepEqual(copiedBytea(Buffer.concat([header(Buffer.from('ext')), row(bytes), trailer])), bytes);
  });
  test('no row: undefined', () => {
    assert.equal(copiedBytea(Buffer.concat([header(), trailer])), undefined);
  });
  test('anything else is an error, not a chunk', () => {
    assert.throws(() => copiedBytea(Buffer.from('\\x0102 not a binary copy')), /not a binary COPY/);
    assert.throws(() => copiedBytea(Buffer.concat([header(), row(randomBytes(10)).subarray(0, 12), trailer])), /one bytea/);
  });

  // On a PostgreSQL server whatever the suite runs on: a second session is what holds the table.
  test('a read the database does not answer fails after queryTimeoutMs, and the next read works', async () => {
    const server = await createTestDatabase({ databaseUrl: PG_ADMIN_URL });
    const reader = openChunkReader({ prisma: server.prisma, url: server.databaseUrl, queryTimeoutMs: 300 });
    const holder = new pg.Client({ connectionString: server.databaseUrl });
    try {
      const run = await server.prisma.reportRun.create({ data: { brokerId: (await broker(server.prisma)).id, reportType: 'invoices' } });
      const build = randomUUID();
      const bytes = randomBytes(2000);
      await insertChunkWith(server.prisma)(run.id, build, 0, bytes);
      const ref = { runId: run.id, build, chunks: 1 };
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE "report_workbook_chunks" IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      await assert.rejects(reader.read(ref, 0), /no answer from the database in 300 ms/);
      assert.ok(Date.now() - started < 5000, `failed after ${Date.now() - started} ms`);
      await holder.query('ROLLBACK');
      assert.deepEqual(await reader.read(ref, 0), bytes);
    } finally {
      await holder.end().catch(() => undefined);
      await reader.close();
      await server.drop();
    }
  });
});

describe('the cache of attached workbooks', () => {
  test('reads a workbook from the database once, then serves it from memory', async () => {
    const bytes = randomBytes(5000);
    const { ref } = await store(bytes, 1000);
    const cache = new WorkbookCache(10_000);
    const read = readers.prisma!();
    assert.deepEqual(await cache.get(read, ref), bytes);
    // Gone from the database: the cached copy still answers.
    await db.prisma.reportWorkbookChunk.deleteMany({ where: { reportRunId: ref.runId } });
    assert.deepEqual(await cache.get(read, ref), bytes);
    cache.dropRun(ref.runId);
    await assert.rejects(cache.get(read, ref), WorkbookUnavailableError);
  });

  test('holds at most its bound: the least recently used goes first; a workbook over the bound is not kept', () => {
    const cache = new WorkbookCache(10);
    const a = { runId: 'a', build: '1' };
    const b = { runId: 'b', build: '1' };
    const c = { runId: 'c', build: '1' };
    cache.put(a, Buffer.alloc(4));
    cache.put(b, Buffer.alloc(4));
    cache.put(c, Buffer.alloc(4));
    const kept = (ref: { runId: string; build: string }) => (cache as unknown as { entries: Map<string, Buffer> }).entries.has(`${ref.runId}/${ref.build}`);
    assert.deepEqual([kept(a), kept(b), kept(c)], [false, true, true]);
    cache.put({ runId: 'd', build: '1' }, Buffer.alloc(11));
    assert.equal(kept({ runId: 'd', build: '1' }), false);
  });
});
