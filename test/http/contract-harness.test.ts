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

/** A body the contract's 200 of getAuthCheck takes. */
const validAuthCheck = {
  object: 'auth_check', key_id: 'key_1', key_name: 'Billing', mode: 'live', scopes: ['admin:full'], broker_id: 'brk_1', broker_name: 'Broker',
};
/** What GET /api/v1/auth-check answers next; by default a body off the contract. */
let authCheckAnswer: { status: number; data: unknown } = { status: 200, data: { hello: 'world' } };

const offContract: RegisterRoutes<{ contract: Contract }> = (router, deps) => {
  // GET /api/v1/auth-check answering with a field the contract does not have and without the
  // required ones: what a careless handler would do (cast past the contract's types).
  operation(router, deps.contract, 'getAuthCheck', {
    handle: async () => authCheckAnswer as { status: 200; data: DataOf<'getAuthCheck', 200> },
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
  it("each answer is checked against its own status's response (first in this file: the operation's first answers)", async () => {
    const get = () => request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`);
    try {
      authCheckAnswer = { status: 401, data: validAuthCheck };
      const asError = await get();
      assert.equal(asError.status, 500, 'a success body under 401 is not the contract\'s 401');
      assert.equal(asError.body.error.code, 'server_error');
      authCheckAnswer = { status: 200, data: validAuthCheck };
      assert.equal((await get()).status, 200, 'checked as a 200 after a 401 of the same operation');
      authCheckAnswer = { status: 418, data: validAuthCheck };
      assert.equal((await get()).status, 500, 'a status the operation does not list');
      authCheckAnswer = { status: 200, data: validAuthCheck };
      assert.equal((await get()).status, 200, 'the 200 is still checked as a 200');
      authCheckAnswer = { status: 200, data: { ...validAuthCheck, mode: 'staging' } };
      assert.equal((await get()).status, 500, 'and still checked');
    } finally {
      authCheckAnswer = { status: 200, data: { hello: 'world' } };
    }
  });

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
