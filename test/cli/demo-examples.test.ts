// `demo` and openapi.yaml's examples in step: every service number, request id, report id,
// download token, webhook endpoint id and event id an example names (except the ones listed in
// NOT_STORED, with why), and the examples' query parameters and invoice range, and the ids the code
// samples name, find the demo broker's records with its live key,
// through the app (responses validated against the contract). Change an example and this fails
// until src/cli/demo-examples.ts creates what it names.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { parse } from 'yaml';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { broker } from '../helpers/factories.ts';
import { serviceRequest } from '../helpers/service-factories.ts';
import type { Credentials } from '../../src/db/credentials.ts';
import { DEMO_SLUG, runDemo } from '../../src/cli/demo.ts';

type Node = unknown;
const document = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as Record<string, Node>;

/** Ids examples name that no record can stand for, and why. */
const NOT_STORED: Record<string, string> = {
  'REQ-000045': "the cancellation example's answer: the request that very call makes",
  '0f6f3f0e-7f2a-4a53-8c49-58b1a2f0d7c4': "getReport's `sending` example: the worker's reconciler sends a run left sending, so none can be kept",
};

interface Named {
  services: Set<number>;
  requests: Set<string>;
  reports: Set<string>;
  tokens: Set<string>;
  endpoints: Set<string>;
  events: Set<string>;
}

const ENDPOINT_ID = /^we_[A-Za-z0-9]{24}$/;
const EVENT_ID = /^evt_[A-Za-z0-9]{24}$/;

const isObject = (v: Node): v is Record<string, Node> => typeof v === 'object' && v !== null;
/** A sandbox answer (`mode: test` anywhere in it): its ids are generated and never stored. */
const isSandbox = (v: Node): boolean => isObject(v) && (v.mode === 'test' || Object.values(v).some(isSandbox));

/** The ids in one example value, by the field that holds them. */
function collect(value: Node, named: Named): void {
  if (Array.isArray(value)) return value.forEach((v) => collect(v, named));
  if (!isObject(value)) return;
  for (const [key, v] of Object.entries(value)) {
    if (key === 'service_number' && typeof v === 'number') named.services.add(v);
    else if (['request_id', 'pending_request_id', 'effect_id'].includes(key) && typeof v === 'string' && /^REQ-\d+$/.test(v)) named.requests.add(v);
    else if (key === 'report_id' && typeof v === 'string') named.reports.add(v);
    else if (typeof v === 'string' && ENDPOINT_ID.test(v)) named.endpoints.add(v);
    else if (typeof v === 'string' && EVENT_ID.test(v)) named.events.add(v);
    else if (Array.isArray(v) && v.every((id) => typeof id === 'string' && EVENT_ID.test(id))) v.forEach((id) => named.events.add(id as string));
    else collect(v, named);
  }
}

/** Every example and examples value in the document (a parameter's, a schema's, a body's, an answer's), sandbox answers left out. */
function examplesOf(node: Node, out: Node[] = []): Node[] {
  if (Array.isArray(node)) node.forEach((n) => examplesOf(n, out));
  else if (isObject(node)) {
    for (const [key, v] of Object.entries(node)) {
      if (key === 'example') out.push(v);
      else if (key === 'examples' && Array.isArray(v)) out.push(...v);
      else if (key === 'examples' && isObject(v)) out.push(...Object.values(v).map((e) => (isObject(e) && 'value' in e ? e.value : e)));
      else examplesOf(v, out);
    }
  }
  return out.filter((v) => !isSandbox(v));
}

