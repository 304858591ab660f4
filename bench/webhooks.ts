/**
 * Webhook delivery: `npm run bench:webhooks` (= `tsx bench/webhooks.ts`).
 *
 * Starts the server as `npm start` does (API and job worker in one process, the compiled `dist/`,
 * embedded PGlite unless DATABASE_URL is set; then a database of the bench's own on that server)
 * and a receiver in this process, and measures:
 *
 * 1. throughput: `BENCH_EVENTS` (default 2000) events written at once for one broker whose one
 *    endpoint answers 200 at once; events delivered per second, from their commit until the
 *    receiver has had every one;
 * 2. a hanging endpoint's effect: a steady stream of events (`BENCH_RATE` a second, default 20,
 *    for `BENCH_SECONDS`, default 6) to a fast endpoint of another broker, each event's latency
 *    from its commit to its arrival, while `GET /api/v1/auth-check` is probed one request at a
 *    time every 20 ms; first with nothing else owed, then with `BENCH_HANGING` (default 200)
 *    deliveries owed to an endpoint that never answers (WEBHOOK_TIMEOUT_MS at its 15 s default);
 * 3. fair shares (issue 32): the same stream, and a ping through the API, while a third broker has its
 *    full allowance of endpoints (WEBHOOK_ENDPOINTS_PER_BROKER, 16) live and 16 test, none of which
 *    ever answers, each owed `BENCH_HOG_EVENTS` (default 8) events; the other broker's p99.
 *
 * Events are written through a connection of the bench's own (`recordEvents`, as a change's
 * transaction writes them), so the API's request path takes no part in making them. Results are
 * written to bench/results/webhooks-<timestamp>.json.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { connectForCli, type Database } from '../src/db/client.ts';
import { createCredentials } from '../src/db/credentials.ts';
import { recordEvents } from '../src/events/store.ts';
import { randomId } from '../src/shared/ids.ts';
import { newEndpointSecret } from '../src/webhooks/secrets.ts';
import { startReceiver, type Receiver } from '../test/helpers/webhooks.ts';
import { build, cli, createBenchDatabase, dropBenchDatabase, freePort, percentile, ROOT, startProcess, stopChildren, waitForHttp, type BenchDatabase } from './report-kit.ts';
import { writingClient } from '../test/helpers/db.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
const RATE = Number(process.env.BENCH_RATE ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const HANGING = Number(process.env.BENCH_HANGING ?? 200);
const HOG_EVENTS = Number(process.env.BENCH_HOG_EVENTS ?? 8);
const POSTGRES = Boolean(process.env.DATABASE_URL);
const KEY = randomBytes(32).toString('hex');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-webhooks-'));
let benchDatabase: BenchDatabase | undefined;

interface Latencies {
  n: number;
  median_ms: number;
  p99_ms: number;
  worst_ms: number;
}

function summarize(times: number[]): Latencies {
  const sorted = [...times].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 10) / 10;
  return { n: sorted.length, median_ms: r(percentile(sorted, 50)), p99_ms: r(percentile(sorted, 99)), worst_ms: r(sorted.at(-1) ?? 0) };
}

const describe = (l: Latencies) => `n ${l.n}, median ${l.median_ms} ms, p99 ${l.p99_ms} ms, worst ${l.worst_ms} ms`;

/** A broker (admin CLI) with one endpoint at the receiver's `path`. */
async function brokerWithEndpoint(db: Database, receiver: Receiver, slug: string): Promise<string> {
  cli(dataDir, ['brokers', 'create', '--name', `Broker ${slug}`, '--email', `${slug}@broker.example`, '--slug', slug]);
  const broker = await db.prisma.broker.findFirstOrThrow({ where: { slug } });
  const credentials = createCredentials(Buffer.from(KEY, 'hex'));
  await writingClient(db.prisma).webhookEndpoint.create({
    data: { id: randomId('we_', 24), brokerId: broker.id, mode: 'live', url: receiver.url(slug), events: [], secret: credentials.encrypt(newEndpointSecret()) },
  });
  return broker.id;
}

/**
 * A broker (admin CLI) with its full allowance of endpoints in each mode, every one hanging, each
 * owed `events` events of its mode.
 */
