/**
 * The embedded database in a process of its own (src/db/process.ts): `npm start` on the default
 * (no DATABASE_URL) forks a database process that holds PGlite and serves it on the socket. Its
 * lifecycle: set up on a fresh DATA_DIR and reopened, the admin CLI through its socket while the
 * server runs and directly when it does not, a crash answered with 500 / 503 (never a hang) and
 * repaired by a restart, gone with the server (its private Redis too) even when the server is SIGKILLed, stopped last on
 * SIGTERM.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectForCli, processIsAlive } from '../../src/db/client.ts';
import { CONNECT_TIMEOUT_MS } from '../../src/db/connect-timeout.ts';
import { apiKey } from '../helpers/factories.ts';
import { startRole, tmpDir, waitUntil, type RoleProcess } from './helpers.ts';
import { writingClient } from '../helpers/db.ts';

const data = tmpDir('capi-ops-dbproc-');
const children: RoleProcess[] = [];
let server: RoleProcess;

const lockPid = (): number | undefined => {
  try {
    return Number.parseInt(readFileSync(path.join(data.dir, 'db.lock'), 'utf8'), 10);
  } catch {
    return undefined;
  }
};

/** The redis-servers under a process (a private Redis runs under a watchdog shell). */
function redisServersUnder(pid: number): number[] {
  const found: number[] = [];
  const walk = (p: number): void => {
    let children: number[];
    try {
      children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return;
    }
    for (const c of children) {
      try {
        if (readFileSync(`/proc/${c}/cmdline`, 'utf8').startsWith('redis-server')) found.push(c);
      } catch {
        // gone meanwhile
      }
      walk(c);
    }
  };
  walk(pid);
  return found;
}

/** Bounds each query the server sends to its database process (a hung one, not a dead one). */
const QUERY_TIMEOUT_MS = 1500;

async function start(): Promise<RoleProcess> {
  const child = await startRole('all', { DATA_DIR: data.dir, DB_STATEMENT_TIMEOUT_MS: String(QUERY_TIMEOUT_MS) });
  children.push(child);
  return child;
}

