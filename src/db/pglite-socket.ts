/**
 * PGlite is ONE backend session, and the stock `PGLiteSocketServer` (pglite-socket 0.2.17) lets
 * other work run in the middle of a client's Parse/Bind/Execute/Sync or BEGIN…COMMIT. So our queue
 * gives a client PGlite's *transaction* mutex from its first message until it is idle again: every
 * statement or transaction runs whole, and everything else waits meanwhile (keep CLI transactions short).
 */
import net from 'node:net';
import { existsSync, unlinkSync } from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler } from '@electric-sql/pglite-socket';

const PROTOCOL_3 = 196608;
const SYNC = Uint8Array.from([0x53, 0, 0, 0, 4]); // 'S', length 4

/** A simple-protocol Query message. */
export function simpleQuery(sql: string): Uint8Array {
  const body = Buffer.from(sql + '\0', 'utf8');
  const msg = Buffer.alloc(5 + body.length);
  msg.write('Q', 0, 'ascii');
  msg.writeInt32BE(4 + body.length, 1);
  body.copy(msg, 5);
  return msg;
}

/** Startup, Sync, simple Query and Terminate end a unit of work (if no transaction is open). */
function endsUnit(message: Uint8Array): boolean {
  if (message.length >= 8) {
    const view = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
    if (view.readInt32BE(4) === PROTOCOL_3 && view.readInt32BE(0) === message.length) return true;
  }
  const type = message[0];
  return type === 0x53 /* S */ || type === 0x51 /* Q */ || type === 0x58 /* X */;
}

/** Drop-in for pglite-socket's internal QueryQueueManager (same method names). */
export class SessionLockQueue {
  #owner: number | null = null;
  #release: (() => void) | null = null;
  #busy = false;
  readonly #dead = new Set<number>();
  #waiting = 0;

  /** Each connection's last message, so that its next one starts only after it. */
  readonly #tails = new Map<number, Promise<unknown>>();

  constructor(private readonly db: PGlite) {}

