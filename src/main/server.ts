import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { RequestListener } from 'node:http';
import type { Config } from '../config.ts';
import { answerClientErrorsInEnvelope } from '../http/client-errors.ts';

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
  /**
   * Stops accepting, lets in-flight requests finish (closing each keep-alive connection as soon as
   * it is idle), and after `boundMs` cuts whatever is still open. Resolves with the number of
   * connections that had to be cut.
   */
  close(boundMs: number): Promise<number>;
}

/**
 * The API's HTTP server on the settings of the operating contract: HTTPS on `PORT` when both
 * `TLS_CERT_FILE` and `TLS_KEY_FILE` are set (read once at start; restart to load a renewed
 * certificate), plain HTTP otherwise (behind a TLS-terminating proxy).
 */
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
  };
  const tls = Boolean(config.tlsCertFile && config.tlsKeyFile);
  const server = tls
    ? https.createServer({ ...options, cert: readFileSync(config.tlsCertFile!), key: readFileSync(config.tlsKeyFile!) }, app)
    : http.createServer(options, app);
  answerClientErrorsInEnvelope(server);
  // A client that connects and sends nothing is cut by the header bound too (Node answers 408).
  // No socket idle timeout: a report request legitimately waits up to REPORT_WAIT_MS in silence.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
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
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const timer = setTimeout(() => {
        const cut = sockets.size;
        server.closeAllConnections();
        for (const s of sockets) s.destroy();
        clearInterval(sweep);
        resolve(cut);
      }, boundMs);
      server.close(() => {
        clearInterval(sweep);
        clearTimeout(timer);
        resolve(0);
      });
      server.closeIdleConnections();
    }));
  return { server, url, tls, close };
}
