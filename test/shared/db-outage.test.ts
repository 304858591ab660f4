// Which errors of Prisma, its pg adapter, node-postgres and pg-pool are an outage (503), made for
// real against the machine's PostgreSQL (a closed port, a pool of one, a transaction's bounds), and
// which are not (a query's own fault stays a 500 or its domain error).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../generated/prisma/client.ts';
import { OneQueryAtATimeClient } from '../../src/db/one-at-a-time.ts';
import { DatabaseUnavailableError, asDatabaseUnavailable, isDatabaseOutage } from '../../src/shared/db-outage.ts';

const SERVER = process.env.DATABASE_URL?.trim() || 'postgresql://postgres@127.0.0.1:5432/postgres';

const clients: Array<{ prisma: PrismaClient; pool: pg.Pool }> = [];
function clientOf(url: string, max: number, waitMs = 3000): PrismaClient {
  const pool = new pg.Pool({ Client: OneQueryAtATimeClient, connectionString: url, max, connectionTimeoutMillis: waitMs });
  pool.on('error', () => {});
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  clients.push({ prisma, pool });
  return prisma;
}
after(async () => {
  for (const c of clients) {
    await c.prisma.$disconnect().catch(() => {});
    await c.pool.end().catch(() => {});
  }
});

async function errorOf(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (e) {
    return e;
  }
  assert.fail('expected the work to fail');
}

/** A port nothing listens on (taken and given back). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('database outages', () => {
  test('a server that refuses connections, by query and by transaction', async () => {
    const url = new URL(SERVER);
    url.port = String(await closedPort());
    const prisma = clientOf(url.toString(), 2);
    const byQuery = await errorOf(() => prisma.$queryRaw`SELECT 1`);
    const byTransaction = await errorOf(() => prisma.$transaction(async (tx) => tx.$queryRaw`SELECT 1`));
    assert.equal(isDatabaseOutage(byQuery), true, String(byQuery));
    assert.equal(isDatabaseOutage(byTransaction), true, String(byTransaction));
  });

  test('a pool with no connection free: the wait for one, and a transaction that cannot start', async () => {
    const prisma = clientOf(SERVER, 1, 1000);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const holding = new Promise<void>((r) => (started = r));
    const holder = prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1`;
      started();
      await held;
    }, { timeout: 10_000 });
    await holding;
    const poolWait = await errorOf(() => prisma.$queryRaw`SELECT 1`);
    const notStarted = await errorOf(() => prisma.$transaction(async (tx) => tx.$queryRaw`SELECT 1`, { maxWait: 200 }));
    release();
    await holder;
    assert.match(String(poolWait), /timeout exceeded when trying to connect/);
    assert.equal(isDatabaseOutage(poolWait), true);
    assert.match(String(notStarted), /Unable to start a transaction/);
    assert.equal(isDatabaseOutage(notStarted), true);
  });

  test('a transaction that expired while it waited, and a lock wait past lock_timeout', async () => {
    const prisma = clientOf(SERVER, 2);
    const expired = await errorOf(() =>
      prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT pg_sleep(0.4)::text`;
        await tx.$queryRaw`SELECT 1`;
      }, { timeout: 100 }),
    );
    assert.match(String(expired), /expired transaction/);
    assert.equal(isDatabaseOutage(expired), true);

    const holder = new pg.Client({ connectionString: SERVER });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock(4545045)');
      const lockWait = await errorOf(() =>
        prisma.$transaction(async (tx) => {
          await tx.$executeRaw`SET LOCAL lock_timeout = '100ms'`;
          await tx.$queryRaw`SELECT pg_advisory_xact_lock(4545045)::text`;
        }),
      );
      assert.equal(isDatabaseOutage(lockWait), true, String(lockWait));
    } finally {
      await holder.end();
    }
  });

  test('a connection the server ends (admin shutdown, 57P01) in the middle of a query', async () => {
    const prisma = clientOf(SERVER, 1);
    const [row] = await prisma.$queryRaw<Array<{ pid: number }>>`SELECT pg_backend_pid() AS pid`;
    const pid = row!.pid;
    const running = errorOf(() => prisma.$queryRaw`SELECT pg_sleep(5)::text`);
    const admin = new pg.Client({ connectionString: SERVER });
    await admin.connect();
    try {
      // Once the sleep runs on that backend, end it as a shutting-down server would.
      for (let i = 0; i < 50; i++) {
        const { rows } = await admin.query<{ active: boolean }>("SELECT state = 'active' AS active FROM pg_stat_activity WHERE pid = $1", [pid]);
        if (rows[0]?.active) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    } finally {
      await admin.end();
    }
    const ended = await running;
    assert.equal(isDatabaseOutage(ended), true, String(ended));
  });

  test("a query's own fault is not an outage", async () => {
    const prisma = clientOf(SERVER, 1);
    const syntax = await errorOf(() => prisma.$queryRawUnsafe('SELEC 1'));
    const division = await errorOf(() => prisma.$queryRaw`SELECT (1 / 0)::text`);
    assert.equal(isDatabaseOutage(syntax), false, String(syntax));
    assert.equal(isDatabaseOutage(division), false, String(division));
    assert.equal(isDatabaseOutage(new Error('boom')), false);
    assert.equal(isDatabaseOutage(new TypeError('x is not a function')), false);
    assert.equal(asDatabaseUnavailable(new Error('boom')), undefined);
  });

  test('the outage keeps what caused it and says when to retry', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect', errno: -111 });
    const outage = asDatabaseUnavailable(cause);
    assert.ok(outage instanceof DatabaseUnavailableError);
    assert.equal(outage.cause, cause);
    assert.ok(outage.retryAfterSeconds >= 1);
    assert.equal(asDatabaseUnavailable(outage), outage);
  });
});
