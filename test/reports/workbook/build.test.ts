/**
 * Where a build reads and stores (src/reports/build.ts): in the build thread through a connection
 * of its own (a server's way, wherever the database has a connection string: PostgreSQL, or the
 * embedded database's socket), or relayed through the caller's thread (Prisma, no connection
 * string). Both store the same workbook byte for byte, over several pages of rows and sheets; the
 * thread hands back a whole copy only for a workbook small enough to attach; a build whose
 * connection fails rejects and stores nothing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, test } from 'node:test';
import { storeWorkbook, type BuildInput } from '../../../src/reports/workbook/build.ts';
import { reportKinds } from '../../../src/reports/kinds/registry.ts';
import { INVOICE_BATCH, SERVICE_BATCH } from '../../../src/reports/workbook/pages.ts';
import type { ReportSpec } from '../../../src/reports/types.ts';
import { openChunkReader, readWorkbook } from '../../../src/reports/workbook/store.ts';
import { connectionOf, createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { broker } from '../../helpers/factories.ts';

let db: TestDatabase;
let connection: Awaited<ReturnType<typeof connectionOf>>;
let brokerId: string;
const GENERATED_AT = new Date('2025-06-30T12:34:56.789Z');
/** More rows than one page holds, so that both ways read several pages. */
const INVOICES = INVOICE_BATCH * 2 + 17;
const SERVICES = SERVICE_BATCH + 5;

/** Invoices over two months, three currencies, paid and pending; services of every status. */
async function seed(): Promise<void> {
  await db.prisma.$executeRawUnsafe(`
    INSERT INTO invoices (broker_id, number, service_number, amount, currency, status, date)
    SELECT '${brokerId}', 'INV-' || lpad(g::text, 6, '0'), 100000000 + g % 50, ((g * 7919) % 100000) / 100.0,
           (ARRAY['EUR','USD','GBP'])[1 + g % 3], (CASE WHEN g % 4 = 0 THEN 'pending' ELSE 'paid' END)::invoice_status,
           DATE '2025-05-01' + (g % 61)
    FROM generate_series(1, ${INVOICES}) g`);
  const plan = await db.prisma.plan.findFirstOrThrow({ orderBy: { id: 'asc' } });
  await db.prisma.$executeRawUnsafe(`
    INSERT INTO services (service_number, broker_id, plan_id, status, hostname, customer_email, customer_name, username, password_enc, created_at)
    SELECT 300000000 + g, '${brokerId}', ${plan.id}, (ARRAY['pending','active','suspended','cancelled'])[1 + g % 4]::service_status,
           'host' || g || '.example', 'c' || g || '@example.com', CASE WHEN g % 3 = 0 THEN NULL ELSE 'Customer "' || g || '"' END,
           'user' || g, 'v1:x:y:z', TIMESTAMPTZ '2024-01-01 00:00:00Z' + g * INTERVAL '37 seconds'
    FROM generate_series(1, ${SERVICES}) g`);
}

before(async () => {
  db = await createTestDatabase();
  connection = await connectionOf(db);
  brokerId = (await broker(db.prisma)).id;
  await seed();
});
after(async () => {
  await connection?.close();
  await db?.drop();
});

async function inputOf(spec: ReportSpec): Promise<BuildInput> {
  const builder = reportKinds[spec.type];
  const { snapshot } = await builder.count(db.prisma, spec);
  return builder.input(spec, snapshot, GENERATED_AT);
}

/** Builds and stores `input` one way; returns the stored workbook's bytes as read back, and the result. */
async function store(input: BuildInput, way: 'thread' | 'relayed', keepUpTo: number, rowsPerSheet?: number) {
  const run = await db.prisma.reportRun.create({ data: { brokerId, reportType: input.kind } });
  const target = { runId: run.id, build: randomUUID(), keepUpTo, chunkBytes: 64 * 1024 };
  const database = { prisma: db.prisma, url: way === 'thread' ? connection.url : undefined };
  const built = await storeWorkbook(database, input, target, rowsPerSheet === undefined ? {} : { rowsPerSheet });
  const reader = openChunkReader({ prisma: db.prisma });
  const bytes = await buffer(readWorkbook(reader.read, { runId: run.id, build: target.build, chunks: built.stored.chunks }));
  return { built, bytes };
}

const specs: Array<[string, ReportSpec]> = [
  ['invoices', { type: 'invoices', brokerId: '', apiKeyId: null, recipients: [], startDate: '2025-05-01', endDate: '2025-06-30' }],
  ['services', { type: 'services', brokerId: '', apiKeyId: null, recipients: [] }],
  ['services, one status', { type: 'services', brokerId: '', apiKeyId: null, recipients: [], statusFilter: 'active' }],
];

describe('a build in the thread through its own connection, and a relayed one', () => {
  for (const [name, template] of specs) {
    test(`${name}: the same workbook byte for byte, counts and sheets`, async () => {
      const input = await inputOf({ ...template, brokerId });
      const rowsPerSheet = 3000;
      const thread = await store(input, 'thread', 0, rowsPerSheet);
      const relayed = await store(input, 'relayed', 0, rowsPerSheet);
      const expectedRows = name === 'invoices' ? INVOICES : name === 'services' ? SERVICES : Math.ceil(SERVICES / 4);
      assert.equal(thread.built.rows, expectedRows);
      assert.deepEqual(thread.built.totals, relayed.built.totals);
      assert.equal(thread.built.sheets, Math.ceil(expectedRows / rowsPerSheet));
      assert.equal(thread.built.sheets, relayed.built.sheets);
      assert.equal(thread.built.stored.bytes, thread.bytes.length);
      assert.equal(thread.built.stored.sha256, relayed.built.stored.sha256);
      assert.ok(thread.bytes.equals(relayed.bytes), 'the stored bytes are the same');
    });
  }

  test('the thread hands back the whole workbook only when it is no larger than keepUpTo', async () => {
    const input = await inputOf({ ...specs[0]![1], brokerId });
    const kept = await store(input, 'thread', 10 * 1024 * 1024);
    assert.ok(kept.built.kept?.equals(kept.bytes), 'the copy is the stored workbook');
    const notKept = await store(input, 'thread', 1024);
    assert.equal(notKept.built.kept, undefined);
  });

  test('a connection that fails rejects the build', async () => {
    const input = await inputOf({ ...specs[0]![1], brokerId });
    const run = await db.prisma.reportRun.create({ data: { brokerId, reportType: 'invoices' } });
    const target = { runId: run.id, build: randomUUID(), keepUpTo: 0 };
    // Port 1 on this host: nothing listens, the connection is refused.
    await assert.rejects(storeWorkbook({ prisma: db.prisma, url: 'postgresql://postgres@127.0.0.1:1/postgres' }, input, target), /ECONNREFUSED/);
    assert.equal(await db.prisma.reportWorkbookChunk.count({ where: { reportRunId: run.id } }), 0);
  });
});
