/**
 * Webhook delivery under faults (`npm run test:faults`), with the API and the worker as separate
 * processes on a private PostgreSQL cluster and a private redis-server, and a receiver in this
 * process. Each scenario asserts exactly what the receiver got (every event at each of its
 * endpoints at least once, nothing else, every copy's signature valid) and the records (every
 * delivery delivered, its attempts numbered 1…n with the last a 2xx).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import type { Database } from '../../src/db/client.ts';
import { createCredentials } from '../../src/db/credentials.ts';
import { recordEvents } from '../../src/events/store.ts';
import { PER_BROKER_IN_FLIGHT, PER_ENDPOINT_IN_FLIGHT } from '../../src/webhooks/dispatcher.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { inTurn, startReceiver, verified, webhookEndpoint, type Answer, type Receiver, type TestEndpoint } from '../helpers/webhooks.ts';
import { apiAddress, sleep, startRole, startTcpRedis, tmpDir, waitUntil, type RoleProcess, type TcpRedis } from '../ops/helpers.ts';
import { faultsAvailable, startPgCluster, type PgCluster, queryOnce, withDatabaseAt } from './harness.ts';
import { writingClient } from '../helpers/db.ts';

const skip = faultsAvailable();
/** Every delivery is delivered within this once the fault is over. */
const FINAL_BOUND_MS = 90_000;
const TIMEOUT_MS = 2000;
const KEY = randomBytes(32).toString('hex');
const credentials = createCredentials(Buffer.from(KEY, 'hex'));

let cluster: PgCluster;
let redis: TcpRedis;
let receiver: Receiver;
let api: RoleProcess;
let worker: RoleProcess;
let env: NodeJS.ProcessEnv;
const data = tmpDir('capi-faults-webhooks-');
const children: RoleProcess[] = [];

before(async () => {
  if (skip) return;
  [cluster, redis, receiver] = await Promise.all([startPgCluster(), startTcpRedis(), startReceiver()]);
  env = {
    DATABASE_URL: cluster.url,
    REDIS_URL: redis.url,
    DATA_DIR: data.dir,
    // A worker on PostgreSQL sends e-mail only where it is told to (issue 45); none is sent here.
    SMTP_URL: pathToFileURL(path.join(data.dir, 'outbox')).href,
    CREDENTIALS_KEY: KEY,
    DB_STATEMENT_TIMEOUT_MS: '5000',
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    // Retries a second apart, enough of them to outlast every fault here.
    WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 40 }, (_, i) => (i === 0 ? 0 : 1)).join(','),
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  };
  // The API plays no part in delivery; it runs as in production, beside the worker.
  // Every process on the database shares PUBLIC_BASE_URL (issue 45), so it is chosen first.
  const address = await apiAddress();
  env.PUBLIC_BASE_URL = address.PUBLIC_BASE_URL;
  api = await startRole('api', { ...env, PORT: address.PORT });
  children.push(api);
  worker = await startRole('worker', env);
  children.push(worker);
});

after(async () => {
  for (const c of children) await c.kill('SIGKILL').catch(() => undefined);
  await receiver?.stop();
  await redis?.stop();
  cluster?.remove();
  data.remove();
});

const query = <T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> => queryOnce<T>(cluster.url, sql, params);
const withDatabase = <T>(use: (db: Database) => Promise<T>): Promise<T> => withDatabaseAt(cluster.url, data.dir, use);

interface Target {
  path: string;
  endpoint: TestEndpoint;
  brokerId: string;
}

/** A broker per path, each with one endpoint at the receiver's path answering `answer`. */
async function targets(tag: string, n: number, answer: Answer): Promise<Target[]> {
  return withDatabase(async (db) => {
    const made: Target[] = [];
    for (let i = 1; i <= n; i++) {
      const path = `${tag}-${i}`;
      receiver.answer(path, answer);
      const { id: brokerId } = await broker(writingClient(db.prisma));
      made.push({ path, brokerId, endpoint: await webhookEndpoint(writingClient(db.prisma), credentials, { brokerId, url: receiver.url(path) }) });
    }
    return made;
  });
}

