/**
 * Answers Node's HTTP parser would give itself (headers over 16 KiB, malformed HTTP, an `Expect`
 * other than 100-continue) carry the envelope, the security headers and `Cache-Control: no-store`
 * of every other answer (src/http/client-errors.ts).
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { listen, type ListeningServer } from '../../src/main/server.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
let server: ListeningServer;
let port: number;

before(async () => {
  t = await createTestApp({}, { workers: false });
  server = await listen(t.app, { port: 0, host: '127.0.0.1', tlsCertFile: undefined, tlsKeyFile: undefined });
  port = Number(new URL(server.url).port);
});
after(async () => {
  await server.close(1000);
  await t.close();
});

/** Sends raw bytes and reads the answer until the server closes the connection. */
function raw(bytes: string): Promise<{ status: number; headers: Map<string, string>; body: { success: boolean; error: { code: string; message: string; request_id: string } } }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = (head ?? '').split('\r\n');
      const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body: JSON.parse(rest.join('\r\n')) });
    });
  });
}

const EXPECTED_HEADERS: Array<[string, RegExp]> = [
  ['content-security-policy', /default-src 'none'/],
  ['x-frame-options', /^DENY$/],
  ['x-content-type-options', /^nosniff$/],
  ['strict-transport-security', /max-age=/],
  ['referrer-policy', /^no-referrer$/],
  ['cross-origin-resource-policy', /^same-origin$/],
  ['cache-control', /^no-store$/],
  ['content-type', /^application\/json/],
  ['x-request-id', /^req_/],
];

const CASES: Array<[string, string, number, RegExp]> = [
  ['headers over 16 KiB', `GET /api/v1/auth-check HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`, 400, /larger than 16 KiB/],
  ['malformed HTTP', 'GARBAGE / NOT-HTTP\r\n\r\n', 400, /Malformed HTTP request/],
  ['Expect: bogus', 'POST /api/v1/auth-check HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\nContent-Length: 2\r\n\r\n{}', 400, /Expect: bogus is not supported/],
  // Issue 21 row 6: Node's own answer was a bare 400.
  ['no Host (ops path)', 'GET /healthz HTTP/1.1\r\n\r\n', 400, /Missing Host header/],
  ['no Host (API path)', 'GET /api/v1/auth-check HTTP/1.1\r\nAuthorization: Bearer sk_live_x\r\n\r\n', 400, /Missing Host header/],
];

describe("answers Node's parser gives", () => {
  for (const [name, bytes, status, message] of CASES) {
    test(`${name}: ${status} invalid_request in the envelope, with every security header`, async () => {
      const res = await raw(bytes);
      assert.equal(res.status, status);
      assert.equal(res.body.success, false);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.match(res.body.error.message, message);
      assert.equal(res.body.error.request_id, res.headers.get('x-request-id'));
      for (const [header, value] of EXPECTED_HEADERS) assert.match(res.headers.get(header) ?? '', value, header);
    });
  }
});
