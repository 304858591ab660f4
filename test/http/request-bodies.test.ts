/**
 * Bodies the JSON parser cannot read (openapi.yaml, "Order of checks", step 5): a body sent without a
 * JSON Content-Type, and a compressed body that does not decompress or uses an unknown coding, are
 * `400 invalid_request` and change nothing, on every POST operation.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import zlib, { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { apiKey } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
let key: string;
let brokerId: string;
let server: http.Server;
let port: number;

before(async () => {
  t = await createTestApp({}, { workers: false });
  const k = await apiKey(t.prisma, { scopes: ['admin:full'], rateLimit: 10_000 });
  key = k.key;
  brokerId = k.brokerId;
  server = http.createServer(t.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

/** A raw request, so nothing (supertest, a client library) adds or fixes headers. */
function send(path: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: { success: boolean; error?: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Length': String(body.length), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const POSTS = [
  '/api/v1/auth-check',
  '/api/v1/service-create',
  '/api/v1/services/123456789/password',
  '/api/v1/services/123456789/upgrade',
  '/api/v1/services/123456789/downgrade',
  '/api/v1/services/123456789/cancel',
  '/api/v1/requests/REQ-000001/manage',
  '/api/v1/reports/services',
  '/api/v1/reports/invoices',
];

describe('a body without a JSON Content-Type', () => {
  const json = Buffer.from('{"password":"MyChosenPassword-1"}');
  for (const contentType of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml']) {
    test(`Content-Type ${contentType ?? '(none)'} on every POST: 400 invalid_request`, async () => {
      for (const path of POSTS) {
        const res = await send(path, contentType === undefined ? {} : { 'Content-Type': contentType }, json);
        assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error?.code, 'invalid_request', path);
        assert.equal(res.body.error?.message, 'Content-Type must be application/json for a request with a body');
      }
    });
  }

  test('the live password is not changed (the probe finding)', async () => {
    const s = await service(t, { brokerId });
    const before = await t.prisma.service.findUniqueOrThrow({ where: { id: s.id } });
    const res = await send(`/api/v1/services/${s.serviceNumber}/password`, {}, Buffer.from('{"password":"MyChosenPassword-1"}'));
    assert.equal(res.status, 400, JSON.stringify(res.body));
    const after = await t.prisma.service.findUniqueOrThrow({ where: { id: s.id } });
    assert.equal(after.passwordEnc, before.passwordEnc);
    assert.equal(after.updatedAt.getTime(), before.updatedAt.getTime());
  });

  test('a POST with no body at all is still read as {} (its missing fields are named)', async () => {
    const res = await send('/api/v1/service-create', {}, Buffer.alloc(0));
    assert.equal(res.status, 400);
    assert.equal(res.body.error?.code, 'missing_parameter');
  });
});

describe('compressed bodies', () => {
  const body = Buffer.from(JSON.stringify({ recipients: [] }));
  for (const encoding of ['gzip', 'deflate', 'br']) {
    test(`Content-Encoding ${encoding} with garbage: 400 invalid_request, not 500`, async () => {
      const res = await send('/api/v1/reports/invoices', { 'Content-Type': 'application/json', 'Content-Encoding': encoding }, Buffer.from('garbage, not compressed'));
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, 'invalid_request');
      assert.equal(res.body.error?.message, `Request body could not be decompressed (Content-Encoding: ${encoding})`);
    });
  }

  // zstd is refused on every Node, well-formed or not: Node 22.15+ and 24 could decompress it.
  const zstd = (zlib as { zstdCompressSync?: (b: Buffer) => Buffer }).zstdCompressSync;
  const unsupported: Array<[coding: string, bytes: Buffer]> = [
    ['compress', body],
    ['zstd', zstd ? zstd(body) : body],
    ['zstd', Buffer.from('garbage, not compressed')],
    ['gzip, br', body],
  ];
  for (const [coding, bytes] of unsupported) {
    test(`Content-Encoding ${coding}: 400 invalid_request naming the supported ones`, async () => {
      const res = await send('/api/v1/reports/invoices', { 'Content-Type': 'application/json', 'Content-Encoding': coding }, bytes);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, 'invalid_request');
      assert.equal(res.body.error?.message, `Content-Encoding ${coding} is not supported: send the body as it is, or gzip, deflate or br`);
    });
  }

  for (const [encoding, compress] of [['gzip', gzipSync], ['deflate', deflateSync], ['br', brotliCompressSync]] as const) {
    test(`a well-formed ${encoding} body is read as JSON`, async () => {
      const res = await send('/api/v1/reports/invoices', { 'Content-Type': 'application/json', 'Content-Encoding': encoding }, compress(body));
      // The body was read: its rules answer (an empty recipients list), not the transport.
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, 'invalid_parameter');
    });
  }
});

