/**
 * Bodies the JSON parser cannot read (openapi.yaml, "Order of checks", step 5): a body sent without a
 * JSON Content-Type, and a compressed body that does not decompress or uses an unknown coding, are
 * `400 invalid_request` and change nothing, on every POST operation.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
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

  test('an unsupported Content-Encoding: 400 invalid_request naming the supported ones', async () => {
    const res = await send('/api/v1/reports/invoices', { 'Content-Type': 'application/json', 'Content-Encoding': 'compress' }, body);
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.error?.code, 'invalid_request');
    assert.match(res.body.error?.message ?? '', /^Content-Encoding compress is not supported/);
  });

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
