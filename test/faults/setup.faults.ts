/**
 * Issue 45 item 1, as an operator meets it: processes apart on a private PostgreSQL cluster and
 * redis-server. A setup that cannot work exits 1 before it is ready, its one stderr line naming
 * the setting; a process that disagrees with a live one on what they must share is refused,
 * naming the setting and the value in use (never a password); stopping every process lets the
 * setting change. `workers_alive` on the API's /metrics follows a worker SIGKILLed and restarted.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { LIVE_WITHIN_MS } from '../../src/ops/process-registry.ts';
import { apiAddress, startRole, startTcpRedis, tmpDir, waitUntil, type RoleProcess, type TcpRedis } from '../ops/helpers.ts';
import { faultsAvailable, queryOnce, startPgCluster, type PgCluster } from './harness.ts';

const skip = faultsAvailable();
/** Starting is slow on a machine shared with other runs. */
const START_MS = 180_000;
const PASSWORD = 'hunter2-redis-password';

let cluster: PgCluster;
let redis: TcpRedis;
let env: NodeJS.ProcessEnv;
let apiPort: string;
const data = tmpDir('capi-faults-setup-');
const children: RoleProcess[] = [];

before(async () => {
  if (skip) return;
  [cluster, redis] = await Promise.all([startPgCluster(), startTcpRedis()]);
  const address = await apiAddress();
  apiPort = address.PORT;
  env = {
    DATABASE_URL: cluster.url,
    REDIS_URL: redis.url,
    SMTP_URL: pathToFileURL(path.join(data.dir, 'outbox')).href,
    DATA_DIR: data.dir,
    CREDENTIALS_KEY: randomBytes(32).toString('hex'),
    PUBLIC_BASE_URL: address.PUBLIC_BASE_URL,
  };
});

after(async () => {
  for (const c of children) await c.kill('SIGKILL').catch(() => undefined);
  await redis?.stop();
  cluster?.remove();
  data.remove();
});

async function start(role: RoleProcess['role'], over: NodeJS.ProcessEnv = {}): Promise<RoleProcess> {
  const child = await startRole(role, { ...env, ...over }, START_MS);
  children.push(child);
  return child;
}

/** A start that must fail: exit 1 before it is ready; the message matches `pattern` and holds no password. */
async function refused(role: RoleProcess['role'], over: NodeJS.ProcessEnv, pattern: RegExp): Promise<string> {
  let message = '';
  await assert.rejects(startRole(role, { ...env, ...over }, START_MS), (e: Error) => {
    message = e.message;
    assert.match(e.message, new RegExp(`^${role} exited \\(1\\) before it was ready`), e.message);
    assert.match(e.message, pattern);
    assert.ok(!e.message.includes(PASSWORD), 'no password in the message');
    return true;
  });
  return message;
}

/** The stderr line of a refused start (startRole puts it right after its first line). */
const stderrLine = (message: string): string => message.split('\n')[1] ?? '';

async function workersAlive(url: string): Promise<{ api: number; worker: number } | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const of = (role: string) => text.match(new RegExp(`^workers_alive\\{role="${role}"\\} (\\d+)$`, 'm'))?.[1];
  const api = of('api');
  const worker = of('worker');
  return api === undefined || worker === undefined ? undefined : { api: Number(api), worker: Number(worker) };
}

describe('a setup that cannot work refuses to start, naming the setting', { skip }, () => {
  test('processes apart without DATABASE_URL, a worker without SMTP_URL, start:api on 0.0.0.0 without PUBLIC_BASE_URL', async () => {
    for (const role of ['api', 'worker'] as const) {
      const message = await refused(role, { DATABASE_URL: '' }, /npm run start:\w+ runs apart on the shared REDIS_URL, so it needs DATABASE_URL/);
      assert.match(stderrLine(message), /^client-api-v1: npm run start:\w+ runs apart/);
    }
    await refused('worker', { SMTP_URL: '' }, /npm run start:worker sends the report e-mails, so it needs SMTP_URL/);
    await refused('api', { HOST: '0.0.0.0', PUBLIC_BASE_URL: '' }, /HOST=0\.0\.0\.0 listens on every address, .* need PUBLIC_BASE_URL/);
    // Refused before any process was recorded.
    const rows = await queryOnce(cluster.url, "SELECT to_regclass('process_registry') IS NULL AS missing").catch(() => [{ missing: true }]);
    if (!rows[0]!.missing) assert.deepEqual(await queryOnce(cluster.url, 'SELECT id FROM process_registry'), []);
  });
});