describe('a body that is not a JSON object, on every POST (openapi.yaml, "Order of checks", step 5)', () => {
  const bodies: Array<[string, Buffer]> = [
    ['an empty array', Buffer.from('[]')],
    ['an array of an object', Buffer.from('[{"reason":"x"}]')],
    ['a string', Buffer.from('"x"')],
    ['a number', Buffer.from('1')],
    ['null', Buffer.from('null')],
    ['true', Buffer.from('true')],
    ['whitespace only', Buffer.from('  \n ')],
    ['a 10,000-deep array', Buffer.from(`${'['.repeat(10_000)}${']'.repeat(10_000)}`)],
  ];
  for (const [what, body] of bodies) {
    test(`${what}: 400 invalid_request`, async () => {
      for (const path of POSTS) {
        const res = await send(path, { 'Content-Type': 'application/json' }, body);
        assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error?.code, 'invalid_request', path);
        assert.equal(res.body.error?.message, 'Request body must be a JSON object', path);
      }
    });
  }

  test('a body that is not valid UTF-8: 400 invalid_request', async () => {
    const body = Buffer.concat([Buffer.from('{"reason":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
    for (const path of POSTS) {
      const res = await send(path, { 'Content-Type': 'application/json' }, body);
      assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error?.code, 'invalid_request', path);
      assert.equal(res.body.error?.message, 'Request body must be UTF-8 encoded JSON', path);
    }
  });

  test('an object is still read, on POST /auth-check too', async () => {
    const res = await send('/api/v1/auth-check', { 'Content-Type': 'application/json' }, Buffer.from(' {} '));
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });
});

/** A POST with a chunked body (no Content-Length), and the time from its last byte to the answer. */
function sendTimed(path: string, body: Buffer, chunked: boolean): Promise<{ status: number; ms: number; body: { error?: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    let sent = 0n;
    const headers: Record<string, string> = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
    if (!chunked) headers['Content-Length'] = String(body.length);
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers }, (res) => {
      const ms = Number(process.hrtime.bigint() - sent) / 1e6;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    req.end(body, () => {
      sent = process.hrtime.bigint();
    });
  });
}

const keysBody = (n: number) => Buffer.from(`{${Array.from({ length: n }, (_, i) => `"k${i}":1`).join(',')}}`);

describe('the cost of a body is bounded before it is parsed (openapi.yaml, "Order of checks", step 5)', () => {
  const refused: Array<[string, Buffer, RegExp]> = [
    ['741 KB of 70,000 keys', keysBody(70_000), /larger than 64 KiB/],
    ['65 KiB of one string', Buffer.from(JSON.stringify({ reason: 'x'.repeat(65 * 1024) })), /larger than 64 KiB/],
    ['65 keys', keysBody(65), /more than 64 object keys/],
    ['6,000 keys (under 64 KiB)', keysBody(6_000), /more than 64 object keys/],
    ['1,001 array items', Buffer.from(JSON.stringify({ recipients: Array.from({ length: 1001 }, () => '') })), /more than 1000 array items/],
    ['1,001 items over nested arrays', Buffer.from(JSON.stringify({ a: Array.from({ length: 7 }, () => Array.from({ length: 142 }, () => 1)) })), /more than 1000 array items/],
    ['17 levels of nesting', Buffer.from(`{"a":${'['.repeat(16)}${']'.repeat(16)}}`), /nested more than 16 levels/],
    ['100,000 levels of nesting', Buffer.from(`{"a":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`), /nested more than 16 levels/],
  ];
  for (const [what, body, message] of refused) {
    test(`${what}: 400 invalid_request on every POST, chunked or not`, async () => {
      for (const path of POSTS) {
        for (const chunked of [false, true]) {
          const res = await sendTimed(path, body, chunked);
          assert.equal(res.status, 400, `${path}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.error?.code, 'invalid_request', path);
          assert.match(res.body.error?.message ?? '', message, path);
        }
      }
    });
  }

  test('a refused hostile body is answered in well under 10 ms (best of 5, 741 KB and 6,000 keys)', async () => {
    for (const body of [keysBody(70_000), keysBody(6_000)]) {
      const times: number[] = [];
      for (let i = 0; i < 5; i++) times.push((await sendTimed('/api/v1/service-create', body, true)).ms);
      assert.ok(Math.min(...times) < 10, `${body.length} bytes: ${times.map((x) => x.toFixed(2)).join(', ')} ms`);
    }
  });

  test('bodies at the bounds pass to validation (and text holding { [ : , " is not counted)', async () => {
    const atBounds: Array<[string, string, object | Buffer, string]> = [
      ['64 keys', '/api/v1/service-create', keysBody(64), 'missing_parameter'],
      ['1,000 recipients', '/api/v1/reports/services', { recipients: Array.from({ length: 1000 }, (_, i) => `r${i % 20}@example.com`) }, 'too_many_recipients'],
      ['16 levels', '/api/v1/services/123456789/cancel', Buffer.from(`{"reason":${'['.repeat(15)}${']'.repeat(15)}}`), 'invalid_parameter'],
      ['a reason of JSON punctuation', '/api/v1/requests/REQ-000001/manage', { action: 'approve', denial_reason: `${'{[:,"\\'.repeat(150)}` }, 'not_found'],
    ];
    for (const [what, path, body, code] of atBounds) {
      const raw = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
      const res = await sendTimed(path, raw, false);
      assert.equal(res.body.error?.code, code, `${what}: ${JSON.stringify(res.body)}`);
    }
  });
});