  /**
   * Strictly after the connection's previous message: pglite-socket hands over each chunk of socket
   * data apart, and without this order a unit's later messages ran ahead of its Bind
   * (`portal "" does not exist` with two clients busy).
   */
  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    const previous = this.#tails.get(handlerId);
    const run = previous ? previous.then(() => this.#run(handlerId, message, onData), () => this.#run(handlerId, message, onData)) : this.#run(handlerId, message, onData);
    this.#tails.set(handlerId, run);
    const forget = () => {
      if (this.#tails.get(handlerId) === run) this.#tails.delete(handlerId);
    };
    run.then(forget, forget);
    return run;
  }

  async #run(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    if (this.#dead.has(handlerId)) throw new Error('Handler disconnected');
    if (this.#owner !== handlerId) await this.#acquire(handlerId);
    if (this.#dead.has(handlerId)) {
      await this.#cleanupAndRelease(handlerId);
      throw new Error('Handler disconnected');
    }
    let bytes = 0;
    this.#busy = true;
    try {
      await this.db.runExclusive(() =>
        this.db.execProtocolRawStream(message, {
          onRawData: (data) => {
            bytes += data.length;
            onData(data);
          },
        }),
      );
    } catch (e) {
      this.#busy = false;
      await this.#cleanupAndRelease(handlerId);
      throw e;
    }
    this.#busy = false;
    if (this.#dead.has(handlerId)) {
      await this.#cleanupAndRelease(handlerId);
    } else if (endsUnit(message) && !this.db.isInTransaction()) {
      this.#releaseLock(handlerId);
    }
    return bytes;
  }

  getQueueLength(): number {
    return this.#waiting;
  }

  /** Called when a connection goes away: anything it still waits for is refused. */
  clearQueueForHandler(handlerId: number): void {
    this.#dead.add(handlerId);
  }

  /** Called when a connection goes away: roll back what it left open and let others in. */
  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    this.#dead.add(handlerId);
    if (this.#owner === handlerId && !this.#busy) await this.#cleanupAndRelease(handlerId);
    // If it waits for the lock or runs a message right now, enqueue() cleans up afterwards.
    if (this.#owner !== handlerId) setTimeout(() => this.#dead.delete(handlerId), 60_000).unref();
  }

  async #acquire(handlerId: number): Promise<void> {
    this.#waiting++;
    try {
      await new Promise<void>((acquired, failed) => {
        this.db
          ._runExclusiveTransaction(
            () =>
              new Promise<void>((release) => {
                this.#owner = handlerId;
                this.#release = release;
                acquired();
              }),
          )
          .catch(failed);
      });
    } finally {
      this.#waiting--;
    }
  }

  #releaseLock(handlerId: number): void {
    if (this.#owner !== handlerId) return;
    const release = this.#release;
    this.#owner = null;
    this.#release = null;
    release?.();
  }

  async #cleanupAndRelease(handlerId: number): Promise<void> {
    if (this.#owner !== handlerId) return;
    try {
      if (!this.db.closed) {
        await this.db.runExclusive(async () => {
          // End any half-sent extended-protocol sequence, then drop an open transaction. The answers
          // go nowhere: PGlite writes a raw call's answer to the callback of the last streamed one,
          // which may be another connection's, and that connection would read them as its own.
          const discard = { onRawData: () => {} };
          await this.db.execProtocolRawStream(SYNC, discard);
          if (this.db.isInTransaction()) await this.db.execProtocolRawStream(simpleQuery('ROLLBACK'), discard);
        });
      }
    } catch {
      // the session is being torn down anyway
    } finally {
      this.#releaseLock(handlerId);
    }
  }
}

export interface PGliteSocketServerHandle {
  /** Directory to use as `host` in a PostgreSQL connection string. */
  socketDir: string;
  /** The socket file itself (`<socketDir>/.s.PGSQL.5432`). */
  socketPath: string;
  stats(): { connections: number; waiting: number };
  stop(): Promise<void>;
}

export const SOCKET_FILE = '.s.PGSQL.5432';

/** The file name libpq and node-postgres derive from `host=<dir>` and port 5432; a crashed server's leftover is removed. */
export async function servePGliteSocket(
  db: PGlite,
  socketDir: string,
  { maxConnections = 16 }: { maxConnections?: number } = {},
): Promise<PGliteSocketServerHandle> {
  const socketPath = `${socketDir}/${SOCKET_FILE}`;
  if (existsSync(socketPath)) {
    if (await socketAnswers(socketPath)) {
      throw new Error(`another process already serves the database on ${socketPath}`);
    }
    unlinkSync(socketPath);
  }
  const queue = new SessionLockQueue(db);
  const handlers = new Set<PGLiteSocketHandler>();
  const server = net.createServer((socket) => {
    if (handlers.size >= maxConnections) {
      socket.end();
      return;
    }
    const handler = new PGLiteSocketHandler({
      // Same duck-typed interface as pglite-socket's internal queue (see SessionLockQueue).
      queryQueue: queue as unknown as ConstructorParameters<typeof PGLiteSocketHandler>[0]['queryQueue'],
      closeOnDetach: true,
    });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener('close', forget);
    handler.addEventListener('error', forget);
    handler.attach(socket).catch(() => {
      forget();
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  let stopped: Promise<void> | undefined;
  return {
    socketDir,
    socketPath,
    stats: () => ({ connections: handlers.size, waiting: queue.getQueueLength() }),
    stop: () =>
      (stopped ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.all([...handlers].map((h) => h.detach(true)));
        handlers.clear();
        await closed;
        try {
          unlinkSync(socketPath);
        } catch {
          // already gone
        }
      })()),
  };
}

/** True if something accepts connections on the unix socket `socketPath`. */
export function socketAnswers(socketPath: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
