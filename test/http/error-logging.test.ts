// Issue 45 item 6: a 500 is logged once ("request failed" and "request errored" were two lines),
// on the request's own line, with its request id, the error's stack and the operation.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import type { Contract } from '../../src/http/contract.ts';
import { operation } from '../../src/http/operation.ts';
import type { RegisterRoutes } from '../../src/http/resource.ts';
import { createLogger } from '../../src/logger.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiKey } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { LogCapture } from '../ops/helpers.ts';

const failing: RegisterRoutes<{ contract: Contract }> = (router, deps) => {
  operation(router, deps.contract, 'postAuthCheck', {
    handle: async () => {
      throw new Error('the store broke');
    },
  });
  // Outside any operation: its error reaches the app's error middleware.
  router.get('/broken-step', () => {
    throw new TypeError('a step broke');
  });
};

let t: TestApp;
let key: string;
before(async () => {
  t = await createTestApp({}, { workers: false });
  key = (await apiKey(t.prisma, { scopes: ['admin:full'] })).key;
});
after(async () => t.close());

async function logsOf(requestId: string, send: (app: ReturnType<typeof createApp>) => Promise<{ status: number }>, status: number) {
  const capture = new LogCapture();
  const app = createApp({ ...t.deps, logger: createLogger('info', capture) }, { modules: [failing] });
  const res = await send(app);
  assert.equal(res.status, status);
  // The request's line is written when its response has finished: waited for, not timed.
  await eventually(() => (capture.records().some((r) => r.requestId === requestId) ? true : undefined), 15_000, 'the request line');
  return capture.records();
}

describe('a 500 is one log line', () => {
  test('an operation that throws: one error line with the request id, the stack and the operation', async () => {
    const records = await logsOf('five-hundred-1', (app) => request(app).post('/api/v1/auth-check').set({ Authorization: `Bearer ${key}`, 'X-Request-Id': 'five-hundred-1' }), 500);
    const errors = records.filter((r) => r.level === 50);
    assert.equal(errors.length, 1, JSON.stringify(records));
    const line = errors[0]!;
    assert.equal(line.msg, 'request errored');
    assert.equal(line.requestId, 'five-hundred-1');
    assert.equal(line.operationId, 'postAuthCheck');
    assert.deepEqual(line.res, { statusCode: 500 });
    assert.match((line.err as { stack: string }).stack, /Error: the store broke\n\s+at /);
    assert.equal(records.filter((r) => r.requestId === 'five-hundred-1').length, 1, 'no other line for the request');
  });

  test('a step outside the operations that throws: one line too', async () => {
    const records = await logsOf('five-hundred-2', (app) => request(app).get('/broken-step').set('X-Request-Id', 'five-hundred-2'), 500);
    const mine = records.filter((r) => r.requestId === 'five-hundred-2');
    assert.equal(mine.length, 1, JSON.stringify(records));
    assert.equal(mine[0]!.level, 50);
    assert.match((mine[0]!.err as { stack: string }).stack, /TypeError: a step broke/);
  });

  test('a 4xx is one info line and carries no error', async () => {
    const records = await logsOf('four-oh-one', (app) => request(app).get('/api/v1/auth-check').set('X-Request-Id', 'four-oh-one'), 401);
    const mine = records.filter((r) => r.requestId === 'four-oh-one');
    assert.equal(mine.length, 1, JSON.stringify(records));
    assert.equal(mine[0]!.level, 30);
    assert.equal(mine[0]!.err, undefined);
  });
});