async function get(pathname: string, key?: string) {
  const started = Date.now();
  const res = await fetch(`${server.url}${pathname}`, {
    headers: key ? { Authorization: `Bearer ${key}` } : {},
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as { success: boolean; error?: { code: string } };
  return { status: res.status, body, ms: Date.now() - started };
}

async function newKey(): Promise<string> {
  const db = await connectForCli({ dataDir: data.dir });
  try {
    assert.equal(db.via, 'socket', 'the CLI goes through the socket while the server runs');
    return (await apiKey(writingClient(db.prisma), { scopes: ['services:read'] })).key;
  } finally {
    await db.close();
  }
}

before(async () => {
  server = await start();
});

after(async () => {
  for (const c of children) {
    if (c.proc.exitCode === null && c.proc.signalCode === null) await c.kill('SIGKILL');
  }
  // A SIGKILLed server's database process leaves by itself; wait so the directory can go.
  const pid = lockPid();
  if (pid) await waitUntil(() => !processIsAlive(pid), 10_000, 'the database process to exit').catch(() => undefined);
  data.remove();
});

describe('the embedded database process', () => {
  test('a fresh DATA_DIR is set up by one database process and served by a second; the server process does not hold PGlite', () => {
    const records = server.logs.records();
    assert.ok(records.some((r) => r.msg === 'embedded database set up; reopening it in a fresh process'), 'set up, then reopened');
    const serving = records.find((r) => r.msg === 'embedded database process serving');
    assert.ok(serving, 'serving');
    const pid = lockPid();
    assert.equal(serving.pid, pid, 'the database process holds the PGlite lock');
    assert.notEqual(pid, server.proc.pid);
    assert.ok(pid && processIsAlive(pid));
  });

  test('requests and the admin CLI reach the database through its socket', async () => {
    const key = await newKey();
    const answer = await get('/api/v1/auth-check', key);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal((await get('/readyz')).status, 200);
  });

  test('the database process crashes: requests answer 503 at once, /readyz 503, then it is restarted and all recovers', async () => {
    const key = await newKey(); // not used yet, so not in the key cache: its request needs the database
    const pid = lockPid()!;
    process.kill(pid, 'SIGKILL');
    await waitUntil(() => !processIsAlive(pid), 5000, 'the database process to die');
    const [request, ready] = await Promise.all([get('/api/v1/auth-check', key), get('/readyz')]);
    assert.equal(request.status, 503, JSON.stringify(request.body));
    assert.equal(request.body.error?.code, 'service_unavailable');
    assert.ok(request.ms < 5000, `answered in ${request.ms} ms`);
    assert.equal(ready.status, 503);
    assert.ok(ready.ms < 5000, `/readyz answered in ${ready.ms} ms`);

    await waitUntil(async () => (await get('/readyz')).status === 200, 30_000, '/readyz to be 200 again');
    const again = await get('/api/v1/auth-check', key);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const restarted = lockPid();
    assert.ok(restarted && restarted !== pid && processIsAlive(restarted));
    assert.ok(server.logs.records().some((r) => r.msg === 'the embedded database process exited; restarting it'));
  });

  test('the database process hangs (SIGSTOP): a request answers 503 within the query or connect timeout, /readyz 503; all recovers when it goes on', async () => {
    const key = await newKey(); // not in the key cache: its request needs the database
    const later = await newKey();
    // A request of its own just before, so the server's pool holds an open connection: a query on
    // it fails at the query timeout. The worker's own queries may hold that connection at the
    // moment, and then the request's new connection fails at the connect timeout instead.
    assert.equal((await get('/api/v1/auth-check', await newKey())).status, 200);
    const pid = lockPid()!;
    process.kill(pid, 'SIGSTOP');
    try {
      const [request, ready] = await Promise.all([get('/api/v1/auth-check', key), get('/readyz')]);
      assert.equal(request.status, 503, JSON.stringify(request.body));
      assert.equal(request.body.error?.code, 'service_unavailable');
      assert.ok(request.ms < Math.max(QUERY_TIMEOUT_MS, CONNECT_TIMEOUT_MS) + 2000, `answered in ${request.ms} ms`);
      assert.equal(ready.status, 503);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitUntil(async () => (await get('/readyz')).status === 200, 30_000, '/readyz to be 200 again');
    const again = await get('/api/v1/auth-check', later);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(lockPid(), pid, 'the same database process: it was slow, not dead');
  });

  test('a second server on the same DATA_DIR refuses to start: the database is in use', async () => {
    await assert.rejects(startRole('all', { DATA_DIR: data.dir }), /in use by process|already serves the database/);
  });

  test('SIGTERM: the server drains first and stops its database process last, exit 0', async () => {
    const pid = lockPid()!;
    assert.equal(await server.kill('SIGTERM'), 0);
    assert.ok(!processIsAlive(pid), 'the database process exited with the server');
    assert.ok(!existsSync(path.join(data.dir, 'db.lock')), 'the lock is released');
    // By each line's own time: the server and its database process write to one stdout
    // asynchronously (pino), so the order in which their lines arrive is not the order of events.
    const records = server.logs.records();
    const when = (msg: string) => Date.parse(String(records.findLast((r) => r.msg === msg)?.time));
    const drained = when('http server drained');
    const closing = when('closing the embedded database');
    const summary = records.map((r) => `${String(r.time)} ${String(r.msg)}`).join('\n');
    assert.ok(drained <= closing, summary);
    assert.ok(closing <= when('stopped'), summary);
    // With no server, the CLI opens the database itself.
    const db = await connectForCli({ dataDir: data.dir });
    try {
      assert.equal(db.via, 'direct');
      assert.ok((await db.prisma.apiKey.count()) >= 2);
    } finally {
      await db.close();
    }
  });

  test('the server is SIGKILLed: its database process and its private Redis exit by themselves, and a new server starts on the same DATA_DIR', async () => {
    server = await start();
    const pid = lockPid()!;
    assert.ok(processIsAlive(pid));
    const redis = redisServersUnder(server.proc.pid!);
    assert.equal(redis.length, 1, 'one private redis-server');
    await server.kill('SIGKILL');
    await waitUntil(() => !processIsAlive(pid), 10_000, 'the orphaned database process to exit');
    await waitUntil(() => !processIsAlive(redis[0]!), 10_000, 'the orphaned redis-server to exit');
    server = await start();
    assert.equal((await get('/readyz')).status, 200);
    assert.ok(!server.logs.records().some((r) => r.msg === 'embedded database set up; reopening it in a fresh process'), 'an existing database is served at once');
  });
});