/** `n` events for each target's broker, as changes write them; their ids per target. */
async function happen(to: Target[], n: number): Promise<Map<Target, string[]>> {
  return withDatabase(async (db) => {
    const ids = new Map<Target, string[]>();
    for (const target of to) {
      const events = Array.from({ length: n }, (_, i) => ({ brokerId: target.brokerId, mode: 'live' as const, type: 'service.updated' as const, object: { object: 'service', n: i } }));
      ids.set(target, await recordEvents(db.prisma, events));
    }
    return ids;
  });
}

const copiesTo = (target: Target) => receiver.to(target.path);

interface DeliveryRow {
  event_id: string;
  status: string;
  attempts: number;
  numbers: number[];
  last_code: number | null;
}

/** Waits until every delivery of the targets is final; returns them. */
async function finalDeliveries(to: Target[]): Promise<DeliveryRow[]> {
  const ids = to.map((t) => t.endpoint.id);
  const rows = () =>
    query<DeliveryRow>(
      `SELECT d.event_id, d.status::text, d.attempts,
              coalesce(array_agg(a.number ORDER BY a.number) FILTER (WHERE a.id IS NOT NULL), '{}') AS numbers,
              (array_agg(a.status_code ORDER BY a.number DESC))[1] AS last_code
         FROM webhook_deliveries d LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE d.endpoint_id = ANY($1) GROUP BY d.id ORDER BY d.id`,
      [ids],
    );
  await waitUntil(async () => (await rows().catch(() => [{ status: 'pending' }])).every((r) => r.status !== 'pending'), FINAL_BOUND_MS, 'every delivery to be final');
  return rows();
}

/**
 * Exactly what the receiver must have got: at each target, every one of its events at least once
 * and nothing else, each copy signed with the target's secret and carrying its event; and every
 * delivery recorded delivered, its attempts 1…n, the last one a 2xx.
 */
async function assertDeliveredAtLeastOnce(events: Map<Target, string[]>): Promise<void> {
  const to = [...events.keys()];
  const deliveries = await finalDeliveries(to);
  for (const [target, ids] of events) {
    const copies = copiesTo(target);
    assert.deepEqual([...new Set(copies.map((c) => String(c.headers['webhook-id'])))].sort(), [...ids].sort(), `${target.path}: every event, nothing else`);
    for (const copy of copies) {
      const body = verified(target.endpoint.secret, copy) as { id: string };
      assert.equal(body.id, copy.headers['webhook-id'], `${target.path}: the body is the event the id names`);
    }
  }
  assert.equal(deliveries.length, to.reduce((n, t) => n + events.get(t)!.length, 0));
  for (const d of deliveries) {
    assert.equal(d.status, 'delivered', JSON.stringify(d));
    assert.deepEqual(d.numbers, Array.from({ length: d.attempts }, (_, i) => i + 1), `attempts of ${d.event_id}`);
    assert.equal(d.last_code, 200, JSON.stringify(d));
  }
}

/** A scenario that failed half-way may have left no worker running: each starts with one. */
async function ensureWorker(): Promise<void> {
  if (worker.proc.exitCode === null && worker.proc.signalCode === null) return;
  worker = await startRole('worker', env);
  children.push(worker);
}

