/**
 * Harness for the operations tests: a restartable redis-server on a TCP port, a PostgreSQL
 * database of the test's own, a self-signed certificate, child processes of the three start
 * scripts with their JSON log lines, and a stream that captures log output.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import pg from 'pg';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * A port for an API process and the PUBLIC_BASE_URL that reaches it: every process on one
 * database must share PUBLIC_BASE_URL (src/ops/process-registry.ts), so it is known before the
 * first one starts.
 */
export async function apiAddress(): Promise<{ PORT: string; PUBLIC_BASE_URL: string }> {
  const port = await freePort();
  return { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
}

export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.write('PING\r\n');
    });
    s.once('data', (d) => {
      s.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    s.once('error', () => resolve(false));
  });
}

/** A redis-server on 127.0.0.1:<port> (no persistence) that a test can stop and start again on the same port. */
export interface TcpRedis {
  url: string;
  port: number;
  start(): Promise<void>;
  /** Kills the server (SIGKILL: an outage, not a clean shutdown). */
  stop(): Promise<void>;
  /** Sends the running server a signal (SIGSTOP freezes it with its connections open, SIGCONT resumes it). */
  signal(signal: NodeJS.Signals): void;
  running(): boolean;
}

export async function startTcpRedis(): Promise<TcpRedis> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'capi-ops-redis-'));
  let child: ChildProcess | undefined;
  const start = async () => {
    const proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
        '--maxmemory-policy', 'noeviction', '--loglevel', 'warning'],
      { stdio: 'ignore' },
    );
    child = proc;
    proc.once('exit', () => {
      if (child === proc) child = undefined;
    });
    await waitUntil(() => portAnswers(port), 5000, `redis-server on port ${port}`);
  };
  await start();
  // Whatever the test did with it: no server and no directory outlive the test process.
  process.once('exit', () => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    url: `redis://127.0.0.1:${port}/0`,
    port,
    start,
    running: () => child !== undefined,
    signal: (signal) => {
      child?.kill(signal);
    },
    stop: async () => {
      const proc = child;
      if (!proc) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** The PostgreSQL server the tests may use: DATABASE_URL when set, else the machine's local one. */
export const PG_ADMIN_URL = process.env.DATABASE_URL?.trim() || 'postgresql://postgres@127.0.0.1:5432/postgres';

export async function pgQuery(sql: string, url = PG_ADMIN_URL): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function postgresAvailable(): Promise<boolean> {
  try {
    await pgQuery('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

/**
 * An empty database of the test's own on the PostgreSQL server (named like test/helpers/db.ts's,
 * so its leftover sweep also removes one whose test was killed). The app migrates it on start.
 */
export interface PgDatabase {
  name: string;
  url: string;
  /** Refuses new connections and terminates the open ones: the database is "down" for the app. */
  takeDown(): Promise<void>;
  bringUp(): Promise<void>;
  drop(): Promise<void>;
}

export async function createPgDatabase(): Promise<PgDatabase> {
  const name = `capi_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await pgQuery(`CREATE DATABASE "${name}"`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    takeDown: async () => {
      await pgQuery(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
      await pgQuery(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}' AND pid <> pg_backend_pid()`);
    },
    bringUp: async () => {
      await pgQuery(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
    },
    drop: async () => {
      await pgQuery(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`).catch(() => undefined);
      await pgQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

/** A self-signed certificate for localhost / 127.0.0.1, valid one day, made with openssl. */
export async function makeCertificate(dir: string): Promise<{ cert: string; key: string }> {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  await promisify(execFile)('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert,
  ]);
  return { cert, key };
}

/** Collects what a logger writes, line by line (pino writes one JSON object per line). */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  private partial = '';
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: () => void): void {
    const text = this.partial + chunk.toString();
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    this.lines.push(...parts.filter((l) => l !== ''));
    done();
  }
  text(): string {
    return this.lines.join('\n') + this.partial;
  }
  records(): Array<Record<string, unknown>> {
    return this.lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }
}

export type Role = 'all' | 'api' | 'worker';

/** One start script running as a child process (`node --import tsx src/main/<role>.ts`, what `tsx` runs). */
export interface RoleProcess {
  role: Role;
  proc: ChildProcess;
  /** JSON log lines so far (stdout). */
  logs: LogCapture;
  stderr: () => string;
  /** The API's URL (roles all and api). */
  url?: string;
  exited: Promise<number | null>;
  /** Sends a signal and resolves with the exit code. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

const FILES: Record<Role, string> = { all: 'src/main/all.ts', api: 'src/main/api.ts', worker: 'src/main/worker.ts' };
const READY: Record<Role, string> = { all: 'Client API v1 listening', api: 'Client API v1 listening', worker: 'job worker running' };

/** A start takes 50-60 s on a machine that eight test runs share (load 25): 60 s failed starts there. */
const START_TIMEOUT_MS = 150_000;

export async function startRole(role: Role, env: NodeJS.ProcessEnv, timeoutMs = START_TIMEOUT_MS): Promise<RoleProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', FILES[role]], {
    cwd: ROOT,
    // No pre-stop delay unless a test asks for one: most tests stop their children with SIGTERM.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', PORT: '0', SHUTDOWN_DELAY_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs = new LogCapture();
  proc.stdout!.pipe(logs);
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((c) => {
    exitCode = c;
  });
  try {
    await waitUntil(
      () => {
        if (exitCode !== undefined) throw new Error(`${role} exited (${exitCode}) before it was ready:\n${err}\n${logs.text()}`);
        return logs.records().some((r) => r.msg === READY[role]);
      },
      timeoutMs,
      `${role} to start`,
    );
  } catch (e) {
    proc.kill('SIGKILL');
    throw e;
  }
  const ready = logs.records().find((r) => r.msg === READY[role]);
  return {
    role,
    proc,
    logs,
    stderr: () => err,
    ...(typeof ready?.url === 'string' ? { url: ready.url } : {}),
    exited,
    kill: async (signal = 'SIGTERM') => {
      if (exitCode === undefined) proc.kill(signal);
      return exited;
    },
  };
}

export function tmpDir(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * An SMTP server that can hold a message: for an address in `hold`, the first DATA is read in full
 * and then never answered (the client waits, as on a stuck server), later ones are accepted.
 * `delayMs` answers every other message that much later (a slow server).
 */
export interface HoldingSmtp {
  url: string;
  /** DATA transfers fully received, per recipient (answered or not). */
  received: Map<string, number>;
  /** Messages accepted (250), per recipient. */
  accepted: Map<string, number>;
  stop(): Promise<void>;
}

export async function startHoldingSmtp(options: { hold?: string[]; delayMs?: number } = {}): Promise<HoldingSmtp> {
  const hold = options.hold ?? [];
  const { SMTPServer } = await import('smtp-server');
  const held = new Set(hold.map((a) => a.toLowerCase()));
  const received = new Map<string, number>();
  const accepted = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const rcpts = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
      stream.on('data', () => undefined);
      stream.on('end', () => {
        for (const r of rcpts) bump(received, r);
        const holdThis = rcpts.some((r) => held.has(r));
        for (const r of rcpts) held.delete(r);
        if (holdThis) return; // never answered
        setTimeout(() => {
          for (const r of rcpts) bump(accepted, r);
          callback();
        }, options.delayMs ?? 0);
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as net.AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    accepted,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Held connections would keep close() waiting.
        setTimeout(resolve, 500).unref();
      }),
  };
}