const components = document.components as { parameters: Record<string, { example: Node }> };
const paths = document.paths as Record<string, Record<string, { parameters?: Array<{ name?: string; in?: string; example?: Node; schema?: { examples?: Node[] } }> }>>;
const named: Named = { services: new Set(), requests: new Set(), reports: new Set(), tokens: new Set(), endpoints: new Set(), events: new Set() };
for (const value of examplesOf(document)) collect(typeof value === 'string' ? { id: value } : value, named);
// Every service-number parameter's example (each service operation whose example needs a service of its own has one).
for (const [name, parameter] of Object.entries(components.parameters)) if (/ServiceNumber$/.test(name)) named.services.add(parameter.example as number);
named.requests.add(components.parameters.RequestIdPath!.example as string);
named.reports.add(components.parameters.ReportId!.example as string);
named.endpoints.add(components.parameters.WebhookEndpointIdPath!.example as string);
named.events.add(components.parameters.EventIdPath!.example as string);
named.events.add(components.parameters.StartingAfter!.example as string);
for (const token of paths['/downloads/reports/{token}']!.get!.parameters![0]!.schema!.examples!) named.tokens.add(token as string);
// The code samples too: a sample copied with the live demo key finds what it names.
for (const item of Object.values(paths)) {
  for (const op of Object.values(item) as Array<{ 'x-codeSamples'?: Array<{ source: string }> }>) {
    for (const { source } of op['x-codeSamples'] ?? []) {
      for (const [, n] of source.matchAll(/\/services\/(\d{9})\b/g)) named.services.add(Number(n));
      for (const [id] of source.matchAll(/\bREQ-\d{6,}\b/g)) named.requests.add(id);
      for (const [, id] of source.matchAll(/\/reports\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/g)) named.reports.add(id!);
    }
  }
}
for (const id of Object.keys(NOT_STORED)) {
  named.requests.delete(id);
  named.reports.delete(id);
}

/** A query of an operation's own parameter examples (every query parameter that has one). */
function exampleQuery(path: string): Record<string, string> {
  const own = paths[path]!.get!.parameters!.filter((p) => p.in === 'query' && p.example !== undefined);
  return Object.fromEntries(own.map((p) => [p.name!, String(p.example)]));
}

let t: TestApp;
let liveKey: string;
let credentials: Credentials;
const live = (path: string) => request(t.app).get(path).set('Authorization', `Bearer ${liveKey}`);

before(async () => {
  t = await createTestApp({}, { workers: false });
  credentials = await t.deps.credentials();
  liveKey = (await runDemo(t.prisma, { credentials })).result.live_key;
});
after(async () => {
  await t?.close();
});

test('the examples name what this test looks for', () => {
  assert.ok(named.services.has(482913570) && named.services.size >= 1, [...named.services].join());
  assert.ok(named.requests.size >= 2, [...named.requests].join());
  assert.ok(named.reports.size >= 1 && named.tokens.size === 1);
  assert.deepEqual([...named.endpoints], ['we_4bK9xT2mQ7vR1nL8pZ3cY6dW']);
  assert.ok(named.events.has('evt_2Jf8Kq1Vx9Lm4Tb7Rc3Np6Zs') && named.events.size >= 3, [...named.events].join());
});