describe('processes of one database that disagree on what they share', { skip }, () => {
  let api: RoleProcess;
  let worker: RoleProcess;

  test('a later process that disagrees with a live one is refused, naming the setting and the value in use', async () => {
    api = await start('api', { PORT: apiPort });
    worker = await start('worker');
    const inUse = redis.url;

    // Another Redis database (with a password): the queues and the rate limits would be split.
    const otherRedis = redis.url.replace('redis://', `redis://:${PASSWORD}@`).replace(/\/0$/, '/3');
    const message = await refused('api', { REDIS_URL: otherRedis }, /REDIS_URL is redis:\/\/127\.0\.0\.1:\d+\/3 here, but the live (api|worker) process \d+ on \S+ \(heartbeat \d+ s ago\) uses redis:\/\/127\.0\.0\.1:\d+\/0/);
    assert.match(stderrLine(message), /^client-api-v1: REDIS_URL is /);
    assert.ok(message.includes(inUse), message);

    await refused('worker', { PUBLIC_BASE_URL: 'https://elsewhere.example.com' }, new RegExp(`PUBLIC_BASE_URL is https://elsewhere\\.example\\.com here, but the live (api|worker) process .* uses ${env.PUBLIC_BASE_URL!.replace(/\./g, '\\.')}`));
    await refused('worker', { REPORT_ATTACHMENT_MAX_BYTES: '1024' }, /REPORT_ATTACHMENT_MAX_BYTES is 1024 here, but the live worker process .* uses 10485760/);
    await refused('api', { REPORTS_CONCURRENT_PER_BROKER: '64' }, /REPORTS_CONCURRENT_PER_BROKER is 64 here, but the live api process .* uses 2/);
    await refused('worker', { SMTP_URL: 'smtp://mailer:secret@127.0.0.1:2525' }, /SMTP_URL is smtp:\/\/127\.0\.0\.1:2525 here, but the live worker process .* uses file:\/\/\//);
    // An API sends no mail: its SMTP_URL is not compared.
    const second = await start('api', { SMTP_URL: '' });

    // Two live processes recorded, plus the second API; nothing holds a password.
    const rows = await queryOnce<{ role: string; settings: Record<string, string> }>(cluster.url, 'SELECT role, settings FROM process_registry ORDER BY started_at');
    assert.deepEqual(rows.map((r) => r.role), ['api', 'worker', 'api']);
    assert.equal(rows[0]!.settings.REDIS_URL, inUse);
    assert.ok(!JSON.stringify(rows).includes(PASSWORD) && !JSON.stringify(rows).includes('secret'));
    assert.equal(await second.kill('SIGTERM'), 0);
  });

  test('workers_alive on the API: 0 within 60 s of the only worker SIGKILLed, 1 again after a worker restarts', async () => {
    await waitUntil(async () => (await workersAlive(api.url!))?.worker === 1, 30_000, 'workers_alive{role="worker"} 1');
    assert.equal((await workersAlive(api.url!))?.api, 1);
    await worker.kill('SIGKILL');
    await waitUntil(async () => (await workersAlive(api.url!))?.worker === 0, 60_000, 'workers_alive{role="worker"} 0 after the kill');
    assert.equal((await workersAlive(api.url!))?.api, 1);
    worker = await start('worker');
    await waitUntil(async () => (await workersAlive(api.url!))?.worker === 1, 30_000, 'workers_alive{role="worker"} 1 after the restart');
  });

  test('stopping every process lets a shared setting change (documented in docs/running-apart.md)', async () => {
    assert.deepEqual(await Promise.all([api.kill('SIGTERM'), worker.kill('SIGTERM')]), [0, 0]);
    // A graceful stop removes the process's row; the SIGKILLed worker's is stale.
    const live = await queryOnce(cluster.url, `SELECT id FROM process_registry WHERE heartbeat_at > now() - interval '${LIVE_WITHIN_MS / 1000} seconds'`);
    assert.deepEqual(live, []);
    const moved = await start('api', { PORT: apiPort, REDIS_URL: redis.url.replace(/\/0$/, '/3') });
    assert.ok(moved.logs.records().some((r) => typeof r.redis === 'string' && r.redis.endsWith('/3')));
    assert.equal(await moved.kill('SIGTERM'), 0);
  });
});
