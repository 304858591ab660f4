/**
 * The fault suite's world, on this machine's binaries: a private PostgreSQL cluster (initdb and
 * pg_ctl as the `postgres` user, on a free port) that can be stopped and started, a private
 * redis-server that can be restarted empty, an SMTP server that can answer the end of DATA late,
 * and the API and the worker as separate processes (test/ops/helpers.ts `startRole`).
 */
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';
import { apiAddress, freePort, startRole, startTcpRedis, tmpDir, type RoleProcess, type TcpRedis } from '../ops/helpers.ts';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/client.ts';

const PG_BIN = (() => {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  return versions.map((v) => path.join(root, v, 'bin')).find((dir) => existsSync(path.join(dir, 'pg_ctl')));
})();

export const faultsAvailable = (): string | false => {
  if (!PG_BIN) return 'no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql';
  if (spawnSync('id', ['postgres']).status !== 0) return 'no postgres user to run initdb and pg_ctl as';
  if (spawnSync('redis-server', ['--version']).status !== 0) return 'no redis-server on PATH';
  return false;
};

/** Runs a PostgreSQL binary as the postgres user (initdb and pg_ctl refuse root). */
function asPostgres(command: string, args: string[]): void {
  const bin = path.join(PG_BIN!, command);
  if (process.getuid?.() === 0) execFileSync('runuser', ['-u', 'postgres', '--', bin, ...args], { stdio: 'pipe' });
  else execFileSync(bin, args, { stdio: 'pipe' });
}

export interface PgCluster {
  /** `postgresql://postgres@127.0.0.1:<port>/capi` */
  url: string;
  stop(): void;
  start(): void;
  remove(): void;
}

export async function startPgCluster(): Promise<PgCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'capi-faults-pg-'));
  const data = path.join(dir, 'data');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const log = path.join(dir, 'server.log');
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  const start = () => asPostgres('pg_ctl', ['-D', data, '-o', options, '-l', log, '-w', '-t', '30', 'start']);
  const stop = () => asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
  start();
  asPostgres('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', 'capi']);
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    try {
      asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '10', 'stop']);
    } catch {
      // already stopped
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // Whatever happens to the test, the cluster does not outlive it.
  process.once('exit', remove);
  return { url: `postgresql://postgres@127.0.0.1:${port}/capi`, stop, start, remove };
}

export interface ReceivedCopy {
  to: string;
  messageId: string;
  /** Hex SHA-256 of the message's first attachment, if it has one. */
  attachmentSha256: string | undefined;
  /** The server answered 250 to the end of DATA while the client was still connected. */
  accepted: boolean;
}

export interface FaultySmtp {
  url: string;
  copies: ReceivedCopy[];
  /** How long the server waits before answering the end of DATA. */
  setDelay(ms: number): void;
  /** Accepted copies per recipient. */
  acceptedTo(address: string): ReceivedCopy[];
  /** Copies whose whole message arrived (accepted or not) per recipient. */
  receivedTo(address: string): ReceivedCopy[];
  stop(): Promise<void>;
}

/** An SMTP server that records every message per recipient and its Message-ID, and can answer late. */
export async function startFaultySmtp(): Promise<FaultySmtp> {
  let delayMs = 0;
  const copies: ReceivedCopy[] = [];
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: 50 * 1024 * 1024,
    socketTimeout: 15 * 60_000,
    onData(stream, session, callback) {
      const to = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
      simpleParser(stream).then(
        (parsed) => {
          const attachment = parsed.attachments[0]?.content;
          const attachmentSha256 = attachment ? createHash('sha256').update(attachment).digest('hex') : undefined;
          const received = to.map((address) => ({ to: address, messageId: parsed.messageId ?? '', attachmentSha256, accepted: false }));
          copies.push(...received);
          setTimeout(() => {
            // Only an answer the client can still read is an acceptance: a closed connection has left the server's set.
            const connections = (server as unknown as { connections: Set<{ session: unknown; _socket?: { destroyed?: boolean } }> }).connections;
            const open = [...connections].some((c) => c.session === session && c._socket?.destroyed !== true);
            if (open) for (const r of received) r.accepted = true;
            callback();
          }, delayMs);
        },
        (err: Error) => callback(err),
      );
    },
  });
  // A client killed mid-session (a worker SIGKILLed) resets its connection: not this test's failure.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    copies,
    setDelay: (ms) => {
      delayMs = ms;
    },
    acceptedTo: (address) => copies.filter((c) => c.to === address.toLowerCase() && c.accepted),
    receivedTo: (address) => copies.filter((c) => c.to === address.toLowerCase()),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One query on a fresh connection to `url`: a fault's cluster goes away and comes back between queries. */
