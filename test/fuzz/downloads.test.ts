// Fuzz property of downloadReport (GET /downloads/reports/{token}, outside /api, no key): whatever
// a caller puts in place of the token (random, hostile, badly escaped, token-shaped), the answer is
// the one 404 envelope, no-store, and nothing is recorded as downloaded; the real link keeps working.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { answerClientErrorsInEnvelope } from '../../src/http/client-errors.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { downloadLink } from '../helpers/report-factories.ts';
import { BAD_ESCAPES, encode, hostileString, MAX_SEGMENT } from './arbitraries.ts';
import { assertApiAnswer, fcParams, type RawResponse } from './harness.ts';

const TOKEN = 'k'.repeat(43);
const WORKBOOK = Buffer.from('not really a workbook, but the stored bytes');

let t: TestApp;
let server: http.Server;
let port: number;
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

before(async () => {
  t = await createTestApp({ reportDownloadsPerIpPerMinute: 1_000_000 }, { workers: false });
  await downloadLink(t.prisma, { workbook: WORKBOOK, token: TOKEN, recipient: 'fuzz@broker.example' });
  server = http.createServer(t.app);
  answerClientErrorsInEnvelope(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  agent.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t.close();
});

function get(path: string, method = 'GET'): Promise<RawResponse & { bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request({ host: '127.0.0.1', port, path, method, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const text = bytes.toString('utf8');
        let json: unknown;
        try {
          json = text === '' ? undefined : JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, ms: performance.now() - started, bytes });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

const notAToken: fc.Arbitrary<string> = fc.oneof(
  fc.string({ minLength: 1, maxLength: 60 }).map(encode),
  hostileString.filter((s) => s.length > 0).map((s) => encode(s).slice(0, MAX_SEGMENT)),
  fc.constantFrom(...BAD_ESCAPES),
  // Token-shaped: 43 base64url characters, as a real token is, but not one of ours.
  fc.stringMatching(/^[A-Za-z0-9_-]{43}$/).filter((s) => s !== TOKEN),
  fc.constantFrom(TOKEN.toUpperCase(), `${TOKEN}=`, `${TOKEN.slice(1)}`, `${TOKEN}%00`, encodeURIComponent(`${TOKEN} `)),
);

describe('fuzz: downloadReport with anything but a valid token', () => {
  it('is the one 404 not_found envelope, no-store, and records no download', async () => {
    const first = await get('/downloads/reports/unknown');
    assert.equal(first.status, 404);
    const message = (first.json as { error: { message: string } }).error.message;
    await fc.assert(
      fc.asyncProperty(notAToken, async (token) => {
        const path = `/downloads/reports/${token}`;
        const res = await get(path);
        assertApiAnswer(res, { kind: 'none' }, `GET ${path.slice(0, 200)}`);
        // An escape that cannot be a path at all is refused before routing (400 invalid_request); every other is the one 404.
        if (res.status !== 400) {
          assert.equal(res.status, 404, `${path.slice(0, 200)} → ${res.status}`);
          const error = (res.json as { error: { code: string; message: string } }).error;
          assert.equal(error.code, 'not_found');
          assert.equal(error.message, message);
        }
        assert.equal(res.headers['cache-control'], 'no-store');
      }),
      fcParams(300),
    );
    assert.equal(await t.prisma.reportDownload.count(), 0, 'nothing was downloaded');
    const real = await get(`/downloads/reports/${TOKEN}`);
    assert.equal(real.status, 200);
    assert.deepEqual(real.bytes, WORKBOOK);
    assert.equal(await t.prisma.reportDownload.count(), 1);
  });
});
