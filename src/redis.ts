import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';

export interface RedisEndpoint {
  /** Connection options every client of this process starts from (BullMQ, rate limiter, health). */
  options: RedisOptions;
  description: string;
  stop(): Promise<void>;
}

export class RedisServerMissingError extends Error {
  constructor() {
    super('redis-server was not found on PATH: install the Debian package redis-server, or set REDIS_URL');
  }
}

function commandExists(command: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && existsSync(path.join(dir, command)));
}

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * redis-server has no option to follow its parent, so this stops it at stdin's end of file: the
 * kernel closes that pipe however Node ends, SIGKILL included. A background list's stdin is
 * /dev/null in sh unless redirected, hence fd 3.
 */
const REDIS_WATCHDOG = `
exec 3<&0
redis-server "$@" </dev/null &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
{ cat <&3 >/dev/null; kill -TERM "$pid" 2>/dev/null; } &
exec 3<&-
status=0
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; status=$?; done
rm -rf "$CAPI_REDIS_DIR"
exit $status
`;

/** On a unix socket of its own, so it never collides with another server's port; it never outlives this process. */
export async function startPrivateRedis(): Promise<RedisEndpoint> {
  if (!commandExists('redis-server')) throw new RedisServerMissingError();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'capi-redis-'));
  const socket = path.join(dir, 'redis.sock');
  const child: ChildProcess = spawn(
    'sh',
    ['-c', REDIS_WATCHDOG, 'capi-redis-watchdog',
      '--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--save', '', '--appendonly', 'no',
      '--dir', dir, '--maxmemory-policy', 'noeviction', '--loglevel', 'warning'],
    { stdio: ['pipe', 'ignore', 'ignore'], env: { ...process.env, CAPI_REDIS_DIR: dir } },
  );
  // Only its end of file matters; an EPIPE after the watchdog is gone is not an error of ours.
  child.stdin?.on('error', () => {});
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  await waitFor(() => exited || existsSync(socket), 5000, 'the private redis-server');
  if (exited) throw new Error('the private redis-server exited at start');
  return {
    options: { path: socket },
    description: `private redis-server (${socket})`,
    async stop() {
      if (!exited) {
        child.stdin?.end();
        await waitFor(() => exited, 5000, 'redis-server to stop').catch(() => child.kill('SIGTERM'));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function redisEndpointFromUrl(url: string): RedisEndpoint {
  const parsed = new URL(url);
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0;
  const options: RedisOptions = {
    host: parsed.hostname,
    port: parsed.port ? Number(parsed.port) : 6379,
    db: Number.isInteger(db) ? db : 0,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
  };
  return { options, description: `${parsed.protocol}//${parsed.hostname}:${options.port}/${options.db}`, stop: async () => {} };
}

export async function startRedis(redisUrl: string | undefined): Promise<RedisEndpoint> {
  return redisUrl ? redisEndpointFromUrl(redisUrl) : startPrivateRedis();
}

/**
 * Fails fast (no offline queue, one retry, 1 s command timeout): no command waits for Redis to come
 * back, to run late (a rate-limit count replayed after an outage), and what it served falls back at
 * once (redisHealth). Auto-pipelining: one socket write per tick, not per request (bench/README.md).
 */
export function requestRedis(endpoint: RedisEndpoint): Redis {
  const client = new Redis({
    ...endpoint.options,
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    commandTimeout: 1000,
    retryStrategy: (times) => Math.min(times * 100, 1000),
  });
  defineLimiterCommand(client);
  return client;
}

/**
 * redis/ioredis#1931: an auto-pipeline copies the client's scripts when it opens, so a limiter made
 * later (its constructor defines `rlflxIncr`) could land in a pipeline without it, and ioredis then
 * throws outside any promise. Defined here, before the client's first command, every pipeline has it.
 */
function defineLimiterCommand(client: Redis): void {
  new RateLimiterRedis({ storeClient: client, points: 1, duration: 1 });
}

export async function waitUntilReady(client: Redis, timeoutMs = 5000): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Redis did not become ready in time')), timeoutMs);
    client.once('ready', () => { clearTimeout(timer); resolve(); });
  });
}