export async function queryOnce<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** `use` with the app's own database handle on `databaseUrl`, closed after. */
export async function withDatabaseAt<T>(databaseUrl: string, dataDir: string, use: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase({ databaseUrl, dataDir });
  try {
    return await use(db);
  } finally {
    await db.close();
  }
}

/** A fault test's own servers (a private cluster, redis-server and an SMTP server that can fail) and data directory. */
export interface FaultServers {
  cluster: PgCluster;
  redis: TcpRedis;
  smtp: FaultySmtp;
  dataDir: string;
  /** The settings that point a process at them. */
  env: NodeJS.ProcessEnv;
  /** Kills `children` first (SIGKILL), then stops the servers and removes the data. */
  stop(children?: RoleProcess[]): Promise<void>;
}

export async function startFaultServers(prefix: string): Promise<FaultServers> {
  const data = tmpDir(prefix);
  const [cluster, redis, smtp] = await Promise.all([startPgCluster(), startTcpRedis(), startFaultySmtp()]);
  return {
    cluster, redis, smtp, dataDir: data.dir,
    env: { DATABASE_URL: cluster.url, REDIS_URL: redis.url, SMTP_URL: smtp.url, DATA_DIR: data.dir },
    stop: async (children = []) => {
      for (const c of children) await c.kill('SIGKILL').catch(() => undefined);
      await smtp.stop();
      await redis.stop();
      cluster.remove();
      data.remove();
    },
  };
}

/** An API and a worker apart on a private cluster and redis-server, as running-apart.md sets them up. */
export interface SplitDeployment {
  cluster: PgCluster;
  redis: TcpRedis;
  dataDir: string;
  /** The settings every process of the deployment runs with. */
  env: NodeJS.ProcessEnv;
  api: RoleProcess;
  worker: RoleProcess;
  /** Another process of `role` on the same settings, killed with the rest. */
  start(role: 'api' | 'worker'): Promise<RoleProcess>;
  /** Kills every process, then removes the servers and the data. */
  stop(): Promise<void>;
}

export async function startSplitDeployment(prefix: string, settings: NodeJS.ProcessEnv = {}): Promise<SplitDeployment> {
  const [cluster, redis] = await Promise.all([startPgCluster(), startTcpRedis()]);
  const data = tmpDir(prefix);
  // Every process of one database shares PUBLIC_BASE_URL (issue 45), so the API's address is chosen first;
  // a worker apart refuses to start without SMTP_URL, so mail goes to a directory unless a test brings a server.
  const address = await apiAddress();
  const outbox = pathToFileURL(path.join(data.dir, 'outbox')).href;
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: cluster.url, REDIS_URL: redis.url, DATA_DIR: data.dir, SMTP_URL: outbox, PUBLIC_BASE_URL: address.PUBLIC_BASE_URL, ...settings,
  };
  const children: RoleProcess[] = [];
  const start = async (role: 'api' | 'worker', extra: NodeJS.ProcessEnv = {}) => {
    const child = await startRole(role, { ...env, ...extra });
    children.push(child);
    return child;
  };
  const stop = async () => {
    for (const c of children) await c.kill('SIGKILL').catch(() => undefined);
    await redis.stop();
    cluster.remove();
    data.remove();
  };
  try {
    const api = await start('api', { PORT: address.PORT });
    const worker = await start('worker');
    return { cluster, redis, dataDir: data.dir, env, api, worker, start: (role) => start(role), stop };
  } catch (e) {
    await stop(); // a process that did not start leaves nothing running to hold the test open
    throw e;
  }
}

/** `count` clients, each calling `call(client, n)` one after another until `stop()`; the answers so far. */
export function concurrentClients<A>(count: number, call: (client: number, n: number) => Promise<A>): { answers: A[]; stop(): Promise<void> } {
  const answers: A[] = [];
  let running = true;
  const loops = Array.from({ length: count }, async (_, i) => {
    for (let n = 0; running; n++) answers.push(await call(i, n));
  });
  return {
    answers,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** The nearest-rank percentile `p` of `values` (0 for none). */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * Two APIs and a worker apart on `env` (each pushed to `children` once started, for the test to
 * kill); the APIs. One PUBLIC_BASE_URL for every process of the database (docs/running-apart.md):
 * the first API's, known before it starts.
 */
export async function startTwoApisAndWorker(env: NodeJS.ProcessEnv, children: RoleProcess[]): Promise<RoleProcess[]> {
  const address = await apiAddress();
  env.PUBLIC_BASE_URL = address.PUBLIC_BASE_URL;
  const first = await startRole('api', { ...env, PORT: address.PORT }, 180_000);
  children.push(first);
  const second = await startRole('api', { ...env, PORT: String(await freePort()) }, 180_000);
  children.push(second);
  children.push(await startRole('worker', env, 180_000));
  return [first, second];
}
