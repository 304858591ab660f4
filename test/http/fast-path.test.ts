// The request path's performance devices (src/http/fast-path.ts), each on the path production
// takes: a production app (responses not validated, as `npm start` runs) or the device itself.
// How answers are written (sendAnswer, serialized) is compared byte for byte in operation.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import request from 'supertest';
import { chain, dispatchOperations, parseQueryOnce } from '../../src/http/fast-path.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let production: TestApp;
let key: string;

before(async () => {
  production = await createTestApp({ validateResponses: false }, { workers: false });
  const brokerId = (await broker(production.prisma)).id;
  key = (await apiKey(production.prisma, { brokerId, scopes: ['admin:full'] })).key;
});
after(async () => {
  await production?.close();
});

/** Runs `handler` as Express would and resolves with what it passed to next. */
function run(handler: RequestHandler, req: Partial<Request> = {}): Promise<unknown> {
  return new Promise((resolve) => {
    void handler(req as Request, { locals: {} } as Response, ((err?: unknown) => resolve(err)) as NextFunction);
  });
}

describe('chain(): middleware as one layer, with Express\'s rules for each step', () => {
  test('steps run in order and the chain then goes on', async () => {
    const seen: string[] = [];
    const step = (name: string): RequestHandler => (_req, _res, next) => {
      seen.push(name);
      next();
    };
    assert.equal(await run(chain([step('a'), step('b'), step('c')])), undefined);
    assert.deepEqual(seen, ['a', 'b', 'c']);
  });

  const failing: Array<[string, RequestHandler]> = [
    ['next(err)', (_req, _res, next) => next(new Error('boom'))],
    ['a thrown error', () => {
      throw new Error('boom');
    }],
    ['a rejected promise', async () => {
      throw new Error('boom');
    }],
  ];
  for (const [what, handler] of failing) {
    test(`${what} leaves the chain with the error; later steps do not run`, async () => {
      let later = false;
      const err = await run(chain([handler, (_req, _res, next) => ((later = true), next())]));
      assert.equal((err as Error).message, 'boom');
      assert.equal(later, false);
    });
  }

  test('`when` false: the chain is skipped', async () => {
    let ran = false;
    await run(chain([(_req, _res, next) => ((ran = true), next())], () => false));
    assert.equal(ran, false);
  });
});

describe('parseQueryOnce(): req.query read once', () => {
  test('on the production app the query is a plain property, the same object on every read', async () => {
    const app = express();
    app.set('query parser', 'simple');
    app.get('/q', (req, res) => {
      parseQueryOnce(req);
      const descriptor = Object.getOwnPropertyDescriptor(req, 'query');
      res.json({ plain: descriptor !== undefined && 'value' in descriptor, same: req.query === req.query, query: req.query });
    });
    const res = await request(app).get('/q?a=1&b=two').expect(200);
    assert.deepEqual(res.body, { plain: true, same: true, query: { a: '1', b: 'two' } });
  });
});

describe('dispatchOperations(): the resolved operation is called without the router\'s walk', () => {
  test('a handler mounted for the operation answers; anything else goes on', async () => {
    const calls: string[] = [];
    const getService: RequestHandler = (_req, _res, next) => {
      calls.push('getService');
      next();
    };
    const dispatch = dispatchOperations(new Map([['getService', getService]]));
    const res = (operationId?: string) => ({ locals: operationId ? { operation: { operationId } } : {} }) as unknown as Response;
    await new Promise<void>((resolve) => dispatch({} as Request, res('getService'), () => resolve()));
    await new Promise<void>((resolve) => dispatch({} as Request, res('listServices'), () => resolve()));
    await new Promise<void>((resolve) => dispatch({} as Request, res(), () => resolve()));
    assert.deepEqual(calls, ['getService']);
  });
});

describe('the production app (fastAppSettings, the whole /api chain)', () => {
  test('no ETag from Express, and a query key qs would have dropped (__proto__) is refused like any unknown parameter', async () => {
    // A GET's 200 carries the conditional reads' own tag (test/http/conditional-reads.test.ts), not Express's W/"<length>-<hash>".
    const ok = await request(production.app).get('/api/v1/services?limit=1').set('Authorization', `Bearer ${key}`).expect(200);
    assert.match(ok.headers.etag ?? '', /^"[\w-]{27}"$/);
    const posted = await request(production.app).post('/api/v1/auth-check').set('Authorization', `Bearer ${key}`).expect(200);
    assert.equal(posted.headers.etag, undefined);
    const refused = await request(production.app).get('/api/v1/services?__proto__=x').set('Authorization', `Bearer ${key}`).expect(400);
    assert.equal(refused.body.error.code, 'invalid_parameter');
    assert.match(refused.body.error.message, /__proto__/);
  });

  test('a query parameter read by the validator, the input checks and the handler: one answer', async () => {
    const res = await request(production.app).get('/api/v1/services?limit=2&offset=0').set('Authorization', `Bearer ${key}`).expect(200);
    assert.equal(res.body.pagination.limit, 2);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  });
});
