// Issue 33: the TypeScript client's types tell an answer's kinds apart by `object`. A program that
// narrows createService's 200 (a service) and 202 (a create request), the plan changes' answers and
// an event's object on it is type-checked against the client's build (clients/typescript/dist, what
// an integrator installs), with `@ts-expect-error` on what the other branch would allow; the same
// program against that build with `object` taken out of its types must fail, so the narrowing is
// what makes it compile.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

const PROGRAM = `
import { createClient, type WebhookEvent } from '@client-api-v1/client';

const api = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_test_x' });

export async function created(): Promise<void> {
  const { data: d } = await api.POST('/api/v1/service-create', {
    body: { plan: 'Standard VPS', hostname: 'shop.example.com', customer_email: 'jane@example.com' },
  });
  if (!d) return;
  if (d.data.object === 'service') {
    const number: number = d.data.service_number;
    const status: 'pending' | 'active' | 'suspended' | 'cancelled' = d.data.status;
    // @ts-expect-error: a service is no request
    void d.data.request_id;
    void number; void status;
  } else {
    const kind: 'service_request' = d.data.object;
    const id: string = d.data.request_id;
    const type: 'create' = d.data.request_type;
    // @ts-expect-error: a request has request_status, not a service's status
    void d.data.status;
    void kind; void id; void type;
  }
}

export async function planChanges(): Promise<void> {
  const params = { path: { service_number: 482913570 } };
  const { data: up } = await api.POST('/api/v1/services/{service_number}/upgrade', { params, body: { plan: 'Professional VPS' } });
  const { data: down } = await api.POST('/api/v1/services/{service_number}/downgrade', { params, body: { plan: 'Basic VPS' } });
  for (const answer of [up, down]) {
    if (!answer) continue;
    const kind: 'service_request' = answer.data.object;
    // @ts-expect-error: a plan change answers a request, never a service
    if (answer.data.object === 'service') return;
    void kind;
  }
}

export async function eventObjects(): Promise<void> {
  const { data: page } = await api.GET('/api/v1/events');
  for (const e of page?.data ?? []) {
    const kind: 'event' = e.object;
    const object = e.data.object;
    if (object.object === 'report') {
      const id: string = object.report_id;
      void id;
    } else if (object.object === 'ping') {
      const endpoint: string = object.endpoint_id;
      // @ts-expect-error: a ping's object is no service
      void object.service_number;
      void endpoint;
    }
    void kind;
  }
}

export function delivered(event: WebhookEvent): void {
  const kind: 'event' = event.object;
  if (event.type === 'service.created') {
    const service: 'service' = event.data.object.object;
    void service;
  }
  void kind;
}
`;

// Issue 39 item 7: a 304 is its own case. With If-None-Match sent, `data` is there only once the
// NotModified case is ruled out; without it there is no 304 to handle. createService's 200 and 202
// are told apart by \`status\`, each with its own \`data\`.
const CONDITIONAL = `
import { createClient, type Middleware } from '@client-api-v1/client';

const api = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_test_x' });

export async function conditional(etag: string): Promise<number> {
  const r = await api.GET('/api/v1/services', { params: { header: { 'If-None-Match': etag } } });
  // @ts-expect-error: no error does not mean a body: a 304 has none
  if (!r.error) void r.data.data;
  if (r.notModified) {
    const status: 304 = r.status;
    return status;
  }
  const status: 200 = r.status;
  return r.data.data.length + status;
}

export async function byHeaders(etag: string): Promise<void> {
  const r = await api.GET('/api/v1/webhook-endpoints', { headers: { 'If-None-Match': etag } });
  // @ts-expect-error: a 304 has no data
  void r.data.data;
  if (r.status === 304) return;
  void r.data.data;
}

export async function unconditional(): Promise<number> {
  const r = await api.GET('/api/v1/services');
  // @ts-expect-error: without If-None-Match there is no 304 to test for
  if (r.status === 304) return 0;
  return r.data.data.length;
}

export async function createdOrRequested(): Promise<string> {
  const r = await api.POST('/api/v1/service-create', {
    body: { plan: 'Standard VPS', hostname: 'shop.example.com', customer_email: 'jane@example.com' },
  });
  const status: 200 | 202 = r.status;
  void status;
  // @ts-expect-error: 201 is no answer of createService
  if (r.status === 201) return '';
  if (r.status === 200) return String(r.data.data.service_number);
  return r.data.data.request_id;
}

// Issue 46: the calls of HOLES below as a typed result, each ruling out the 304 before it reads data.

const etag = '"abc"';
const addsEtag: Middleware = { onRequest({ request }) { request.headers.set('If-None-Match', etag); } };
const viaFetch = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_test_x', fetch: (input, init) => fetch(input, init) });
const viaMiddleware = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_test_x', middleware: [addsEtag] });

export async function handled(): Promise<number> {
  const a = await viaFetch.GET('/api/v1/services');
  const b = await viaMiddleware.POST('/api/v1/auth-check');
  const c = await api.GET('/api/v1/services', { headers: { 'if-none-match': etag } });
  if (a.notModified || b.status === 304 || c.notModified) return 0;
  const plain = await api.GET('/api/v1/services', { headers: { Accept: 'application/json' } });
  return a.data.data.length + Number(b.data.data.write_access) + c.data.data.length + plain.data.data.length;
}
`;

