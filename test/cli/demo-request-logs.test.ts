// `demo` holds the request log entries openapi.yaml's examples name, once per mode however often it
// runs, each dated no earlier than the log's last entry, and getRequestLog with either key answers
// what the example shows (but the time, the entry's mode and the request id's own answer).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { parse } from 'yaml';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { DEMO_SLUG, runDemo } from '../../src/cli/demo.ts';
import type { Credentials } from '../../src/db/credentials.ts';

type Json = Record<string, unknown>;
const document = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as Json;
const at = (node: unknown, ...keys: string[]): unknown => keys.reduce<unknown>((n, k) => (n as Json)[k], node);
const exampleId = at(document, 'components', 'parameters', 'RequestLogIdPath', 'example') as string;
const getExample = at(document, 'paths', '/api/v1/request-logs/{request_id}', 'get', 'responses', '200', 'content', 'application/json', 'examples', 'replayed', 'value', 'data') as Json;
const listParameters = at(document, 'paths', '/api/v1/request-logs', 'get', 'parameters') as Array<{ name?: string; example?: string }>;
const cursorExample = listParameters.find((p) => p.name === 'starting_after')!.example!;

let t: TestApp;
let credentials: Credentials;
let brokerId: string;

before(async () => {
  t = await createTestApp({}, { workers: false });
  credentials = await t.deps.credentials();
});
after(async () => {
  await t?.close();
});

test('the entries are written once per mode, however often demo runs, never dated before the log\'s last', async () => {
  await runDemo(t.prisma, { credentials });
  brokerId = (await t.prisma.broker.findUniqueOrThrow({ where: { slug: DEMO_SLUG } })).id;
  const entries = () => t.prisma.apiLog.findMany({ where: { brokerId, requestId: { in: [exampleId, cursorExample] } }, orderBy: { id: 'asc' } });
  const first = await entries();
  assert.deepEqual(first.map((e) => [e.mode, e.requestId]).sort(), [['live', cursorExample], ['live', exampleId], ['test', cursorExample], ['test', exampleId]].sort());

  // A request logged after the entries, dated later than the next run's clock: the run's new entries come after it.
  const later = new Date(Date.now() + 60_000);
  await t.prisma.apiLog.create({ data: { brokerId, mode: 'live', at: later, method: 'GET', path: '/api/v1/services', status: 200, ip: '127.0.0.1', durationMs: 1, requestId: 'req_later' } });
  await t.prisma.apiLog.deleteMany({ where: { brokerId, mode: 'live', requestId: exampleId } });
  await runDemo(t.prisma, { credentials });
  await runDemo(t.prisma, { credentials });
  const again = await entries();
  assert.equal(again.length, 4, 'one of each per mode');
  const rewritten = again.find((e) => e.mode === 'live' && e.requestId === exampleId)!;
  assert.ok(rewritten.at > later, `${rewritten.at.toISOString()} is after the log's last entry, ${later.toISOString()}`);
  assert.deepEqual(again.filter((e) => e.id !== rewritten.id), first.filter((e) => !(e.mode === 'live' && e.requestId === exampleId)), 'the kept entries are left as they were');
});

test('getRequestLog\'s example id finds its entry with the live key and with the test key, as the example shows it', async () => {
  const { result } = await runDemo(t.prisma, { credentials });
  for (const [mode, key] of [['live', result.live_key], ['test', result.test_key]] as const) {
    const res = await request(t.app).get(`/api/v1/request-logs/${exampleId}`).set('Authorization', `Bearer ${key}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { created_at: _shown, mode: _mode, ...shown } = getExample;
    const { created_at: _got, mode: gotMode, ...got } = res.body.data as Json;
    assert.deepEqual(got, shown);
    assert.equal(gotMode, mode);
    const page = await request(t.app).get('/api/v1/request-logs').query({ starting_after: cursorExample }).set('Authorization', `Bearer ${key}`);
    assert.equal(page.status, 200, JSON.stringify(page.body));
  }
});
