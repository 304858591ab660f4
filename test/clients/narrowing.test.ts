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

mkdirSync('var', { recursive: true });
const dir = mkdtempSync(path.resolve('var', 'client-narrowing-'));

/** The client's build as a package under `root`'s node_modules, its types edited by `edit`. */
function install(root: string, edit: (schema: string) => string): void {
  const target = path.join(root, 'node_modules', '@client-api-v1', 'client');
  mkdirSync(target, { recursive: true });
  cpSync('clients/typescript/package.json', path.join(target, 'package.json'));
  cpSync('clients/typescript/dist', path.join(target, 'dist'), { recursive: true });
  const schema = path.join(target, 'dist', 'schema.d.ts');
  writeFileSync(schema, edit(readFileSync(schema, 'utf8')));
  writeFileSync(path.join(root, 'program.ts'), PROGRAM);
  writeFileSync(path.join(root, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, lib: ['ES2023', 'DOM'], types: [] },
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
  assert.match(output, /program\.ts\(\d+,\d+\): error TS2339: Property 'service_number' does not exist/);
});