async function hogBroker(db: Database, receiver: Receiver, slug: string, events: number): Promise<number> {
  cli(dataDir, ['brokers', 'create', '--name', `Broker ${slug}`, '--email', `${slug}@broker.example`, '--slug', slug]);
  const broker = await db.prisma.broker.findFirstOrThrow({ where: { slug } });
  const credentials = createCredentials(Buffer.from(KEY, 'hex'));
  const allowance = loadConfig({}).webhookEndpointsPerBroker;
  for (const mode of ['live', 'test'] as const) {
    for (let i = 0; i < allowance; i++) {
      const path = `${slug}-${mode}-${i}`;
      receiver.answer(path, () => 'hang');
      await writingClient(db.prisma).webhookEndpoint.create({
        data: { id: randomId('we_', 24), brokerId: broker.id, mode, url: receiver.url(path), events: [], secret: credentials.encrypt(newEndpointSecret()) },
      });
    }
    await recordEvents(db.prisma, Array.from({ length: events }, (_, n) => ({ brokerId: broker.id, mode, type: 'service.updated' as const, object: { object: 'service', n } })));
  }
  return allowance;
}

/** A ping of the broker's endpoint through the API; ms from the request to its arrival. */
async function pingLatency(receiver: Receiver, url: string, key: string, endpointId: string, path: string): Promise<number> {
  const started = Date.now();
  const res = await fetch(`${url}/api/v1/webhook-endpoints/${endpointId}/ping`, { method: 'POST', headers: { Authorization: `Bearer ${key}` } });
  if (res.status !== 200) throw new Error(`ping answered ${res.status}`);
  const { data } = (await res.json()) as { data: { id: string } };
  const arrived = await arrivals(receiver, path, [data.id], 60_000);
  return arrived.get(data.id)! - started;
}

/** Writes `n` events for the broker in transactions of at most 200; their ids and when each committed. */
async function happen(db: Database, brokerId: string, n: number): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  for (let done = 0; done < n; done += 200) {
    const events = Array.from({ length: Math.min(200, n - done) }, (_, i) => ({ brokerId, mode: 'live' as const, type: 'service.updated' as const, object: { object: 'service', n: done + i } }));
    const ids = await recordEvents(db.prisma, events);
    const at = Date.now();
    for (const id of ids) committed.set(id, at);
  }
  return committed;
}

/** Waits until the receiver has had every id at `path`; the arrival of each (first copy), epoch ms. */
async function arrivals(receiver: Receiver, path: string, ids: Iterable<string>, timeoutMs: number): Promise<Map<string, number>> {
  const wanted = new Set(ids);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = new Map<string, number>();
    for (const c of receiver.to(path)) {
      const id = String(c.headers['webhook-id']);
      if (wanted.has(id) && !seen.has(id)) seen.set(id, c.at);
    }
    if (seen.size === wanted.size) return seen;
    if (Date.now() > deadline) throw new Error(`${path}: ${seen.size} of ${wanted.size} events arrived in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sequential GET /api/v1/auth-check until `stop` resolves; their latencies in ms. */
async function probe(url: string, key: string, stop: Promise<unknown>): Promise<number[]> {
  let done = false;
  void stop.finally(() => {
    done = true;
  });
  const times: number[] = [];
  while (!done) {
    const t = performance.now();
    const res = await fetch(`${url}/api/v1/auth-check`, { headers: { Authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /api/v1/auth-check answered ${res.status}`);
    times.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return times;
}

/** RATE events a second for SECONDS to the broker, each alone; per event its commit-to-arrival latency, and the probe's. */
async function stream(db: Database, receiver: Receiver, brokerId: string, path: string, url: string, key: string) {
  const committed = new Map<string, number>();
  const writing = (async () => {
    for (let i = 0; i < RATE * SECONDS; i++) {
      for (const [id, at] of await happen(db, brokerId, 1)) committed.set(id, at);
      await new Promise((r) => setTimeout(r, 1000 / RATE));
    }
  })();
  const delivered = writing.then(() => arrivals(receiver, path, committed.keys(), 60_000));
  const api = await probe(url, key, delivered);
  const arrived = await delivered;
  return { delivery: summarize([...arrived].map(([id, at]) => at - committed.get(id)!)), api: summarize(api) };
}

