/**
 * The embedded database's socket under direct builds: `npm run bench:socket-builds`
 * (= `tsx bench/socket-builds.ts`).
 *
 * Opens PGlite in a DATA_DIR of its own as a server does (served on its unix socket), imports
 * `BENCH_INVOICES` invoices (default 100,000) for one broker, and runs `BENCH_ROUNDS` rounds
 * (default 6) of `BENCH_PARALLEL` (default 6) invoices builds at once, each in its build thread
 * through a socket connection of its own (the way PostgreSQL builds go), while the process's own
 * Prisma queries run beside them and three readers download stored workbooks through the socket by
 * binary COPY, as sends and download links do. Prints each round's time and every failure with its
 * message, and exits 1 if any build or read failed.
 *
 * Why: builds on the embedded database are relayed, because a direct build through the socket
 * failed once in about 48 under `bench:report-load` (bench/README.md, "sixth pass"). This runs the
 * same traffic without the HTTP server, to look for that fault.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { openDatabase } from '../src/db/client.ts';
import { storeWorkbook } from '../src/reports/workbook/build.ts';
import { reportKinds } from '../src/reports/kinds/registry.ts';
import type { ReportSpec } from '../src/reports/types.ts';
import { openChunkReader, readWorkbook, type WorkbookRef } from '../src/reports/workbook/store.ts';
import { writingClient } from '../test/helpers/db.ts';

const INVOICES = Number(process.env.BENCH_INVOICES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 6);
const QUERY_TIMEOUT_MS = 30_000;

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-socket-builds-'));
const database = await openDatabase({ dataDir });
const { prisma, databaseUrl } = database;
if (!databaseUrl) throw new Error('the embedded database is not served on its socket');
try {
  const brokerId = 'brk_socket_builds';
  await prisma.broker.create({ data: { id: brokerId, slug: 'socket-builds', name: 'Socket builds', email: 'ops@socket-builds.example' } });
  await writingClient(prisma).$executeRawUnsafe(`
    INSERT INTO invoices (broker_id, number, service_number, amount, currency, status, date)
    SELECT '${brokerId}', 'INV-' || lpad(g::text, 7, '0'), 100000000 + g % 50, ((g * 7919) % 100000) / 100.0,
           (ARRAY['EUR','USD','GBP'])[1 + g % 3], (CASE WHEN g % 4 = 0 THEN 'pending' ELSE 'paid' END)::invoice_status,
           DATE '2025-05-01' + (g % 61)
    FROM generate_series(1, ${INVOICES}) g`);
  const spec: ReportSpec = { type: 'invoices', brokerId, apiKeyId: null, recipients: [], startDate: '2025-05-01', endDate: '2025-06-30' };
  const { snapshot } = await reportKinds.invoices.count(prisma, spec);
  const input = reportKinds.invoices.input(spec, snapshot, new Date());

  const failures: string[] = [];
  const stored: WorkbookRef[] = [];
  let stop = false;
  let ownQueries = 0;
  let reads = 0;
  const own = (async () => {
    while (!stop) {
      await prisma.invoice.count({ where: { brokerId } });
      ownQueries++;
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const reader = openChunkReader({ prisma, url: databaseUrl, queryTimeoutMs: QUERY_TIMEOUT_MS });
  const readers = Array.from({ length: 3 }, async () => {
    while (!stop) {
      const ref = stored[Math.floor(Math.random() * stored.length)];
      if (!ref) {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      try {
        await buffer(readWorkbook(reader.read, ref));
        reads++;
      } catch (error) {
        failures.push(`read: ${(error as Error).message}`);
      }
    }
  });

  let built = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const started = Date.now();
    const results = await Promise.allSettled(
      Array.from({ length: PARALLEL }, async () => {
        const run = await prisma.reportRun.create({ data: { brokerId, reportType: 'invoices' } });
        const target = { runId: run.id, build: randomUUID(), keepUpTo: 0, chunkBytes: 512 * 1024 };
        const result = await storeWorkbook({ prisma, url: databaseUrl, queryTimeoutMs: QUERY_TIMEOUT_MS }, input, target);
        stored.push({ runId: run.id, build: target.build, chunks: result.stored.chunks });
      }),
    );
    for (const r of results) {
      if (r.status === 'fulfilled') built++;
      else failures.push(`build: ${(r.reason as Error).message}`);
    }
    console.log(`round ${round}: ${PARALLEL} builds of ${INVOICES} invoices in ${Date.now() - started} ms; built ${built}, downloads ${reads}, own queries ${ownQueries}, failures ${failures.length}`);
  }
  stop = true;
  await Promise.all([own, ...readers]);
  await reader.close();
  for (const f of failures) console.log(`FAILED ${f}`);
  console.log(`${built} builds and ${reads} downloads through the socket, ${failures.length} failures`);
  process.exitCode = failures.length > 0 ? 1 : 0;
} finally {
  await database.close();
  rmSync(dataDir, { recursive: true, force: true });
}