// Issue 46 item 5: the three ways a call was sent conditional behind the types' back, each of which
// compiled and then read `data` of a 304 at run time. Every line marked `// TSxxxx` must be
// refused with that error, and no other line.
const HOLES = `
import { createClient, type Middleware } from '@client-api-v1/client';

const etag = '"abc"';
const addsEtag: Middleware = { onRequest({ request }) { request.headers.set('If-None-Match', etag); } };
const conditionalFetch = (input: RequestInfo | URL, init?: RequestInit) => {
  const request = new Request(input, init);
  request.headers.set('If-None-Match', etag);
  return fetch(request);
};
const api = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_test_x' });
const viaFetch = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_test_x', fetch: conditionalFetch });
const viaMiddleware = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_test_x', middleware: [addsEtag] });

export async function throughClientFetch(): Promise<number> {
  const r = await viaFetch.GET('/api/v1/services');
  return r.data.data.length; // TS18048
}
export async function throughUse(): Promise<number> {
  api.use(addsEtag); // TS2339
  const r = await api.GET('/api/v1/services');
  return r.data.data.length;
}
export async function throughMiddlewareOption(): Promise<number> {
  const r = await viaMiddleware.GET('/api/v1/services');
  return r.data.data.length; // TS18048
}
export async function spelledOtherwise(): Promise<number> {
  const r = await api.GET('/api/v1/services', { headers: { 'If-None-match': etag } });
  return r.data.data.length; // TS18048
}
export async function spelledInParams(): Promise<void> {
  await api.GET('/api/v1/services', { params: { header: { 'if-none-match': etag } } }); // TS2353
}
export async function throughCallFetch(): Promise<number> {
  const r = await api.GET('/api/v1/services', { fetch: conditionalFetch });
  return r.data.data.length; // TS18048
}
export async function throughCallMiddleware(): Promise<number> {
  const r = await api.GET('/api/v1/services', { middleware: [addsEtag] });
  return r.data.data.length; // TS18048
}
export async function unseenHeaders(headers: HeadersInit): Promise<number> {
  const r = await api.GET('/api/v1/services', { headers });
  return r.data.data.length; // TS18048
}
export async function throughRequest(): Promise<void> {
  await api.request('get', '/api/v1/services', { headers: { 'If-None-Match': etag } }); // TS2339
}
`;


/** The code issue 39 saw crash: only \`error\` checked on a conditional call. */
const UNCHECKED = (client: string) => `
import { createClient } from '@client-api-v1/client';
${client}

export async function crashes(etag: string): Promise<void> {
  const r = await api.GET('/api/v1/services', { params: { header: { 'If-None-Match': etag } } });
  if (!r.error) console.log(r.data.data.length);
}
`;
const OURS = "const api = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_test_x' });";
// openapi-fetch's own client type, which the bundled client answered with before issue 39.
const PLAIN = [
  "import type { Client } from './node_modules/@client-api-v1/client/dist/vendor/openapi-fetch.js';",
  "import type { paths } from '@client-api-v1/client';",
  "const api = createClient({ baseUrl: 'https://api.example.com', apiKey: 'sk_test_x' }) as unknown as Client<paths>;",
].join('\n');

