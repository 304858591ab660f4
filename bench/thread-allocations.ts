/**
 * Where a direct build's thread allocates its buffers (the build thread's external memory, most of
 * a report's peak RSS above idle): builds one invoices report the way the servers do on PostgreSQL
 * (`storeWorkbook` with a connection string: the thread reads the pages and stores the chunks
 * through its own connection), with a preload that counts every Buffer of 4 KiB or more allocated
 * in worker threads by the four frames that asked for it. The compiled build runs (as `npm start`
 * does): a thread started from the TypeScript sources is evaluated code, which preloads skip.
 *
 *   npm run build && DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres ROWS=200000 \
 *     node --import tsx --import ./bench/thread-allocations-preload.mjs bench/thread-allocations.ts
 *
 * The preload writes the 25 largest callers to /tmp/thread-allocations-<pid>-<thread>.txt.
 * Findings in bench/README.md ("Reports at scale, fourth pass").
 */
import { randomUUID } from 'node:crypto';
import type { ReportSpec } from '../src/reports/types.ts';
import { connectionOf, createTestDatabase } from '../test/helpers/db.ts';

const { storeWorkbook } = (await import(new URL('../dist/src/reports/workbook/build.js', import.meta.url).href)) as typeof import('../src/reports/workbook/build.ts');
const { reportKinds } = (await import(new URL('../dist/src/reports/kinds/registry.js', import.meta.url).href)) as typeof import('../src/reports/kinds/registry.ts');

const ROWS = Number(process.env.ROWS ?? 200_000);
const BROKER = 'brk_threadallocs';

const db = await createTestDatabase();
const connection = await connectionOf(db);
try {
  await db.prisma.$executeRawUnsafe(`INSERT INTO brokers (id, slug, name, email) VALUES ('${BROKER}', 'thread-allocs', 'Thread allocations', 'b@example.com')`);
  await db.prisma.$executeRawUnsafe(`
    INSERT INTO invoices (broker_id, number, service_number, amount, currency, status, date)
    SELECT '${BROKER}', 'INV-' || g, 100000000 + g % 5000, ((g * 7919) % 100000) / 100.0, (ARRAY['EUR','USD','GBP'])[1 + g % 3],
           (CASE WHEN g % 4 = 0 THEN 'pending' ELSE 'paid' END)::invoice_status, DATE '2024-01-01' + (g % 700)
    FROM generate_series(1, ${ROWS}) g`);
  const run = await db.prisma.reportRun.create({ data: { brokerId: BROKER, reportType: 'invoices', startDate: new Date('2024-01-01'), endDate: new Date('2025-12-31') } });
  const spec: ReportSpec = { type: 'invoices', apiKeyId: null, brokerId: BROKER, startDate: '2024-01-01', endDate: '2025-12-31', recipients: ['a@example.com'] };
  const { snapshot } = await reportKinds.invoices.count(db.prisma, spec);
  const started = Date.now();
  const built = await storeWorkbook({ prisma: db.prisma, url: connection.url }, reportKinds.invoices.input(spec, snapshot, new Date()), { runId: run.id, build: randomUUID(), keepUpTo: 0 });
  console.log(`built ${built.rows} rows, ${built.stored.bytes} bytes, in ${Date.now() - started} ms`);
} finally {
  await connection.close();
  await db.drop();
}