describe('webhook delivery under faults', { skip }, () => {
  test('Redis restarted empty with deliveries queued: each delivered, none lost', async () => {
    await ensureWorker();
    const to = await targets('redis', 3, inTurn({ status: 200, afterMs: 600 }));
    const events = await happen(to, 10);
    await waitUntil(() => receiver.received.filter((c) => c.path.startsWith('redis-')).length >= 3, 20_000, 'deliveries under way');
    await redis.stop();
    await sleep(1000);
    await redis.start();
    await assertDeliveredAtLeastOnce(events);
  });

  test('PostgreSQL stopped for 8 s during deliveries: each delivered once it is back, none lost', async () => {
    await ensureWorker();
    const to = await targets('pg', 2, inTurn({ status: 200, afterMs: 500 }));
    const events = await happen(to, 8);
    await waitUntil(() => receiver.received.filter((c) => c.path.startsWith('pg-')).length >= 2, 20_000, 'deliveries under way');
    cluster.stop();
    await sleep(8000);
    cluster.start();
    await assertDeliveredAtLeastOnce(events);
  });

  test('the worker SIGKILLed during deliveries: the next worker delivers the rest; only what was in flight arrives twice', async () => {
    await ensureWorker();
    const to = await targets('kill', 2, inTurn({ status: 200, afterMs: 1000 }));
    const events = await happen(to, 8);
    await waitUntil(() => receiver.received.filter((c) => c.path.startsWith('kill-')).length >= 2, 20_000, 'deliveries under way');
    await worker.kill('SIGKILL');
    const inFlight = receiver.received.filter((c) => c.path.startsWith('kill-')).length;
    worker = await startRole('worker', env);
    children.push(worker);
    await assertDeliveredAtLeastOnce(events);
    for (const target of to) {
      const ids = copiesTo(target).map((c) => String(c.headers['webhook-id']));
      const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
      assert.ok(twice.length <= PER_ENDPOINT_IN_FLIGHT, `${target.path}: ${twice.length} repeated, at most the deliveries in flight`);
    }
    assert.ok(inFlight > 0);
  });

  test('a receiver that hangs past the timeout: its attempts fail with the timeout, at most the cap at once; another endpoint is delivered meanwhile', async () => {
    await ensureWorker();
    const [hanging] = await targets('hang', 1, inTurn('hang'));
    const [fast] = await targets('fast', 1, inTurn(200));
    const stuck = await happen([hanging!], 10);
    await sleep(500);
    const started = Date.now();
    const events = await happen([fast!], 10);
    await assertDeliveredAtLeastOnce(events);
    const lastArrival = Math.max(...copiesTo(fast!).map((c) => c.at));
    assert.ok(lastArrival - started < TIMEOUT_MS, `the other endpoint's events all arrived within ${lastArrival - started} ms`);
    await waitUntil(async () => (await query('SELECT 1 FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1', [hanging!.endpoint.id])).length >= PER_ENDPOINT_IN_FLIGHT, 20_000, 'timed-out attempts');
    const attempts = await query<{ error: string | null; status_code: number | null; duration_ms: number }>(
      'SELECT a.error, a.status_code, a.duration_ms FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1',
      [hanging!.endpoint.id],
    );
    for (const a of attempts) {
      assert.deepEqual([a.error, a.status_code], [`timeout after ${TIMEOUT_MS} ms`, null]);
      assert.ok(a.duration_ms >= TIMEOUT_MS);
    }
    assert.ok(receiver.mostOpen(hanging!.path) <= PER_ENDPOINT_IN_FLIGHT, `${receiver.mostOpen(hanging!.path)} open at once`);
    const pending = await query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'", [hanging!.endpoint.id]);
    assert.equal(pending[0]!.n, stuck.get(hanging!)!.length, 'still owed, retried on the schedule');
  });

  test("a broker's full allowance of hanging endpoints, live and test: another broker's events and ping are not held up by them", async (t) => {
    await ensureWorker();
    const allowance = loadConfig({}).webhookEndpointsPerBroker;
    // The hog: WEBHOOK_ENDPOINTS_PER_BROKER endpoints in each mode, none of which ever answers, each owed 8 events.
    const hog = await withDatabase(async (db) => {
      const { id: brokerId } = await broker(writingClient(db.prisma));
      for (const mode of ['live', 'test'] as const) {
        for (let i = 0; i < allowance; i++) {
          receiver.answer(`hog-${mode}-${i}`, () => 'hang');
          await webhookEndpoint(writingClient(db.prisma), credentials, { brokerId, mode, url: receiver.url(`hog-${mode}-${i}`) });
        }
        await recordEvents(db.prisma, Array.from({ length: 8 }, (_, n) => ({ brokerId, mode, type: 'service.updated' as const, object: { object: 'service', n } })));
      }
      return brokerId;
    });
    const hogCopies = () => receiver.received.filter((c) => c.path.startsWith('hog-')).length;
    await waitUntil(() => hogCopies() >= 2 * PER_BROKER_IN_FLIGHT, 20_000, "the hog's attempts to hang");

    const [other] = await targets('fair', 1, inTurn(200));
    const key = await withDatabase(async (db) => (await apiKey(writingClient(db.prisma), { brokerId: other!.brokerId, mode: 'live', rateLimit: 100_000 })).key);
    const committed = new Map<string, number>();
    let mostHeld = { live: 0, test: 0 };
    await withDatabase(async (db) => {
      for (let i = 0; i < 150; i++) {
        const [id] = await recordEvents(db.prisma, [{ brokerId: other!.brokerId, mode: 'live' as const, type: 'service.updated', object: { object: 'service', n: i } }]);
        committed.set(id!, Date.now());
        const held = await db.prisma.$queryRaw<Array<{ mode: 'live' | 'test'; n: number }>>`
          SELECT w."mode"::text AS "mode", count(*)::int AS "n" FROM "webhook_deliveries" d JOIN "webhook_endpoints" w ON w."id" = d."endpoint_id"
           WHERE w."broker_id" = ${hog} AND d."status" = 'pending' AND d."leased_until" >= now() GROUP BY 1`;
        for (const row of held) mostHeld = { ...mostHeld, [row.mode]: Math.max(mostHeld[row.mode], row.n) };
        await sleep(100);
      }
    });
    // The ping is timed from its request (the API's work included), the events from their commit.
    const pingStarted = Date.now();
    const ping = await fetch(`${api.url}/api/v1/webhook-endpoints/${other!.endpoint.id}/ping`, { method: 'POST', headers: { Authorization: `Bearer ${key}` } });
    assert.equal(ping.status, 200, await ping.clone().text());
    const pingId = ((await ping.json()) as { data: { id: string } }).data.id;

    const seen = () => new Set(copiesTo(other!).map((c) => String(c.headers['webhook-id'])));
    await waitUntil(() => [...committed.keys(), pingId].every((id) => seen().has(id)), 20_000, "the other broker's events");
    const arrived = new Map<string, number>();
    for (const c of copiesTo(other!)) if (!arrived.has(String(c.headers['webhook-id']))) arrived.set(String(c.headers['webhook-id']), c.at);
    const latencies = [...committed].map(([id, at]) => arrived.get(id)! - at).sort((a, b) => a - b);
    const p99 = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]!;
    t.diagnostic(`other broker: ${latencies.length} events, median ${latencies[latencies.length >> 1]} ms, p99 ${p99} ms, worst ${latencies.at(-1)} ms; ping ${arrived.get(pingId)! - pingStarted} ms; hog leases at most ${JSON.stringify(mostHeld)}`);
    // The goal (ping within 3 s, p99 under 1 s) is bench:webhooks' to measure; a loaded CI machine
    // is not a stopwatch. These bounds still fail when the hog's hanging attempts take the slots.
    assert.ok(arrived.get(pingId)! - pingStarted < 10_000, `the ping arrived after ${arrived.get(pingId)! - pingStarted} ms`);
    assert.ok(latencies.at(-1)! < 10_000, `the slowest event arrived after ${latencies.at(-1)} ms (p99 ${p99} ms)`);
    // The hog held its share and no more, in each mode.
    assert.ok(mostHeld.live > 0 && mostHeld.live <= PER_BROKER_IN_FLIGHT, JSON.stringify(mostHeld));
    assert.ok(mostHeld.test > 0 && mostHeld.test <= PER_BROKER_IN_FLIGHT, JSON.stringify(mostHeld));
    // Its endpoints disabled: nothing of it is left owed to the worker for later scenarios.
    await query(`UPDATE webhook_endpoints SET status = 'disabled' WHERE broker_id = $1`, [hog]);
  });
});
