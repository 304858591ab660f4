/**
 * Request headers the API reads are bounded (openapi.yaml, "Order of checks"): a value over its
 * bound is `400 invalid_parameter` at `headers`, and two `Authorization` headers are ambiguous
 * credentials (`401`), never "the first one".
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { apiKey } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
let server: http.Server;
let port: number;

before(async () => {
  t = await createTestApp({}, { workers: false });
  server = http.createServer(t.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

/** A GET whose `Authorization` header is sent once per value given, as written. */
function withAuthorizations(values: string[]): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: { error?: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/api/v1/auth-check', method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.setHeader('Authorization', values);
    req.on('error', reject);
    req.end();
  });
}

describe('X-Test-Scenario is bounded', () => {
  for (const mode of ['test', 'live'] as const) {
    test(`${mode} key: a value of 65 characters or more is 400 invalid_parameter at headers`, async () => {
      const k = await apiKey(t.prisma, { mode, scopes: ['admin:full'] });
      for (const value of ['x'.repeat(65), 'success'.padEnd(15_000, ' x')]) {
        const res = await request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${k.key}`).set('X-Test-Scenario', value);
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.error.code, 'invalid_parameter');
        assert.equal(res.body.error.details.field, 'x-test-scenario');
        assert.equal(res.body.error.details.location, 'headers');
        const post = await request(t.app).post('/api/v1/auth-check').set('Authorization', `Bearer ${k.key}`).set('X-Test-Scenario', value);
        assert.equal(post.status, 400, JSON.stringify(post.body));
        assert.equal(post.body.error.code, 'invalid_parameter');
      }
      // Up to 64 characters, an unknown value still behaves as success.
      const res = await request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${k.key}`).set('X-Test-Scenario', 'y'.repeat(64));
      assert.equal(res.status, 200, JSON.stringify(res.body));
    });
  }
});

describe('two Authorization headers', () => {
  test('the same valid key twice, or a valid key and another: 401 (ambiguous credentials)', async () => {
    const k = await apiKey(t.prisma, { scopes: ['admin:full'] });
    const other = await apiKey(t.prisma, { scopes: ['admin:full'] });
    for (const values of [[`Bearer ${k.key}`, `Bearer ${k.key}`], [`Bearer ${k.key}`, `Bearer ${other.key}`], [`Bearer ${k.key}`, '']]) {
      const res = await withAuthorizations(values);
      assert.equal(res.status, 401, JSON.stringify(res.body));
      assert.equal(res.body.error?.code, 'authentication_failed');
      assert.match(res.body.error?.message ?? '', /one Authorization header/);
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="api", error="invalid_request"');
    }
    assert.equal((await withAuthorizations([`Bearer ${k.key}`])).status, 200);
  });
});