async function main(): Promise<void> {
  build();
  benchDatabase = await createBenchDatabase('capi_bench_webhooks');
  const receiver = await startReceiver();
  const port = await freePort();
  const server = startProcess('start', {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    CREDENTIALS_KEY: KEY,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(url, 60_000, server);
  const db = await connectForCli({ dataDir, databaseUrl: process.env.DATABASE_URL });
  try {
    const database = POSTGRES ? 'postgresql' : 'pglite (embedded)';
    const bulk = await brokerWithEndpoint(db, receiver, 'bulk');
    const t0 = Date.now();
    const committed = await happen(db, bulk, EVENTS);
    const arrived = await arrivals(receiver, 'bulk', committed.keys(), 10 * 60_000);
    const seconds = (Math.max(...arrived.values()) - t0) / 1000;
    const throughput = { events: EVENTS, seconds: Math.round(seconds * 10) / 10, per_second: Math.round(EVENTS / seconds) };
    console.log(`${database}: ${EVENTS} events to one fast endpoint in ${throughput.seconds} s: ${throughput.per_second} events/s`);

    const steady = await brokerWithEndpoint(db, receiver, 'steady');
    receiver.answer('hanging', () => 'hang');
    const hanging = await brokerWithEndpoint(db, receiver, 'hanging');
    const key = cli(dataDir, ['keys', 'create', '--broker', 'steady', '--mode', 'live', '--scopes', 'admin:full', '--rate-limit', '100000']).key as string;
    const alone = await stream(db, receiver, steady, 'steady', url, key);
    console.log(`${database}, nothing else owed: delivery ${describe(alone.delivery)}; API auth-check ${describe(alone.api)}`);
    await happen(db, hanging, HANGING);
    await new Promise((r) => setTimeout(r, 1000));
    const beside = await stream(db, receiver, steady, 'steady', url, key);
    console.log(`${database}, ${HANGING} owed to a hanging endpoint: delivery ${describe(beside.delivery)}; API auth-check ${describe(beside.api)}; hanging endpoint's requests open at most ${receiver.mostOpen('hanging')}`);
    // The hanging endpoint's owed deliveries are given up, so that only the hog holds slots now.
    await writingClient(db.prisma).webhookEndpoint.updateMany({ where: { brokerId: hanging }, data: { status: 'disabled' } });
    const allowance = await hogBroker(db, receiver, 'hog', HOG_EVENTS);
    await new Promise((r) => setTimeout(r, 1000));
    const fair = await stream(db, receiver, steady, 'steady', url, key);
    const steadyEndpoint = await db.prisma.webhookEndpoint.findFirstOrThrow({ where: { brokerId: steady } });
    const pingMs = await pingLatency(receiver, url, key, steadyEndpoint.id, 'steady');
    const hogMostOpen = { live: 0, test: 0 };
    for (const mode of ['live', 'test'] as const) for (let i = 0; i < allowance; i++) hogMostOpen[mode] += receiver.mostOpen(`hog-${mode}-${i}`) > 0 ? 1 : 0;
    console.log(
      `${database}, a broker's ${allowance} live and ${allowance} test endpoints hanging, each owed ${HOG_EVENTS} events: the other broker's delivery ${describe(fair.delivery)}; its ping ${pingMs} ms; API auth-check ${describe(fair.api)}`,
    );
    const summary = {
      at: new Date().toISOString(),
      database,
      cpus: os.cpus().length,
      loadavg_1m: Number(os.loadavg()[0]!.toFixed(2)),
      node: process.version,
      throughput,
      stream: { rate_per_second: RATE, seconds: SECONDS },
      alone,
      beside_hanging: { ...beside, hanging_owed: HANGING, hanging_most_open: receiver.mostOpen('hanging') },
      beside_hog: { ...fair, ping_ms: pingMs, hog_endpoints_per_mode: allowance, hog_events_per_mode: HOG_EVENTS, hog_endpoints_reached: hogMostOpen },
    };
    const outDir = path.join(ROOT, 'bench', 'results');
    mkdirSync(outDir, { recursive: true });
    writeFileSync(path.join(outDir, `webhooks-${summary.at.replace(/[:.]/g, '-')}.json`), `${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await db.close();
    await receiver.stop();
  }
}

try {
  await main();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await stopChildren();
  rmSync(dataDir, { recursive: true, force: true });
  await dropBenchDatabase(benchDatabase).catch((err: unknown) => console.error('could not drop the bench database', err));
}