test('every service number, request id, report id and token an example names is the demo broker\'s', async () => {
  for (const n of named.services) {
    const res = await live(`/api/v1/services/${n}`);
    assert.equal(res.status, 200, `service ${n}: ${JSON.stringify(res.body)}`);
  }
  for (const id of named.requests) {
    const res = await live(`/api/v1/requests?search=${id}`);
    assert.deepEqual(res.body.data?.map((r: { request_id: string }) => r.request_id), [id], `request ${id}: ${JSON.stringify(res.body)}`);
  }
  for (const id of named.reports) {
    const res = await live(`/api/v1/reports/${id}`);
    assert.equal(res.status, 200, `report ${id}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.data.status, 'completed');
  }
  const download = (paths['/downloads/reports/{token}'] as unknown as { get: { responses: Record<string, { headers: Record<string, { schema: { examples: string[] } }> }> } }).get;
  const disposition = download.responses['200']!.headers['Content-Disposition']!.schema.examples[0];
  for (const token of named.tokens) {
    const res = await request(t.app).get(`/downloads/reports/${token}`);
    assert.equal(res.status, 200, `token ${token}`);
    assert.equal(res.headers['content-disposition'], disposition, 'the file name the example shows');
  }
});

test("the examples' query parameters find records, and their invoice range has invoices", async () => {
  for (const path of ['/api/v1/services', '/api/v1/requests']) {
    const res = await live(path).query(exampleQuery(path));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.body.data.length >= 1, `${path}?${new URLSearchParams(exampleQuery(path))} finds nothing`);
  }
  const body = examplesOf(paths['/api/v1/reports/invoices']!.post!).find((v) => isObject(v) && 'start_date' in v) as { start_date: string; end_date: string };
  const demo = await t.prisma.broker.findUniqueOrThrow({ where: { slug: DEMO_SLUG } });
  const inRange = await t.prisma.invoice.count({
    where: { brokerId: demo.id, status: { in: ['paid', 'pending'] }, date: { gte: new Date(body.start_date), lte: new Date(body.end_date) } },
  });
  assert.ok(inRange >= 1, `no paid or pending invoice from ${body.start_date} to ${body.end_date}`);
});

test('demo again puts back what the live calls changed and duplicates nothing; new requests get ids past the examples\'', async () => {
  const demo = await t.prisma.broker.findUniqueOrThrow({ where: { slug: DEMO_SLUG } });
  const counts = async () => Promise.all([t.prisma.service.count(), t.prisma.serviceRequest.count(), t.prisma.invoice.count(), t.prisma.reportRun.count(), t.prisma.reportLink.count()]);
  const before = await counts();
  const approved = await request(t.app).post('/api/v1/requests/REQ-000044/manage').set('Authorization', `Bearer ${liveKey}`).send({ action: 'approve' });
  assert.equal(approved.status, 200, JSON.stringify(approved.body));
  const upgraded = await request(t.app).post('/api/v1/services/482913570/upgrade').set('Authorization', `Bearer ${liveKey}`).send({ plan: 'Professional VPS' });
  assert.equal(upgraded.status, 202, JSON.stringify(upgraded.body));
  assert.ok(Number(upgraded.body.data.request_id.slice(4)) > 44, upgraded.body.data.request_id);

  const again = await runDemo(t.prisma, { credentials });
  assert.deepEqual(again.skipped, []);
  const after = await counts();
  assert.deepEqual(after, [before[0], before[1] + 1, before[2], before[3], before[4]], 'only the upgrade request made above is new');
  const pending = await live('/api/v1/requests?search=REQ-000044');
  assert.equal(pending.body.data[0].request_status, 'pending');
  assert.equal((await live('/api/v1/services/731845206')).body.data.plan, 'Standard VPS');
  const open = await t.prisma.serviceRequest.count({ where: { brokerId: demo.id, service: { serviceNumber: 482913570 }, status: 'pending' } });
  assert.equal(open, 0, 'the upgrade left open on 482913570 is closed, so the examples can make theirs');
});

test('the examples of upgrade, downgrade and cancel run one after another with the live key, each on its example service', async () => {
  await runDemo(t.prisma, { credentials });
  type Op = { parameters?: Array<{ $ref?: string }>; requestBody: { content: { 'application/json': { examples: Record<string, { value: object }> } } } };
  const ops = paths as unknown as Record<string, { post: Op }>;
  for (const change of ['upgrade', 'downgrade', 'cancel']) {
    const op = ops[`/api/v1/services/{service_number}/${change}`]!.post;
    const ref = op.parameters!.find((p) => p.$ref?.endsWith('ServiceNumber'))!.$ref!.split('/').pop()!;
    const serviceNumber = components.parameters[ref]!.example as number;
    const body = Object.values(op.requestBody.content['application/json'].examples)[0]!.value;
    const res = await request(t.app).post(`/api/v1/services/${serviceNumber}/${change}`).set('Authorization', `Bearer ${liveKey}`).send(body);
    assert.equal(res.status, 202, `${change} of ${serviceNumber} with ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
  }
});

test("another broker's request with an example's id is left alone (the example is skipped, with a note)", async () => {
  const other = await broker(t.prisma);
  const mine = await serviceRequest(t.prisma, { brokerId: other.id, type: 'create' });
  await t.prisma.serviceRequest.update({ where: { id: 44 }, data: { id: 1_000_044 } });
  await t.prisma.serviceRequest.update({ where: { id: mine.id }, data: { id: 44 } });
  const again = await runDemo(t.prisma, { credentials });
  assert.deepEqual(again.skipped, ["REQ-000044: another broker's request has that id"]);
  assert.equal((await t.prisma.serviceRequest.findUniqueOrThrow({ where: { id: 44 } })).brokerId, other.id);
});

type Op = { parameters?: Array<{ $ref?: string; name?: string; in?: string; example?: Node }>; requestBody?: { content: { 'application/json': { examples: Record<string, { value: object }> } } } };
const webhookOps = paths as unknown as Record<string, Record<'get' | 'post', Op>>;
/** The live answer examples of an operation, by name. */
function answers(path: string, method: 'get' | 'post'): Record<string, { data: Record<string, Node> }> {
  const ok = (paths[path]![method] as unknown as { responses: Record<string, { content: { 'application/json': { examples: Record<string, { value: { data: Record<string, Node> } }> } } }> }).responses['200']!;
  return Object.fromEntries(Object.entries(ok.content['application/json'].examples).map(([name, e]) => [name, e.value]));
}
/** An endpoint or event answer without what the demo dates itself (events are kept 30 days) or keeps disabled (see demo-examples.ts). */
const stable = (v: Record<string, Node>) => {
  const { created_at: _c, updated_at: _u, status: _s, disabled_reason: _d, last_success_at: _l, last_failure_at: _f, failing_since: _fs, consecutive_failures: _n, deliveries, ...rest } = v;
  const kept = Array.isArray(deliveries)
    ? deliveries.map(({ next_attempt_at: _x, completed_at: _y, attempts, ...d }: Record<string, Node>) => ({ ...d, attempts: (attempts as Array<Record<string, Node>>).map(({ attempted_at: _a, ...a }) => a) }))
    : undefined;
  return kept === undefined ? rest : { ...rest, deliveries: kept };
};

test('every webhook endpoint and event id an example names is the demo broker\'s, live, as the examples show it', async () => {
  await runDemo(t.prisma, { credentials });
  for (const id of named.endpoints) {
    const res = await live(`/api/v1/webhook-endpoints/${id}`);
    assert.equal(res.status, 200, `endpoint ${id}: ${JSON.stringify(res.body)}`);
    assert.deepEqual(stable(res.body.data), stable(answers('/api/v1/webhook-endpoints/{endpoint_id}', 'get').live!.data));
    // Disabled, so nothing is owed to an address that reaches no one; enabling it is the update example.
    assert.equal(res.body.data.status, 'disabled');
    assert.match(res.body.data.disabled_reason, /demo/);
  }
  for (const id of named.events) {
    const res = await live(`/api/v1/events/${id}`);
    assert.equal(res.status, 200, `event ${id}: ${JSON.stringify(res.body)}`);
    const shown = (answers('/api/v1/events', 'get').live!.data as unknown as Array<Record<string, Node>>).find((e) => e.id === id)!;
    assert.deepEqual(stable(res.body.data), { ...stable(shown), deliveries: res.body.data.deliveries.length === 0 ? [] : stable(answers('/api/v1/events/{event_id}', 'get').delivered!.data).deliveries });
  }
  const delivered = await live(`/api/v1/events/${components.parameters.EventIdPath!.example}`);
  assert.deepEqual(stable(delivered.body.data), stable(answers('/api/v1/events/{event_id}', 'get').delivered!.data));
});

test("the events' list and its parameter examples find the examples' events, newest first, with their sequence", async () => {
  await runDemo(t.prisma, { credentials });
  // Events are never rewritten, so later runs' events come after them: the examples' events keep their places and numbers.
  const listed = answers('/api/v1/events', 'get').live!.data as unknown as Array<{ id: string; sequence: number }>;
  const page = await live('/api/v1/events').query({ limit: 100 });
  const shown = (page.body.data as Array<{ id: string; sequence: number }>).filter((e) => listed.some((l) => l.id === e.id));
  assert.deepEqual(shown.map((e) => [e.id, e.sequence]), listed.map((e) => [e.id, e.sequence]));
  const byType = await live('/api/v1/events').query(exampleQuery('/api/v1/events'));
  assert.ok(byType.body.data.length >= 1, JSON.stringify(byType.body));
  const after = await live('/api/v1/events').query({ starting_after: components.parameters.StartingAfter!.example as string });
  assert.equal(after.status, 200, JSON.stringify(after.body));
  // The code samples' queries: curl's (?type=…&limit=…) finds an event too.
  const curl = (paths['/api/v1/events']!.get as unknown as { 'x-codeSamples': Array<{ source: string }> })['x-codeSamples'][0]!.source;
  const query = /\/api\/v1\/events\?([^"]+)"/.exec(curl)![1]!;
  assert.ok((await live(`/api/v1/events?${query}`)).body.data.length >= 1, query);
});

test('the webhook examples run one after another with the live key, in the contract tests\' order (delete last), and demo puts everything back', async () => {
  await runDemo(t.prisma, { credentials });
  const endpointId = components.parameters.WebhookEndpointIdPath!.example as string;
  const eventId = components.parameters.EventIdPath!.example as string;
  const bodies = (op: Op) => Object.values(op.requestBody?.content['application/json'].examples ?? { none: { value: undefined } }).map((e) => e.value);
  const calls: Array<[string, Op]> = [
    [`/api/v1/webhook-endpoints/${endpointId}`, webhookOps['/api/v1/webhook-endpoints/{endpoint_id}']!.post],
    [`/api/v1/webhook-endpoints/${endpointId}/rotate-secret`, webhookOps['/api/v1/webhook-endpoints/{endpoint_id}/rotate-secret']!.post],
    [`/api/v1/webhook-endpoints/${endpointId}/ping`, webhookOps['/api/v1/webhook-endpoints/{endpoint_id}/ping']!.post],
    [`/api/v1/events/${eventId}/redeliver`, webhookOps['/api/v1/events/{event_id}/redeliver']!.post],
    [`/api/v1/webhook-endpoints/${endpointId}/delete`, webhookOps['/api/v1/webhook-endpoints/{endpoint_id}/delete']!.post],
  ];
  for (const [path, op] of calls) {
    for (const body of bodies(op)) {
      const res = await request(t.app).post(path).set('Authorization', `Bearer ${liveKey}`).send(body ?? {});
      assert.equal(res.status, 200, `${path} with ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
    }
  }
  assert.equal((await live(`/api/v1/webhook-endpoints/${endpointId}`)).status, 404, 'deleted');

  const again = await runDemo(t.prisma, { credentials });
  assert.deepEqual(again.skipped.filter((note) => /webhook|event/.test(note)), []);
  const endpoint = await live(`/api/v1/webhook-endpoints/${endpointId}`);
  assert.equal(endpoint.body.data.status, 'disabled');
  assert.equal(endpoint.body.data.previous_secret_expires_at, null);
  assert.deepEqual(stable((await live(`/api/v1/events/${eventId}`)).body.data), stable(answers('/api/v1/events/{event_id}', 'get').delivered!.data));
  assert.equal(await t.prisma.event.count({ where: { id: { in: [...named.events] } } }), named.events.size, 'each example event once');
});

test("demo leaves nothing owed to the examples' host: the example endpoint's and the create example's deliveries are given up", async () => {
  await runDemo(t.prisma, { credentials });
  const endpointId = components.parameters.WebhookEndpointIdPath!.example as string;
  const post = (path: string, body: object = {}) => request(t.app).post(path).set('Authorization', `Bearer ${liveKey}`).send(body);
  const enabled = await post(`/api/v1/webhook-endpoints/${endpointId}`, { status: 'enabled' });
  assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
  const createBody = Object.values(webhookOps['/api/v1/webhook-endpoints']!.post.requestBody!.content['application/json'].examples)[0]!.value;
  const created = await post('/api/v1/webhook-endpoints', createBody);
  assert.equal(created.status, 200, JSON.stringify(created.body));
  assert.equal((await post(`/api/v1/webhook-endpoints/${endpointId}/ping`)).status, 200);
  assert.equal((await post(`/api/v1/webhook-endpoints/${created.body.data.id}/ping`)).status, 200);
  const owed = () => t.prisma.webhookDelivery.count({ where: { endpointId: { in: [endpointId, created.body.data.id] }, status: 'pending' } });
  // The two pings, and the new endpoint's webhook_endpoint.created owed to the (enabled) example endpoint.
  assert.equal(await owed(), 3);

  await runDemo(t.prisma, { credentials });
  assert.equal(await owed(), 0);
  const other = await live(`/api/v1/webhook-endpoints/${created.body.data.id}`);
  assert.equal(other.body.data.status, 'disabled');
});
