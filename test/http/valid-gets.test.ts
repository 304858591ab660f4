/**
 * A GET URL the validator passed once is not validated again (src/http/validation.ts,
 * `rememberingValidGets`): what the validator left on the request (its metadata, the path
 * parameters, the coerced query) is given to the next request of that URL. The tests watch the
 * validator's steps run, and the app's answers stay those of a validated request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import request from 'supertest';
import { rememberingValidGets } from '../../src/http/validation.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker, type TestApiKey } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

type Probe = Request & { openapi?: unknown };

/** A stand-in validator: refuses `bad` anywhere in the URL, else sets what the real one sets. */
function fakeValidator(): { steps: RequestHandler[]; runs: () => number } {
  let runs = 0;
  const step: RequestHandler = (req: Probe, _res: Response, next: NextFunction) => {
    runs += 1;
    if (req.originalUrl.includes('bad')) return next(new Error('refused'));
    req.openapi = { route: req.path };
    req.params = { id: req.path.slice(1) };
    req.query = { ...req.query, coerced: 'yes' };
    next();
  };
  return { steps: [step], runs: () => runs };
}

function send(handler: RequestHandler, method: string, url: string, headers: Record<string, string> = {}) {
  const [path, search = ''] = url.split('?');
  const req = { method, originalUrl: url, path, headers, query: Object.fromEntries(new URLSearchParams(search)), params: {} } as unknown as Probe;
  return new Promise<{ req: Probe; err: unknown }>((resolve) => handler(req, {} as Response, (err?: unknown) => resolve({ req, err })));
}

describe('what the validator passed, by URL', () => {
  test('a repeated GET URL is validated once, and gets what validation left', async () => {
    const fake = fakeValidator();
    const step = rememberingValidGets(fake.steps, []);
    const first = await send(step, 'GET', '/s1?limit=5');
    const second = await send(step, 'GET', '/s1?limit=5');
    assert.equal(fake.runs(), 1);
    assert.equal(second.err, undefined);
    assert.deepEqual(second.req.openapi, first.req.openapi);
    assert.deepEqual(second.req.params, { id: 's1' });
    assert.deepEqual(second.req.query, { limit: '5', coerced: 'yes' });
    second.req.query.limit = 'changed';
    assert.deepEqual((await send(step, 'GET', '/s1?limit=5')).req.query, { limit: '5', coerced: 'yes' }, 'each request its own copy');
  });

  test('another URL, a refused URL and a POST are validated every time', async () => {
    const fake = fakeValidator();
    const step = rememberingValidGets(fake.steps, []);
    await send(step, 'GET', '/s1?limit=5');
    await send(step, 'GET', '/s1?limit=6');
    assert.equal(fake.runs(), 2);
    for (let i = 0; i < 2; i++) assert.equal(((await send(step, 'GET', '/s1?bad=1')).err as Error).message, 'refused');
    assert.equal(fake.runs(), 4);
    await send(step, 'POST', '/s1?limit=5');
    await send(step, 'POST', '/s1?limit=5');
    assert.equal(fake.runs(), 6);
  });

  test('a header parameter the schema could refuse is part of what is remembered', async () => {
    const fake = fakeValidator();
    const step = rememberingValidGets(fake.steps, ['x-mood']);
    await send(step, 'GET', '/s2', { 'x-mood': 'calm' });
    await send(step, 'GET', '/s2', { 'x-mood': 'calm' });
    await send(step, 'GET', '/s2', { 'x-mood': 'other' });
    assert.equal(fake.runs(), 2);
  });
});

describe('the app, on URLs it has validated before', () => {
  let t: TestApp;
  let key: TestApiKey;
  let serviceNumber: number;

  before(async () => {
    t = await createTestApp({}, { workers: false });
    const brokerId = (await broker(t.prisma)).id;
    key = await apiKey(t.prisma, { brokerId, scopes: ['admin:full'], rateLimit: 100_000 });
    for (let i = 0; i < 3; i++) serviceNumber = (await service(t, { brokerId })).serviceNumber;
  });
  after(async () => {
    await t?.close();
  });

  const get = (url: string) => request(t.app).get(url).set('Authorization', `Bearer ${key.key}`);

  test('answers the same the second time: parameters read as the validator read them', async () => {
    for (const url of ['/api/v1/services?limit=2&offset=1', `/api/v1/services/${serviceNumber}`, '/api/v1/services?include_credentials=true&limit=1']) {
      const first = await get(url);
      const second = await get(url);
      assert.equal(first.status, 200, url);
      assert.equal(second.status, 200, url);
      assert.deepEqual(second.body.data, first.body.data, url);
      assert.deepEqual(second.body.pagination, first.body.pagination, url);
    }
    assert.equal((await get('/api/v1/services?limit=2&offset=1')).body.data.length, 2);
    assert.ok((await get('/api/v1/services?include_credentials=true&limit=1')).body.data[0].credentials, 'the boolean read as true');
  });

  test('a bad URL beside a good one is refused each time', async () => {
    assert.equal((await get('/api/v1/services?limit=5')).status, 200);
    for (let i = 0; i < 2; i++) {
      assert.equal((await get('/api/v1/services?limit=500')).status, 400);
      assert.equal((await get('/api/v1/services?limit=5&colour=blue')).status, 400);
      assert.equal((await get('/api/v1/services/not-a-number')).status, 400);
    }
  });
});
