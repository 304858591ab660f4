// Every operation's contract example runs against a fresh demo (issue 39 item 4): each path
// parameter's example, each query parameter's examples alone and all first ones together, each
// request body example, with the demo's live key and its test key, on a server whose DNS knows no
// example names. Any answer the operation does not document as a success fails, except a test
// key's 404 (or a list cursor's 400) on a record only the live mode holds. Operations are read
// from the server's GET /openapi.json, as any tool reads them, and sent as they are (issue 46
// item 3: no extension rewrites a value), so new ones are covered. Header examples are not sent:
// X-Test-Scenario's ask for errors, one Idempotency-Key on every call would be `422 idempotency_key_reused`.
import assert from 'node:assert/strict';
import dns from 'node:dns';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { DEMO_SLUG, runDemo } from '../../src/cli/demo.ts';
import { putContractExamples } from '../../src/cli/demo-examples.ts';
import type { Credentials } from '../../src/db/credentials.ts';

type Node = unknown;
type Json = Record<string, Node>;

// No name resolves but this machine's (as on a demo server without network): the create
// example's URL must be registrable as it is written.
const t: TestApp = await createTestApp({}, { resolveHost: dns.lookup });
const served = await request(t.app).get('/openapi.json');
assert.equal(served.status, 200);
const document = served.body as Json;

const isObject = (v: Node): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The node a local `$ref` names (followed until it is not one). */
function resolve(node: Node): Node {
  for (let seen = 0; isObject(node) && typeof node.$ref === 'string' && seen < 16; seen++) {
    node = node.$ref.slice(2).split('/').reduce<Node>((n, key) => (isObject(n) ? n[key.replaceAll('~1', '/').replaceAll('~0', '~')] : undefined), document);
  }
  return node;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  example?: Node;
  examples?: Record<string, { value: Node }>;
  schema?: { example?: Node; examples?: Node[] };
}

/** A parameter's example values: `example`, each of `examples`, else its schema's. */
function parameterExamples(p: Parameter): Node[] {
  if (p.example !== undefined) return [p.example];
  if (p.examples) return Object.values(p.examples).map((e) => (resolve(e) as { value: Node }).value);
  const schema = resolve(p.schema) as Parameter['schema'];
  if (schema?.example !== undefined) return [schema.example];
  return schema?.examples ?? [];
}

interface Call {
  operationId: string;
  method: string;
  path: string;
  query: Record<string, string>;
  /** Undefined when the operation takes no body. */
  body: (() => Node) | undefined;
  /** What the call is made of, for the failure message. */
  label: string;
  success: number[];
}

interface Operation {
  operationId: string;
  parameters?: Node[];
  requestBody?: Node;
  responses: Record<string, Node>;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

/** The body examples of an operation, each as a function giving its value. */
function bodyExamples(op: Operation): Array<{ name: string; value: () => Node }> {
  const body = resolve(op.requestBody) as { content?: Record<string, { example?: Node; examples?: Record<string, Node> }> } | undefined;
  const media = body?.content?.['application/json'];
  if (!media) return [];
  if (media.example !== undefined) return [{ name: 'example', value: () => media.example }];
  return Object.entries(media.examples ?? {}).map(([name, e]) => {
    const example = resolve(e) as Json;
    return { name, value: () => example.value };
  });
}

/** The calls of one operation: its first body example (or none), every other body example, each query parameter example alone. */
function callsOf(path: string, method: string, op: Operation): Call[] {
  const parameters = (op.parameters ?? []).map((p) => resolve(p) as Parameter);
  let filled = path;
  for (const p of parameters.filter((x) => x.in === 'path')) {
    const [value] = parameterExamples(p);
    // Left as `{name}` without an example: the first test names it.
    if (value !== undefined) filled = filled.replace(`{${p.name}}`, encodeURIComponent(String(value)));
  }
  const success = Object.keys(op.responses).filter((s) => /^2\d\d$/.test(s)).map(Number);
  const bodies = bodyExamples(op);
  const base = { operationId: op.operationId, method, path: filled, success, query: {} };
  const calls: Call[] = bodies.length === 0 ? [{ ...base, body: undefined, label: 'no query' }] : bodies.map((b) => ({ ...base, body: b.value, label: `body example ${b.name}` }));
  const query = parameters.filter((x) => x.in === 'query' && parameterExamples(x).length > 0);
  for (const p of query) {
    for (const value of parameterExamples(p)) {
      calls.push({ ...base, body: bodies[0]?.value, query: { [p.name]: String(value) }, label: `${p.name}=${String(value)}` });
    }
  }
  // As a generator of contract tests makes it (Portman): every query parameter's first example at once.
  if (query.length > 1) {
    const all = Object.fromEntries(query.map((p) => [p.name, String(parameterExamples(p)[0])]));
    calls.push({ ...base, body: bodies[0]?.value, query: all, label: `every query example: ${new URLSearchParams(all)}` });
  }
  return calls;
}

const operations: Array<{ path: string; method: string; op: Operation }> = [];
for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
  for (const method of METHODS) if (item[method]) operations.push({ path, method, op: item[method] as Operation });
}
const calls = operations.flatMap(({ path, method, op }) => callsOf(path, method, op));

/**
 * Ids of one mode's records (ids are unique across modes): endpoints, events, deliveries and report
 * runs (UUIDs). The demo holds these live only, so a test key's 404 on them is the contract's answer.
 */
