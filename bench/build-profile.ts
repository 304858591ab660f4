/**
 * The report build alone, for profiling: `tsx bench/build-profile.ts` (or under `node --cpu-prof
 * --import tsx` for a CPU profile).
 *
 * Seeds `BUILD_ROWS` (default 200,000) invoices, or services with `BUILD_REPORT=services`, into a
 * database of its own (an in-memory PGlite, or a database created on `DATABASE_URL`'s server and
 * dropped at the end), then builds the report's workbook `BUILD_RUNS` times (default 1) into a
 * Writable that counts and drops the bytes (`BUILD_OUT=<file>` writes the last one to a file), and
 * prints each build's time, the workbook's size, and the process's peak RSS. `BUILD_FROM=dist` uses
 * the compiled builders (run `npm run build` first), as the servers do. `BUILD_FETCH_ONLY=1` only
 * reads the pages (the database's and the driver's share).
 *
 * `tsx bench/build-profile.ts --summary <file.cpuprofile> [--window FROM-TO]` prints where a CPU
 * profile's time went: self time by package (or file under src/) and the top functions; `--window`
 * (printed by each build, in the profile's clock) keeps only that build's samples, without start-up
 * and seeding.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { PrismaClient } from '../generated/prisma/client.ts';
import { reportKinds as sourceBuilders } from '../src/reports/kinds/registry.ts';
import { buildWorkbook as sourceBuildWorkbook, prismaPageQuery } from '../src/reports/workbook/build.ts';
import { pagesOf } from '../src/reports/workbook/pages.ts';
import type { ReportSpec } from '../src/reports/types.ts';
import { createTestDatabase } from '../test/helpers/db.ts';

const REPORT = (process.env.BUILD_REPORT ?? 'invoices') as 'invoices' | 'services';
const ROWS = Number(process.env.BUILD_ROWS ?? 200_000);
const RUNS = Number(process.env.BUILD_RUNS ?? 1);
const BROKER = 'brk_buildprofile';
const DIST_REPORTS = new URL('../dist/src/reports/kinds/registry.js', import.meta.url).href;
const DIST_BUILD = new URL('../dist/src/reports/workbook/build.js', import.meta.url).href;

async function seed(prisma: PrismaClient): Promise<void> {
  await prisma.$executeRawUnsafe(`INSERT INTO brokers (id, slug, name, email) VALUES ('${BROKER}', 'build-profile', 'Build profile', 'b@example.com')`);
  if (REPORT === 'invoices') {
    // Dates over two years, amounts with cents, three currencies, paid and pending (all reported).
    await prisma.$executeRawUnsafe(`
      INSERT INTO invoices (broker_id, number, service_number, amount, currency, status, date)
      SELECT '${BROKER}', 'INV-' || lpad(g::text, 8, '0'), 100000000 + g % 50000, ((g::bigint * 7919) % 100000) / 100.0,
             (ARRAY['EUR','USD','GBP'])[1 + g % 3], (CASE WHEN g % 4 = 0 THEN 'pending' ELSE 'paid' END)::invoice_status,
             DATE '2024-01-01' + (g % 730)
      FROM generate_series(1, ${ROWS}) g`);
    return;
  }
  await prisma.$executeRawUnsafe(`INSERT INTO plans (name, tier, monthly_price) VALUES ('Build profile plan', 9999, 10) ON CONFLICT DO NOTHING`);
  await prisma.$executeRawUnsafe(`
    INSERT INTO services (service_number, broker_id, plan_id, status, hostname, customer_email, customer_name, username, password_enc, created_at)
    SELECT 100000000 + g, '${BROKER}', (SELECT min(id) FROM plans),
           (ARRAY['pending','active','suspended','cancelled'])[1 + g % 4]::service_status,
           'host' || g || '.customer.example', 'c' || g || '@customer.example', CASE WHEN g % 3 = 0 THEN NULL ELSE 'Customer ' || g END,
           'user' || g, 'v1:x:y:z', TIMESTAMPTZ '2024-01-01 00:00:00Z' + g * INTERVAL '37 seconds'
    FROM generate_series(1, ${ROWS}) g`);
}

/** Takes the bytes and drops them (or writes them to BUILD_OUT). */
function sink(file: string | undefined): { out: Writable; bytes: () => number } {
  let bytes = 0;
  const fd = file ? openSync(file, 'w') : undefined;
  const out = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      if (fd !== undefined) writeSync(fd, chunk);
      callback();
    },
    final(callback) {
      if (fd !== undefined) closeSync(fd);
      callback();
    },
  });
  return { out, bytes: () => bytes };
}

