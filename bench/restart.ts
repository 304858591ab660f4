/**
 * `npm run bench:restart`: the downtime of an upgrade's restarts on a built tree (docs/upgrading.md).
 * On a PostgreSQL database of its own (BENCH_PG_URL, else DATABASE_URL, else 127.0.0.1:5432) and
 * a private redis-server, with clients calling GET /api/v1/auth-check without pause:
 * 1. two `npm run start:api` behind a small proxy that sends requests only to the processes whose
 *    /readyz answered 200 at its last check (every 200 ms, as a load balancer's health check),
 *    restarted one after the other (SIGTERM, wait for exit, start again, wait for ready);
 * 2. one `npm run start:api` called directly and restarted in place.
 * It prints the requests that got no answer and the longest time without one. Figures in
 * bench/README.md ("Upgrades"); nothing is asserted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { runAdminSql } from '../src/db/client.ts';
import { applyMigrations } from '../src/db/migrate.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const ADMIN_URL = process.env.BENCH_PG_URL?.trim() || process.env.DATABASE_URL?.trim() || 'postgresql://postgres@127.0.0.1:5432/postgres';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const admin = (sql: string) => runAdminSql(ADMIN_URL, sql);

const ready = (port: number) => fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(1000) }).then((r) => r.status === 200, () => false);

interface Api {
  port: number;
  child: ChildProcess;
  exited: Promise<void>;
}

async function startApi(port: number, env: NodeJS.ProcessEnv): Promise<{ api: Api; readyMs: number }> {
  const started = performance.now();
  const child = spawn('npm', ['run', '--silent', 'start:api'], { cwd: ROOT, env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'], detached: true });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  while (!(await ready(port))) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('npm run start:api exited before it was ready');
    await sleep(20);
  }
  return { api: { port, child, exited }, readyMs: performance.now() - started };
}

async function stopApi(api: Api): Promise<void> {
  try {
    process.kill(-api.child.pid!, 'SIGTERM');
  } catch {
    /* gone */
  }
  await api.exited;
  // npm may end before its child: wait until nothing listens on the port.
  while (await fetch(`http://127.0.0.1:${api.port}/healthz`).then(() => true, () => false)) await sleep(20);
}

/** Clients calling GET /api/v1/auth-check through `base` without pause; an answer is any HTTP status but 502. */
function startLoad(base: () => string, clients = 4) {
  const failures: number[] = [];
  let answered = 0;
  let lastAnswer = performance.now();
  let longestGap = 0;
  let running = true;
  const loops = Array.from({ length: clients }, async () => {
    while (running) {
      const ok = await fetch(`${base()}/api/v1/auth-check`, { signal: AbortSignal.timeout(5000) }).then(
        async (r) => (await r.arrayBuffer(), r.status !== 502),
        () => false,
      );
      const now = performance.now();
      if (ok) {
        answered++;
        longestGap = Math.max(longestGap, now - lastAnswer);
        lastAnswer = now;
      } else {
        failures.push(now);
        await sleep(20);
      }
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return { answered, failed: failures.length, longestGapMs: longestGap };
    },
  };
}

/** A load balancer reduced to what matters here: round robin over the backends whose /readyz said 200 at the last check. */
async function startProxy(backends: () => number[]): Promise<{ url: string; close(): Promise<void> }> {
  let healthy: number[] = [];
  let next = 0;
  let checking = true;
  const checks = (async () => {
    while (checking) {
      const ports = backends();
      const states = await Promise.all(ports.map(ready));
      healthy = ports.filter((_, i) => states[i]);
      await sleep(200);
    }
  })();
  const server = http.createServer((req, res) => {
    const port = healthy[next++ % Math.max(healthy.length, 1)];
    if (port === undefined) {
      res.writeHead(502).end();
      return;
    }
    const upstream = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      checking = false;
      await checks;
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

async function main(): Promise<void> {
  const name = `capi_bench_restart_${process.pid}`;
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const redisPort = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-bench-restart-'));
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dataDir], { stdio: 'ignore' });
  await admin(`CREATE DATABASE "${name}"`);
  const apis: Api[] = [];
  try {
    // As `npm run db:migrate` before the rollout: no process migrates on the clock measured.
    await applyMigrations({ kind: 'postgres', connectionString: url.toString() });
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: url.toString(),
      REDIS_URL: `redis://127.0.0.1:${redisPort}/0`,
      SMTP_URL: 'smtp://127.0.0.1:1',
      HOST: '127.0.0.1',
      CREDENTIALS_KEY: randomBytes(32).toString('hex'),
      PUBLIC_BASE_URL: 'http://127.0.0.1:1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    };
    const ports = [await freePort(), await freePort()];
    for (const port of ports) apis.push((await startApi(port, env)).api);
    const proxy = await startProxy(() => ports);
    await sleep(500);

    // 1. Rolling restart behind the proxy.
    let load = startLoad(() => proxy.url);
    await sleep(1000);
    const rollingStart = performance.now();
    const readies: number[] = [];
    for (let i = 0; i < apis.length; i++) {
      await stopApi(apis[i]!);
      const { api, readyMs } = await startApi(apis[i]!.port, env);
      apis[i] = api;
      readies.push(readyMs);
      await sleep(500); // the proxy's next check sees it
    }
    const rolling = await load.stop();
    console.log(
      `rolling restart of 2 APIs behind the proxy (${((performance.now() - rollingStart) / 1000).toFixed(1)} s, each ready ${readies.map((ms) => (ms / 1000).toFixed(1)).join(' and ')} s after its start): ` +
        `${rolling.answered} answered, ${rolling.failed} unanswered, longest time without an answer ${rolling.longestGapMs.toFixed(0)} ms`,
    );
    await proxy.close();

    // 2. One process restarted in place, called directly.
    await stopApi(apis.pop()!);
    const single = apis[0]!;
    load = startLoad(() => `http://127.0.0.1:${single.port}`);
    await sleep(1000);
    await stopApi(single);
    const { api, readyMs } = await startApi(single.port, env);
    apis[0] = api;
    await sleep(500);
    const inPlace = await load.stop();
    console.log(
      `one API restarted in place (ready ${(readyMs / 1000).toFixed(1)} s after its start, after a ${env.SHUTDOWN_DELAY_MS ?? 5000} ms pre-stop delay): ` +
        `${inPlace.answered} answered, ${inPlace.failed} unanswered, longest time without an answer ${(inPlace.longestGapMs / 1000).toFixed(1)} s (load ${os.loadavg()[0]!.toFixed(1)})`,
    );
  } finally {
    for (const api of apis) await stopApi(api).catch(() => undefined);
    redis.kill('SIGKILL');
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch((e: unknown) => console.error('bench: could not drop', name, e));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