const LIVE_ONLY = /\b(we|evt|whd)_[A-Za-z0-9]+|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/;

/** Calls that end what later calls use (an endpoint deleted, a service cancelled): after all others. */
const DESTRUCTIVE = /^(delete|cancel)/;

/**
 * A second example of a call on one service or request conflicts with the first's effect (a
 * service has one open change request, a request is decided once): the demo's examples are put
 * back before it, as `demo` again would. Nothing else is put back between writes, so the webhook
 * examples find the example endpoint as updateWebhookEndpoint's `enable` example left it.
 */
const ONE_RECORD = /^\/api\/v1\/(services|requests)\/[^/]+\//;

/** A cursor naming a record the key's mode does not hold: the list's way of saying 404. */
const isMissingCursor = (status: number, body: Json): boolean => {
  const details = (isObject(body.error) ? body.error.details : undefined) as Json | undefined;
  return status === 400 && details?.rule === 'exists' && ['starting_after', 'ending_before'].includes(String(details.field));
};

let keys: { live: string; test: string };
let credentials: Credentials;
let brokerId: string;

before(async () => {
  credentials = await t.deps.credentials();
  const demo = await runDemo(t.prisma, { credentials });
  keys = { live: demo.result.live_key, test: demo.result.test_key };
  brokerId = (await t.prisma.broker.findUniqueOrThrow({ where: { slug: DEMO_SLUG } })).id;
  // Each key makes a call per example, more than a key's 120 a minute.
  await t.prisma.apiKey.updateMany({ where: { brokerId }, data: { rateLimit: 10_000 } });
});
after(async () => {
  await t?.close();
});

/** One call with one key; the failure it shows, or undefined. */
async function run(call: Call, mode: 'live' | 'test'): Promise<string | undefined> {
  const method = call.method as 'get' | 'post' | 'put' | 'patch' | 'delete';
  let req = request(t.app)[method](call.path).set('Authorization', `Bearer ${keys[mode]}`).query(call.query);
  const body = call.body?.();
  if (body !== undefined) req = req.send(body as object);
  const res = await req;
  if (call.success.includes(res.status)) return undefined;
  const named = `${call.path} ${JSON.stringify(call.query)} ${JSON.stringify(body ?? null)}`;
  if (mode === 'test' && LIVE_ONLY.test(named) && (res.status === 404 || isMissingCursor(res.status, res.body as Json))) return undefined;
  return `${call.operationId} (${call.label}) with the ${mode} key: ${res.status} ${JSON.stringify(res.body)}`;
}

test('every operation of openapi.yaml has what its calls need: path parameter examples, a body example where a body is required, a success', () => {
  assert.ok(operations.length >= 29, String(operations.length));
  for (const { op } of operations) {
    const mine = calls.filter((c) => c.operationId === op.operationId);
    for (const call of mine) assert.doesNotMatch(call.path, /\{/, `${op.operationId}: a path parameter has no example`);
    const body = resolve(op.requestBody) as { required?: boolean } | undefined;
    if (body?.required) assert.ok(mine.every((c) => c.body !== undefined), `${op.operationId}: its required body has no example`);
    assert.ok(mine[0]!.success.length > 0, `${op.operationId} documents no success`);
  }
});

test('as a generic runner (Portman + Newman) does it: /openapi.json only, the live key, each operation once in document order', async () => {
  // One call per operation, made of its first examples only (path, query, body), as Portman's
  // collection has it; the one setting such a run needs is Portman's orderOfOperations, putting the
  // endpoint's deletion after the calls that use the endpoint.
  const once = operations.map(({ op }) => calls.find((c) => c.operationId === op.operationId && c.label.startsWith('every query example'))
    ?? calls.find((c) => c.operationId === op.operationId)!);
  const ordered = [...once.filter((c) => !c.operationId.startsWith('delete')), ...once.filter((c) => c.operationId.startsWith('delete'))];
  assert.equal(ordered.length, operations.length);
  const failures: string[] = [];
  for (const call of ordered) {
    const failure = await run(call, 'live');
    if (failure) failures.push(failure);
  }
  assert.deepEqual(failures, []);
});

test('every example answers a documented success, with the live key and with the test key', async () => {
  // From the examples' records as `demo` leaves them (the run above changed some).
  await putContractExamples(t.prisma, brokerId, { credentials, linkTtlHours: 168, now: new Date() });
  const failures: string[] = [];
  const reads = calls.filter((c) => c.method === 'get');
  const writes = calls.filter((c) => c.method !== 'get');
  const ordered = [...writes.filter((c) => !DESTRUCTIVE.test(c.operationId)), ...writes.filter((c) => DESTRUCTIVE.test(c.operationId))];
  for (const call of reads) {
    for (const mode of ['live', 'test'] as const) {
      const failure = await run(call, mode);
      if (failure) failures.push(failure);
    }
  }
  const called = new Set<string>();
  for (const call of ordered) {
    if (called.has(call.operationId) && ONE_RECORD.test(call.path)) await putContractExamples(t.prisma, brokerId, { credentials, linkTtlHours: 168, now: new Date() });
    called.add(call.operationId);
    for (const mode of ['live', 'test'] as const) {
      const failure = await run(call, mode);
      if (failure) failures.push(failure);
    }
  }
  assert.deepEqual(failures, []);
});
