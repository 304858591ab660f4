import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { requestIdOf } from './request-id.ts';

/**
 * Requests Node refuses before Express sees them (headers over 16 KiB, malformed HTTP, a client
 * too slow to send its headers) still get the envelope, not Node's bare status line.
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
    const body = JSON.stringify({ success: false, error: { code: 'invalid_request', message, request_id: requestId } });
    // Keep reading what the client is still sending: closing with unread input makes the kernel
    // reset the connection, and the client would lose the answer.
    socket.on('data', () => {});
    socket.resume();
    setTimeout(() => socket.destroy(), 1000).unref();
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
