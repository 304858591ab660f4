import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo, type Socket } from 'node:net';
import type { RequestListener } from 'node:http';
import type { Config } from '../config.ts';
import { answerClientErrorsInEnvelope, requireHost } from '../http/client-errors.ts';

/**
 * Bounds that stop a client from holding a socket forever. Node checks the header and request
 * timeouts every `checkIntervalMs`, so the cut comes at most that much after the bound.
 */
export interface ServerTimeouts {
  /** Time to receive the complete request headers (slow-header "slowloris" clients). */
  headersTimeoutMs: number;
  /** Time to receive the complete request, body included (slow-body clients). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** How often Node looks for requests over those bounds. */
  checkIntervalMs: number;
}

export const DEFAULT_SERVER_TIMEOUTS: ServerTimeouts = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
};

export interface ListeningServer {
  server: http.Server | https.Server;
  /** `http(s)://host:port` actually bound (PORT=0 picks a free port). */
  url: string;
  tls: boolean;
  /** Lets in-flight requests finish, cuts what is still open after `boundMs`; resolves with how many were cut. */
  close(boundMs: number): Promise<number>;
}

/** What an Express app offers as the prototypes of its requests and responses. */
interface MessagePrototypes {
  request: http.IncomingMessage;
  response: http.ServerResponse;
}

function hasMessagePrototypes(app: unknown): app is MessagePrototypes {
  const { request, response } = app as Partial<MessagePrototypes>;
  return request instanceof http.IncomingMessage && response instanceof http.ServerResponse;
}

/** Node's message constructors are plain functions (Node 20); a future `class` one cannot be `.call`ed. */
const constructorsAreFunctions = [http.IncomingMessage, http.ServerResponse].every(
  (ctor) => !/^class\b/.test(Function.prototype.toString.call(ctor)),
);

/**
 * Requests and responses born with the Express app's prototypes: Express's own
 * `Object.setPrototypeOf` in `app.handle` kept much of every young generation alive into the old
 * one under load (bench/README.md); born with them, that call changes nothing. (Reflect.construct
 * was slower than the plain server.) Undefined where Node's constructors cannot be reused so.
 */
export function expressMessageClasses(app: MessagePrototypes):
  | { IncomingMessage: typeof http.IncomingMessage; ServerResponse: typeof http.ServerResponse }
  | undefined {
  if (!constructorsAreFunctions) return undefined;
  const IncomingMessage = http.IncomingMessage as unknown as (this: object, socket: unknown) => void;
  const ServerResponse = http.ServerResponse as unknown as (this: object, req: unknown, options: unknown) => void;
  function AppRequest(this: object, socket: unknown): void {
    IncomingMessage.call(this, socket);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: object, req: unknown, options: unknown): void {
    ServerResponse.call(this, req, options);
  }
  AppResponse.prototype = app.response;
  return {
    IncomingMessage: AppRequest as unknown as typeof http.IncomingMessage,
    ServerResponse: AppResponse as unknown as typeof http.ServerResponse,
  };
}

/** HTTPS when TLS_CERT_FILE and TLS_KEY_FILE are set, read once (restart to load a renewed certificate). */
export async function listen(
  app: RequestListener,
  config: Pick<Config, 'port' | 'host' | 'tlsCertFile' | 'tlsKeyFile'>,
  timeouts: Partial<ServerTimeouts> = {},
): Promise<ListeningServer> {
  const t = { ...DEFAULT_SERVER_TIMEOUTS, ...timeouts };
  if (Boolean(config.tlsCertFile) !== Boolean(config.tlsKeyFile)) {
    throw new Error('HTTPS needs both TLS_CERT_FILE and TLS_KEY_FILE (only one is set)');
  }
  const options: https.ServerOptions = {
    headersTimeout: t.headersTimeoutMs,
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    connectionsCheckingInterval: t.checkIntervalMs,
    // A request without Host is refused by requireHost (the envelope), not by Node (a bare 400).
    requireHostHeader: false,
    ...(hasMessagePrototypes(app) ? expressMessageClasses(app) : undefined),
  };
  const tls = Boolean(config.tlsCertFile && config.tlsKeyFile);
  const server = tls
    ? https.createServer({ ...options, cert: readFileSync(config.tlsCertFile!), key: readFileSync(config.tlsKeyFile!) }, requireHost(app))
    : http.createServer(options, requireHost(app));
  answerClientErrorsInEnvelope(server);
  // A client that connects and sends nothing is cut by the header bound too (Node answers 408).
  // No socket idle timeout: a report request legitimately waits up to REPORT_WAIT_MS in silence.
  const sockets = trackConnections(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;
  const url = `${tls ? 'https' : 'http'}://${host}:${address.port}`;

  let closing: Promise<number> | undefined;
  const close = (boundMs: number): Promise<number> =>
    (closing ??= new Promise<number>((resolve) => {
      sockets.stopping = true;
      const sweep = setInterval(() => sockets.endIdle(), 50);
      const timer = setTimeout(() => {
        const cut = sockets.open.size;
        server.closeAllConnections();
        for (const s of sockets.open.keys()) s.destroy();
        clearInterval(sweep);
        resolve(cut);
      }, boundMs);
      // net.Server's close, not http.Server's: that one also closes every idle keep-alive connection
      // at once, and a client sending its next request on one at that instant gets a reset.
      net.Server.prototype.close.call(server, () => {
        clearInterval(sweep);
        clearTimeout(timer);
        resolve(0);
      });
    }));
  return { server, url, tls, close };
}

/**
 * A connection idle this long while the server stops is closed: its client is not sending. Closing
 * sooner races a client that is merely slow between two requests (a busy host): its next request
 * meets the close and is reset (250 ms did, in the SIGTERM fault test at load 9).
 */
export const IDLE_CLOSE_MS = 1000;

interface Connections {
  /** Each open connection: requests in flight on it, and since when it has had none. */
  open: Map<Socket, { busy: number; idleSince: number }>;
  /** Set when the server stops accepting: every answer from then on closes its connection. */
  stopping: boolean;
  /** Ends the connections idle for IDLE_CLOSE_MS or more. */
  endIdle(): void;
}

/**
 * Shutdown without resets: each connection closes after its next answer (`Connection: close`) or once
 * idle for IDLE_CLOSE_MS; one idle only an instant may be carrying its client's next request right then.
 */
function trackConnections(server: http.Server | https.Server): Connections {
  const connections: Connections = {
    open: new Map(),
    stopping: false,
    endIdle() {
      const now = Date.now();
      for (const [socket, c] of this.open) if (c.busy === 0 && now - c.idleSince >= IDLE_CLOSE_MS) socket.end();
    },
  };
  server.on(server instanceof https.Server ? 'secureConnection' : 'connection', (socket: Socket) => {
    connections.open.set(socket, { busy: 0, idleSince: Date.now() });
    socket.once('close', () => connections.open.delete(socket));
  });
  // One handler for every response, not a closure and a `once` wrapper per request: a response
  // closes once, and its request keeps the socket (the response lets go of it before 'close').
  function answered(this: http.ServerResponse): void {
    const c = connections.open.get(this.req.socket);
    if (!c) return;
    c.busy--;
    c.idleSince = Date.now();
  }
  // Before the app's listener, so the header is set before any answer is written.
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (connections.stopping) res.setHeader('Connection', 'close');
    const c = connections.open.get(req.socket);
    if (!c) return;
    c.busy++;
    res.on('close', answered);
  });
  return connections;
}
