// The one place where an outage becomes an answer (src/http/error-middleware.ts): a database error
// that says "unavailable" leaves as `503 service_unavailable` with `Retry-After` and gives the key's
// rate-limit unit back exactly once; any other error stays a `500` and keeps its unit counted.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import express, { type Response } from 'express';
import request from 'supertest';
import { errorAnswers, errorMiddleware } from '../../src/http/error-middleware.ts';
import { loadContract } from '../../src/http/contract.ts';
import { DatabaseUnavailableError } from '../../src/shared/db-outage.ts';

/** An app whose only route sets a refund (as the gate does) and throws `err`; `refunds` counts the refunds. */
function appThrowing(err: unknown) {
  const refunds: Response[] = [];
  const app = express();
  app.get('/x', (_req, res) => {
    res.locals.requestId = 'req_test';
    res.locals.refundRateLimit = (r) => {
      refunds.push(r);
      r.setHeader('X-RateLimit-Remaining', '9');
    };
    throw err;
  });
  app.use(errorMiddleware(errorAnswers(loadContract())));
  return { app, refunds };
}

const prismaUnreachable = Object.assign(new Error("Can't reach database server at 127.0.0.1:5432"), {
  name: 'PrismaClientKnownRequestError',
  code: 'P1001',
  meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { kind: 'DatabaseNotReachable', host: '127.0.0.1', port: 5432 } } },
});
const cannotStart = Object.assign(new Error('Transaction API error: Unable to start a transaction in the given time.'), {
  name: 'PrismaClientKnownRequestError',
  code: 'P2028',
  meta: {},
});

describe('outage answers', () => {
  for (const [name, err] of [
    ['Prisma cannot reach the server', prismaUnreachable],
    ['a transaction that cannot start', cannotStart],
    ['pg-pool waited for a connection too long', new Error('timeout exceeded when trying to connect')],
    ['node-postgres lost its connection', new Error('Connection terminated unexpectedly')],
    ['the domain error itself', new DatabaseUnavailableError()],
  ] as const) {
    test(`${name}: 503 service_unavailable with Retry-After, the unit given back once`, async () => {
      const { app, refunds } = appThrowing(err);
      const res = await request(app).get('/x');
      assert.equal(res.status, 503);
      assert.deepEqual(res.body, {
        success: false,
        error: { code: 'service_unavailable', message: res.body.error.message, request_id: 'req_test' },
      });
      assert.match(res.body.error.message, /retry after \d+ seconds/);
      assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
      assert.equal(refunds.length, 1);
      assert.equal(res.headers['x-ratelimit-remaining'], '9');
    });
  }

  test('any other error stays a 500 and its unit stays counted', async () => {
    const { app, refunds } = appThrowing(new TypeError('x is not a function'));
    const res = await request(app).get('/x');
    assert.equal(res.status, 500);
    assert.equal(res.body.error.code, 'server_error');
    assert.equal(res.headers['retry-after'], undefined);
    assert.equal(refunds.length, 0);
  });

  test('a unique violation is not an outage', async () => {
    const unique = Object.assign(new Error('Unique constraint failed'), { code: 'P2002', meta: { target: ['x'] } });
    const { app, refunds } = appThrowing(unique);
    const res = await request(app).get('/x');
    assert.equal(res.status, 500);
    assert.equal(refunds.length, 0);
  });
});