mkdirSync('var', { recursive: true });
const dir = mkdtempSync(path.resolve('var', 'client-narrowing-'));

/** The client's build as a package under `root`'s node_modules, its types edited by `edit`. */
function install(root: string, edit: (schema: string) => string, program = PROGRAM): void {
  const target = path.join(root, 'node_modules', '@client-api-v1', 'client');
  mkdirSync(target, { recursive: true });
  cpSync('clients/typescript/package.json', path.join(target, 'package.json'));
  cpSync('clients/typescript/dist', path.join(target, 'dist'), { recursive: true });
  const schema = path.join(target, 'dist', 'schema.d.ts');
  writeFileSync(schema, edit(readFileSync(schema, 'utf8')));
  writeFileSync(path.join(root, 'program.ts'), program);
  // The client's own .d.ts are checked (skipLibCheck false); TypeScript's lib files are not ours (~40 % of each tsc's CPU).
  writeFileSync(path.join(root, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, skipDefaultLibCheck: true, lib: ['ES2023', 'DOM'], types: [] },
    files: ['program.ts'],
  }));
}

function typecheck(root: string): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [path.resolve('node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.json')], { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** Every `object: "<kind>";` member of the client's types. */
const OBJECT_MEMBER = /^\s*object: "[a-z_]+";\n/gm;

before(() => {
  install(path.join(dir, 'with'), (schema) => schema);
  install(path.join(dir, 'without'), (schema) => {
    assert.ok((schema.match(OBJECT_MEMBER) ?? []).length >= 10, 'the client types each resource\'s object');
    return schema.replace(OBJECT_MEMBER, '');
  });
  install(path.join(dir, 'conditional'), (schema) => schema, CONDITIONAL);
  install(path.join(dir, 'unchecked'), (schema) => schema, UNCHECKED(OURS));
  install(path.join(dir, 'unchecked-plain'), (schema) => schema, UNCHECKED(PLAIN));
  install(path.join(dir, 'holes'), (schema) => schema, HOLES);
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('the client narrows createService, the plan changes and event objects on `object`', () => {
  const { status, output } = typecheck(path.join(dir, 'with'));
  assert.equal(status, 0, output);
});

test('without `object` in its types the same program does not compile', () => {
  const { status, output } = typecheck(path.join(dir, 'without'));
  assert.notEqual(status, 0, 'it compiled without object');
  assert.match(output, /program\.ts\(\d+,\d+\): error TS2339: Property 'object' does not exist/);
  assert.match(output, /program\.ts\(\d+,\d+\): error TS2339: Property 'request_id' does not exist/);
});

test('a 304 is its own case: handled before data is read when If-None-Match was sent; 200 and 202 by status', () => {
  const { status, output } = typecheck(path.join(dir, 'conditional'));
  assert.equal(status, 0, output);
});

test('reading data after checking only error on a conditional call does not compile (it did with openapi-fetch\'s types)', () => {
  const ours = typecheck(path.join(dir, 'unchecked'));
  assert.notEqual(ours.status, 0, 'it compiled');
  assert.match(ours.output, /program\.ts\(7,\d+\): error TS18048: 'r\.data' is possibly 'undefined'/);
  assert.equal(ours.output.match(/error TS/g)?.length, 1, ours.output);
  const plain = typecheck(path.join(dir, 'unchecked-plain'));
  assert.equal(plain.status, 0, plain.output);
});

test('no way of sending If-None-Match compiles and then reads data of a 304: custom fetch, middleware, use(), any spelling', () => {
  const expected = HOLES.split('\n').flatMap((line, i) => {
    const code = /\/\/ (TS\d+)$/.exec(line)?.[1];
    return code ? [`${i}:${code}`] : [];
  });
  assert.ok(expected.length >= 9);
  const { status, output } = typecheck(path.join(dir, 'holes'));
  assert.notEqual(status, 0, 'it compiled');
  const found = [...output.matchAll(/program\.ts\((\d+),\d+\): error (TS\d+)/g)].map((m) => `${Number(m[1]) - 1}:${m[2]}`);
  assert.deepEqual(found, expected, output);
});