async function main(): Promise<void> {
  const db = await createTestDatabase();
  try {
    const started = Date.now();
    await seed(db.prisma);
    console.log(`${db.kind}: seeded ${ROWS} ${REPORT} in ${Date.now() - started} ms`);
    // BUILD_FROM=dist builds with the compiled code (npm run build), as the servers run it; tsx's
    // loader costs the build thread a second or more of transpiling and hooks.
    const fromDist = process.env.BUILD_FROM === 'dist';
    const builders: typeof sourceBuilders = fromDist ? ((await import(DIST_REPORTS)) as { reportKinds: typeof sourceBuilders }).reportKinds : sourceBuilders;
    const { buildWorkbook }: { buildWorkbook: typeof sourceBuildWorkbook } = fromDist ? await import(DIST_BUILD) : { buildWorkbook: sourceBuildWorkbook };
    const builder = builders[REPORT];
    const spec: ReportSpec =
      REPORT === 'invoices'
        ? { type: 'invoices', brokerId: BROKER, apiKeyId: null, recipients: [], startDate: '2024-01-01', endDate: '2025-12-31' }
        : { type: 'services', brokerId: BROKER, apiKeyId: null, recipients: [] };
    const count = await builder.count(db.prisma, spec);
    // What the process held before its first build: the rest of a build's peak RSS is the build's.
    console.log(`RSS before the first ${process.env.BUILD_FETCH_ONLY ? 'fetch' : 'build'}: ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB`);
    if (process.env.BUILD_FETCH_ONLY) {
      // Only the page reads (the database's and the driver's share of a build), for comparison.
      const { scope } = builder.input(spec, count.snapshot, new Date());
      for (let run = 1; run <= RUNS; run++) {
        const t0 = process.hrtime.bigint();
        let chars = 0;
        for await (const text of pagesOf(scope, prismaPageQuery(db.prisma))) chars += text.length;
        console.log(`fetch ${run}: ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0)} ms, ${(chars / 1e6).toFixed(1)} M characters of page text, peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
      }
      return;
    }
    for (let run = 1; run <= RUNS; run++) {
      const { out, bytes } = sink(run === RUNS ? process.env.BUILD_OUT : undefined);
      const t0 = process.hrtime.bigint();
      const input = builder.input(spec, count.snapshot, new Date());
      const written = await buildWorkbook(input.kind, input.facts, pagesOf(input.scope, prismaPageQuery(db.prisma)), out);
      await finished(out);
      const t1 = process.hrtime.bigint();
      const ms = Number(t1 - t0) / 1e6;
      const rssMb = process.resourceUsage().maxRSS / 1024;
      console.log(`build ${run}: ${written.rows} rows in ${ms.toFixed(0)} ms, ${(bytes() / 1e6).toFixed(1)} MB workbook, peak RSS ${rssMb.toFixed(0)} MB (--window ${t0 / 1000n}-${t1 / 1000n})`);
    }
  } finally {
    await db.drop();
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** Self time per package (node_modules/<name>, src/<file>, node internals) and per function. */
function summarize(file: string, window: string | undefined): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number };
  const [from, to] = window ? window.split('-').map(Number) : [0, Infinity];
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= from! && at <= to!) self.set(id, (self.get(id) ?? 0) + delta / 1000);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const where = (url: string): string => {
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
    if (pkg) return pkg;
    const own = /\/((?:src|bench|generated)\/.*)$/.exec(url)?.[1];
    return own ?? (url ? url.replace(/^.*\//, '') : '(native/VM)');
  };
  const groups = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, ms] of self) {
    const frame = byId.get(id)!.callFrame;
    const group = where(frame.url);
    groups.set(group, (groups.get(group) ?? 0) + ms);
    const fn = `${frame.functionName || '(anonymous)'} ${group}:${frame.lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + ms);
  }
  const print = (title: string, m: Map<string, number>, n: number) => {
    console.log(`\n${title} (of ${total.toFixed(0)} ms sampled)`);
    for (const [k, ms] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) {
      console.log(`${ms.toFixed(0).padStart(7)} ms ${((ms / total) * 100).toFixed(1).padStart(5)} %  ${k}`);
    }
  };
  print('self time by package / file', groups, 15);
  print('self time by function', functions, 25);
}

if (process.argv[2] === '--summary') summarize(process.argv[3]!, process.argv[4] === '--window' ? process.argv[5] : undefined);
else await main();
