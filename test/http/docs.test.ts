import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { parse } from 'yaml';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => t.close());

describe('published contract and docs (no key needed)', () => {
  it('GET /openapi.yaml is the contract file, byte for byte', async () => {
    const res = await request(t.app).get('/openapi.yaml');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /yaml/);
    assert.equal(res.text, readFileSync('openapi.yaml', 'utf8'));
  });

  it('GET /openapi.json is the same document as JSON', async () => {
    const res = await request(t.app).get('/openapi.json');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /json/);
    assert.deepEqual(res.body, parse(readFileSync('openapi.yaml', 'utf8')));
    assert.equal(Object.keys(res.body.paths).length, 13);
  });

  it('GET /docs serves the Redoc reference with every operation', async () => {
    const res = await request(t.app).get('/docs');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /html/);
    for (const op of ['sendInvoicesReport', 'createService', 'manageRequest', 'listRequests']) {
      assert.ok(res.text.includes(op), `docs mention ${op}`);
    }
  });
});
