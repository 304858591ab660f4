/**
 * The event feed's visibility delay: `npm run bench:feed` (= `tsx bench/feed.ts`), issue 34.
 *
 * `BENCH_WRITERS` (default 20) writers, each recording `BENCH_CHANGES` (default 50) changes of one
 * broker's live feed one after another (a transaction that reads the broker, then `recordEvents`
 * of one to three events, as a change's transaction writes them), while a poller walks the feed
 * (`listEvents` with `order=asc` after its last event, 100 a page) as fast as it can. For each event:
 * the delay from its writer's commit (the transaction's promise resolved) to the poller's first
 * sight of it, and each change's time to record (the wait for the feed's lock included). It also
 * checks what the property test checks: every event seen once, in `seq` order.
 *
 * In process, on the embedded PGlite (in memory) or, with DATABASE_URL, on a database of the
 * bench's own on that server. Results are written to bench/results/feed-<timestamp>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../src/db/client.ts';
import { listEvents } from '../src/events/reads.ts';
import { recordEvents } from '../src/events/store.ts';
import { randomId } from '../src/shared/ids.ts';
import { createBenchDatabase, dropBenchDatabase, percentile, ROOT } from './report-kit.ts';

const WRITERS = Number(process.env.BENCH_WRITERS ?? 20);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 50);

function summarize(times: number[]) {
  const sorted = [...times].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 10) / 10;
  return { n: sorted.length, median_ms: r(percentile(sorted, 50)), p99_ms: r(percentile(sorted, 99)), worst_ms: r(sorted.at(-1) ?? 0) };
}

async function main(): Promise<void> {
  const benchDb = await createBenchDatabase('capi_bench_feed');
  const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: ROOT, pgliteDataDir: 'memory://' });
  try {
    const broker = await db.prisma.broker.create({ data: { id: randomId('brk_', 24), name: 'Feed bench', email: 'feed@broker.example', slug: `feed-${Date.now()}` } });
    const scope = { brokerId: broker.id, mode: 'live' as const };
    const committedAt = new Map<string, number>();
    const recordMs: number[] = [];
    let running = WRITERS;

    const writer = async (n: number) => {
      for (let i = 0; i < CHANGES; i++) {
        const started = performance.now();
        const ids = await db.prisma.$transaction(async (tx) => {
          await tx.broker.findUniqueOrThrow({ where: { id: broker.id } });
          const size = 1 + ((n + i) % 3);
          return recordEvents(tx, Array.from({ length: size }, (_, k) => ({ brokerId: broker.id, mode: 'live' as const, type: 'service.updated' as const, object: { n, i, k } })));
        });
        const now = performance.now();
        recordMs.push(now - started);
        for (const id of ids) committedAt.set(id, now);
      }
      running -= 1;
    };

    const seenAt = new Map<string, number>();
    const order: string[] = [];
    const poller = async () => {
      let cursor: string | undefined;
      for (;;) {
        const finished = running === 0;
        const { rows, hasMore } = await listEvents(db.prisma, scope, { order: 'asc', limit: 100, startingAfter: cursor });
        const now = performance.now();
        for (const row of rows) {
          seenAt.set(row.id, now);
          order.push(row.id);
        }
        cursor = rows.at(-1)?.id ?? cursor;
        if (finished && !hasMore) return;
      }
    };

    const started = performance.now();
    await Promise.all([poller(), ...Array.from({ length: WRITERS }, (_, n) => writer(n))]);
    const seconds = (performance.now() - started) / 1000;

    const stored = await db.prisma.event.findMany({ where: scope, orderBy: { seq: 'asc' }, select: { id: true } });
    const exact = order.length === stored.length && new Set(order).size === order.length && order.every((id, i) => id === stored[i]!.id);
    // A poller may see an event before its writer's promise resolves (the commit's answer is on its way): no delay then.
    const delays = [...committedAt].map(([id, at]) => Math.max(0, (seenAt.get(id) ?? Infinity) - at));
    const result = {
      database: db.kind,
      writers: WRITERS,
      changes_per_writer: CHANGES,
      events: stored.length,
      events_per_second: Math.round(stored.length / seconds),
      every_event_once_in_order: exact,
      visibility_delay: summarize(delays),
      record_change: summarize(recordMs),
    };
    console.log(JSON.stringify(result, null, 2));
    const dir = path.join(ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `feed-${new Date().toISOString().replaceAll(':', '-')}.json`), `${JSON.stringify(result, null, 2)}\n`);
    if (!exact) process.exitCode = 1;
  } finally {
    await db.close();
    await dropBenchDatabase(benchDb);
  }
}

await main();
