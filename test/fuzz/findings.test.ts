/**
 * Bugs the fuzzers found, pinned one by one (each failed until fixed). Unlike the fuzz properties,
 * these use valid live requests, so they may change data: they run in a world of their own.
 *
 * 1. A NUL character (U+0000) in a text value reaches PostgreSQL, which refuses it in `text`
 *    columns ("invalid byte sequence for encoding UTF8: 0x00"), and the request ends in a 500:
 *    list `search` (services, requests), and the free text of createService (customer_name),
 *    cancelService (reason) and manageRequest (denial_reason).
 * 2. Year 0000 passes the `date` / `date-time` formats but is out of PostgreSQL's range: a 500
 *    on listServices `modified_since` and listRequests `date`.
 * 3. The validator coerces path and query numbers with JavaScript's Number(): `Infinity`,
 *    `1e309`, `1e3`, `0x1F`, `+1` pass as integers. A sandbox getService/cancelService on
 *    `Infinity` answers 500 (its echoed service_number is not a number); a live key gets 404
 *    "Service Infinity not found" where the contract says 400; `offset=1e309` is accepted.
 * 4. Node answers headers over 16 KiB with a bare 431 (no envelope) unless the server handles
 *    `clientError` (the production listen() in src/main/server.ts).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { listen } from '../../src/main/server.ts';
import { assertApiAnswer, startFuzzWorld, type FuzzWorld, type KeyKind, type RawResponse } from './harness.ts';

let w: FuzzWorld;
before(async () => {
  w = await startFuzzWorld();
});
after(async () => {
  await w?.close();
});

const call = (kind: KeyKind, method: string, path: string, body?: unknown): Promise<RawResponse> =>
  w.send({
    method,
    path,
    headers: { Authorization: `Bearer ${w.keys[kind]}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

const notA5xx = (res: RawResponse, kind: KeyKind, what: string) => assertApiAnswer(res, { kind }, what);

describe('finding 1: NUL characters reach PostgreSQL (500)', () => {
  for (const path of ['/api/v1/services?search=%00', '/api/v1/services?search=a%00b', '/api/v1/requests?search=%00']) {
    it(`GET ${path} (live) is not a 5xx`, async () => {
      notA5xx(await call('live', 'GET', path), 'live', path);
    });
  }

  it('createService with U+0000 in customer_name (live) is not a 5xx', async () => {
    const body = { plan: 'Basic VPS', hostname: 'nul.example.com', customer_email: 'a@b.example', customer_name: 'x\u0000y' };
    notA5xx(await call('live', 'POST', '/api/v1/service-create', body), 'live', 'createService customer_name NUL');
  });

  it('cancelService with U+0000 in reason (live) is not a 5xx', async () => {
    const path = `/api/v1/services/${w.serviceNumbers[0]}/cancel`;
    notA5xx(await call('live', 'POST', path, { reason: 'x\u0000y' }), 'live', 'cancelService reason NUL');
  });

  it('manageRequest deny with U+0000 in denial_reason (live) is not a 5xx', async () => {
    const path = `/api/v1/requests/${w.requestIds.at(-1)}/manage`;
    notA5xx(await call('live', 'POST', path, { action: 'deny', denial_reason: 'no\u0000pe' }), 'live', 'manageRequest denial_reason NUL');
  });
});

describe('finding 2: year 0000 dates (500)', () => {
  for (const path of ['/api/v1/services?modified_since=0000-01-01', '/api/v1/services?modified_since=0000-01-01T00:00:00Z', '/api/v1/requests?date=0000-01-01']) {
    it(`GET ${path} (live) is not a 5xx`, async () => {
      notA5xx(await call('live', 'GET', path), 'live', path);
    });
  }
});

describe('finding 3: non-integer numbers accepted as integers', () => {
  for (const value of ['Infinity', '-Infinity', '1e309']) {
    it(`sandbox GET /api/v1/services/${value} is 400 invalid_parameter, not a 500`, async () => {
      const res = await call('sandbox', 'GET', `/api/v1/services/${value}`);
      notA5xx(res, 'sandbox', value);
      assert.equal(res.status, 400);
    });
    it(`live GET /api/v1/services/${value} is 400 invalid_parameter (contract: not a number is 400)`, async () => {
      const res = await call('live', 'GET', `/api/v1/services/${value}`);
      notA5xx(res, 'live', value);
      assert.equal(res.status, 400, res.text);
    });
  }

  it('sandbox POST /api/v1/services/Infinity/cancel is 400, not a 500', async () => {
    const res = await call('sandbox', 'POST', '/api/v1/services/Infinity/cancel', { reason: 'moving' });
    notA5xx(res, 'sandbox', 'cancel Infinity');
    assert.equal(res.status, 400);
  });

  it('GET /api/v1/services?offset=1e309 is 400 invalid_parameter', async () => {
    const res = await call('live', 'GET', '/api/v1/services?offset=1e309');
    notA5xx(res, 'live', 'offset=1e309');
    assert.equal(res.status, 400, res.text);
  });
});

describe('finding 4: over-long request headers', () => {
  // Node refuses headers over 16 KiB before Express sees the request; by default it answers a bare
  // `431` with no body, so the envelope rule ("every error ... leaves in the envelope") did not
  // hold there. The production server (src/main/server.ts listen()) must answer in the envelope.
  it('a request whose headers exceed 16 KiB gets the JSON envelope from the production server', async () => {
    const server = await listen(w.t.app, { port: 0, host: '127.0.0.1', tlsCertFile: undefined, tlsKeyFile: undefined });
    try {
      const url = new URL(server.url);
      const res = await new Promise<RawResponse>((resolve, reject) => {
        const started = performance.now();
        const req = http.request(
          { host: url.hostname, port: url.port, path: '/api/v1/auth-check', headers: { Authorization: `Bearer ${w.keys.live}`, 'X-Pad': 'p'.repeat(17 * 1024) }, agent: false },
          (r) => {
            const chunks: Buffer[] = [];
            r.on('data', (c: Buffer) => chunks.push(c));
            r.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let json: unknown;
              try {
                json = JSON.parse(text);
              } catch {
                json = undefined;
              }
              resolve({ status: r.statusCode ?? 0, headers: r.headers, text, json, ms: performance.now() - started });
            });
          },
        );
        req.on('error', (err) => reject(new Error(`the server cut the connection instead of answering: ${err.message}`)));
        req.end();
      });
      notA5xx(res, 'live', '17 KiB header');
      assert.equal(res.status, 400, res.text);
    } finally {
      await server.close(1000);
    }
  });
});
