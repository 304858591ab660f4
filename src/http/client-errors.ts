import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { requestIdOf } from './request-id.ts';
import { rawAnswerHeaders } from './security-headers.ts';

const SECURITY_HEADER_LINES = rawAnswerHeaders.map(([name, value]) => `${name}: ${value}\r\n`).join('');

function envelope(message: string, requestId: string): string {
  return JSON.stringify({ success: false, error: { code: 'invalid_request', message, request_id: requestId } });
}

/**
 * Requests Node refuses before Express sees them (headers over 16 KiB, malformed HTTP, a client
 * too slow to send its headers, an `Expect` other than `100-continue`; no Host, see requireHost) still get the envelope and
 * the headers of every other answer, not Node's bare status line.
 */
export function answerClientErrorsInEnvelope(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable || socket.bytesWritten > 0) {
      socket.destroy();
      return;
    }
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    const [status, reason, message] = timedOut
      ? [408, 'Request Timeout', 'The request was not received in time']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [400, 'Bad Request', 'Request headers are larger than 16 KiB']
        : [400, 'Bad Request', 'Malformed HTTP request'];
    const requestId = requestIdOf(undefined);
    const body = envelope(message, requestId);
    // Keep reading what the client is still sending: closing with unread input makes the kernel
    // reset the connection, and the client would lose the answer.
    socket.on('data', () => {});
    socket.resume();
    setTimeout(() => socket.destroy(), 1000).unref();
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${SECURITY_HEADER_LINES}Connection: close\r\n\r\n${body}`,
    );
  });

  // Node answers an unknown expectation with a bare 417 unless the server takes it: it is a
  // client error like any other here, 400 invalid_request (the statuses the contract uses).
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    refuse(res, `Expect: ${String(req.headers.expect ?? '').slice(0, 40)} is not supported (only 100-continue)`);
  });
}

/** A `400 invalid_request` written without Express, with the headers of every other answer. */
function refuse(res: ServerResponse, message: string): void {
  const requestId = requestIdOf(undefined);
  const body = envelope(message, requestId);
  res.writeHead(400, [
    ['Content-Type', 'application/json; charset=utf-8'],
    ['Content-Length', String(Buffer.byteLength(body))],
    ['X-Request-Id', requestId],
    ...rawAnswerHeaders,
    ['Connection', 'close'],
  ].flat());
  res.end(body);
}

/**
 * An HTTP/1.1 request must name its Host (RFC 9112, section 3.2). Node's own check answers a bare
 * 400 with no way to change it, so the server is made with `requireHostHeader: false` and this
 * answers such a request instead, as the other parser refusals are answered.
 */
export function requireHost(app: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1) {
      refuse(res, 'Missing Host header (required in HTTP/1.1)');
      return;
    }
    app(req, res);
  };
}
