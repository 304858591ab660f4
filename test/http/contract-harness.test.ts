// The harness itself: with response validation on (as in every test), a handler whose body
// drifts from openapi.yaml fails instead of passing silently (the contract checks the bytes the
// answer is sent as), and a crash leaves as a clean 500.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { operation, type DataOf } from '../../src/http/operation.ts';
import type { Contract } from '../../src/http/contract.ts';
import type { RegisterRoutes } from '../../src/http/resource.ts';
import { apiKey } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

const offContract: RegisterRoutes<{ contract: Contract }> = (router, deps) => {
  // GET /api/v1/auth-check answering with a field the contract does not have and without the
  // required ones: what a careless handler would do (cast past the contract's types).
  operation(router, deps.contract, 'getAuthCheck', {
    handle: async () => ({ status: 200, data: { hello: 'world' } as unknown as DataOf<'getAuthCheck', 200> }),
  });
  operation(router, deps.contract, 'postAuthCheck', {
    handle: async () => {
      throw new Error('database exploded at /srv/app/secret.ts:12');
    },
  });
};

let t: TestApp;
let key: string;
before(async () => {
  t = await createTestApp({}, { workers: false, app: { modules: [offContract] } });
  key = (await apiKey(t.prisma, { scopes: ['admin:full'] })).key;
});
after(async () => t.close());

describe('response validation', () => {
  it('a body off the contract becomes a 500 server_error, so a test asserting 200 fails', async () => {
    const res = await request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`);
    assert.equal(res.status, 500);
    assert.equal(res.body.success, false);
    assert.equal(res.body.error.code, 'server_error');
  });

  it('a thrown error is a 500 in the envelope with no stack or internal detail', async () => {
    const res = await request(t.app).post('/api/v1/auth-check').set('Authorization', `Bearer ${key}`).send({});
    assert.equal(res.status, 500);
    assert.equal(res.body.error.code, 'server_error');
    const text = JSON.stringify(res.body);
    assert.ok(!text.includes('exploded') && !text.includes('secret.ts') && !text.includes(' at '), text);
  });

  it('an operation without a module answers 500 "not implemented", never invented data', async () => {
    const res = await request(t.app).get('/api/v1/services').set('Authorization', `Bearer ${key}`);
    assert.equal(res.status, 500);
    assert.deepEqual(res.body, {
      success: false,
      error: { code: 'server_error', message: 'not implemented', request_id: res.headers['x-request-id'] },
    });
  });
});
