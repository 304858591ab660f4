// What client generators see in openapi.yaml: both clients an integrator is likely to use are
// generated from it (openapi-typescript + openapi-fetch, and @hey-api/openapi-ts) and a small
// program is type-checked against each. The program only compiles while request fields with a
// default stay optional, modified_since is a string, getService's credentials are always there,
// createService's 200 and 202 bodies can be told apart by their object, and error details and
// request ids are typed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from '@hey-api/openapi-ts';
import createFetchClient from 'openapi-fetch';
import openapiTS, { astToString } from 'openapi-typescript';
import { parse } from 'yaml';
import { createTestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';

// Inside the work tree, so the program resolves openapi-fetch from its node_modules.
mkdirSync('var', { recursive: true });
const dir = mkdtempSync(path.resolve('var', 'generated-clients-'));
const contract = path.resolve('openapi.yaml');

/** Types equal both ways, so widening (to unknown) and narrowing both fail. */
const HELPERS = `
export type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
export const same = <A, B>(proof: Equals<A, B>): Equals<A, B> => proof;
`;

// openapi-typescript with the options scripts/generate.mjs uses.
const OPENAPI_FETCH_PROGRAM = `
import createClient from 'openapi-fetch';
import type { paths, components } from './api.ts';
import { same } from './helpers.ts';

const client = createClient<paths>({ baseUrl: 'https://api.example.com' });

export async function run(): Promise<void> {
  // billing_cycle has a default: a body without it is a whole request.
  const created = await client.POST('/api/v1/service-create', {
    body: { plan: 'Basic VPS', hostname: 'a.example.com', customer_email: 'a@example.com' },
  });
  if (created.data) {
    const data = created.data.data;
    // 202 (a create request, no service yet) and 200 (the service), told apart by object (issue 33).
    // openapi-fetch drops a property whose type is only null (its Readable<T> helper), so
    // service_number cannot be the discriminant here; the 202's request_type is exactly 'create'.
    if (data.object === 'service_request') {
      same<typeof data.request_type, 'create'>(true);
      const id: string = data.request_id;
      const status: 'pending' | 'provider_review' | 'approved' | 'denied' = data.request_status;
      void id; void status;
    } else {
      const hostname: string = data.hostname;
      const status: 'pending' | 'active' | 'suspended' | 'cancelled' = data.status;
      void hostname; void status;
    }
  }
  // when has a default too.
  await client.POST('/api/v1/services/{service_number}/cancel', {
    params: { path: { service_number: 482913570 } },
    body: { reason: 'Moved' },
  });
  type ListQuery = NonNullable<paths['/api/v1/services']['get']['parameters']['query']>;
  same<ListQuery['modified_since'], string | undefined>(true);
  // Known scenarios are offered; any other string still type-checks.
  await client.GET('/api/v1/auth-check', { params: { header: { 'X-Test-Scenario': 'validation_error' } } });
  await client.GET('/api/v1/auth-check', { params: { header: { 'X-Test-Scenario': 'anything-else' } } });

  const detail = await client.GET('/api/v1/services/{service_number}', { params: { path: { service_number: 1 } } });
  if (detail.data) {
    const credentials: { username: string; password: string } = detail.data.data.credentials;
    void credentials;
  }
  const report = await client.POST('/api/v1/reports/invoices', {
    body: { recipients: ['a@example.com'], start_date: '2025-01-01', end_date: '2025-01-31' },
  });
  if (report.error) {
    const error = report.error.error;
    const requestId: string = error.request_id;
    // The code tells the details' shape.
    if (error.code === 'too_many_recipients') {
      const count: number = error.details.recipient_count;
      void count;
    } else if (error.code === 'no_data') {
      const start: string = error.details.start_date;
      void start;
    } else if (error.code === 'invalid_parameter') {
      const allowed: string[] | undefined = error.details.allowed;
      void allowed;
    }
    void requestId;
  }
  const forbidden: components['schemas']['InsufficientPermissionsDetails'] = { ip: '203.0.113.7', reason: 'ip_not_allowed' };
  const limited: components['schemas']['RateLimitDetails'] = { retry_after: 3 };
  const invalid: components['schemas']['InvalidParameterDetails'] = { allowed: ['Basic VPS'], field: 'plan' };
  void forbidden; void limited; void invalid;
}
`;

// @hey-api/openapi-ts with its defaults.
const HEY_API_PROGRAM = `
import { createService, cancelService, listServices, getService, sendInvoicesReport } from './hey/sdk.gen.ts';
import type { ListServicesData, InsufficientPermissionsDetails, RateLimitDetails } from './hey/types.gen.ts';
import { same } from './helpers.ts';

export async function run(): Promise<void> {
  const created = await createService({ body: { plan: 'Basic VPS', hostname: 'a.example.com', customer_email: 'a@example.com' } });
  if (created.data) {
    const data = created.data.data;
    // object tells them apart (issue 33); hey-api keeps the null-typed service_number too.
    if (data.object === 'service_request') {
      const id: string = data.request_id;
      same<typeof data.request_type, 'create'>(true);
      same<typeof data.service_number, null>(true);
      void id;
    } else {
      const hostname: string = data.hostname;
      const number: number = data.service_number;
      void hostname; void number;
    }
  }
  await cancelService({ path: { service_number: 1 }, body: { reason: 'Moved' } });
  same<NonNullable<ListServicesData['query']>['modified_since'], string | undefined>(true);
  await listServices({ query: { modified_since: '2025-03-01T10:30:00+01:00' } });
  const detail = await getService({ path: { service_number: 1 } });
  if (detail.data) {
    const credentials: { username: string; password: string } = detail.data.data.credentials;
    void credentials;
  }
  const report = await sendInvoicesReport({ body: { recipients: ['a@example.com'], start_date: '2025-01-01', end_date: '2025-01-31' } });
  if (report.error) {
    const error = report.error.error;
    const requestId: string = error.request_id;
    // The code tells the details' shape.
    if (error.code === 'too_many_recipients') {
      const count: number = error.details.recipient_count;
      void count;
    } else if (error.code === 'no_data') {
      const start: string = error.details.start_date;
      void start;
    } else if (error.code === 'invalid_parameter') {
      const allowed: string[] | undefined = error.details.allowed;
      void allowed;
    }
    void requestId;
  }
  const forbidden: InsufficientPermissionsDetails = { ip: '203.0.113.7' };
  const limited: RateLimitDetails = { retry_after: 3 };
  void forbidden; void limited;
}
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true,
    allowImportingTsExtensions: true, skipLibCheck: true, exactOptionalPropertyTypes: false,
    lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [],
  },
  files: ['openapi-fetch-program.ts', 'hey-api-program.ts'],
};

function typecheck(): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [path.resolve('node_modules/typescript/bin/tsc'), '-p', path.join(dir, 'tsconfig.json')], {
    encoding: 'utf8',
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

before(async () => {
  const ast = await openapiTS(new URL(`file://${contract}`), { defaultNonNullable: false, silent: true });
  writeFileSync(path.join(dir, 'api.ts'), astToString(ast));
  await createClient({
    input: contract,
    output: { path: path.join(dir, 'hey') },
    plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
    logs: { level: 'silent' },
  });
  writeFileSync(path.join(dir, 'helpers.ts'), HELPERS);
  writeFileSync(path.join(dir, 'openapi-fetch-program.ts'), OPENAPI_FETCH_PROGRAM);
  writeFileSync(path.join(dir, 'hey-api-program.ts'), HEY_API_PROGRAM);
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('clients generated from openapi.yaml', () => {
  it('type-check a program that relies on the contract\'s types', () => {
    const { status, output } = typecheck();
    assert.equal(status, 0, output);
  });

  it('the Client generators guide names the versions checked here and hey-api\'s TypeScript pin', () => {
    const tags = (parse(readFileSync(contract, 'utf8')) as { tags: Array<{ name: string; description: string }> }).tags;
    const guide = tags.find((tag) => tag.name === 'Client generators')?.description ?? '';
    const manifest = (name: string) => JSON.parse(readFileSync(path.resolve('node_modules', name, 'package.json'), 'utf8')) as { version: string; peerDependencies?: Record<string, string> };
    for (const name of ['@hey-api/openapi-ts', 'openapi-typescript', 'openapi-fetch', 'typescript']) {
      assert.ok(guide.includes(manifest(name).version), `the guide names ${name} ${manifest(name).version}`);
    }
    const pin = /^>=(\d+\.\d+\.\d+)/.exec(manifest('@hey-api/openapi-ts').peerDependencies?.typescript ?? '')?.[1];
    assert.ok(pin && guide.includes(`TypeScript ${pin} or later`), `the guide names hey-api's TypeScript pin (>=${pin})`);
  });

  it('openapi-typescript needs --default-non-nullable false: by default a request field with a default is required', async () => {
    const createBody = (text: string) => /\n {8}ServiceCreateBody: \{[\s\S]*?billing_cycle(\??):/.exec(text)?.[1];
    const byDefault = astToString(await openapiTS(new URL(`file://${contract}`), { silent: true }));
    assert.equal(createBody(byDefault), '', 'required with the default flags');
    assert.equal(createBody(readFileSync(path.join(dir, 'api.ts'), 'utf8')), '?', 'optional with --default-non-nullable false');
  });

  it('hey-api\'s client defaults to the production server, the first in servers', () => {
    const generated = readFileSync(path.join(dir, 'hey', 'client.gen.ts'), 'utf8');
    assert.match(generated, /baseUrl: 'https:\/\/api\.example\.com'/);
  });
});

describe('a 304 in each generated client, as the Client generators guide shows it', () => {
  it('openapi-fetch: data undefined and error an empty string; hey-api: data undefined and error {}', async () => {
    const t = await createTestApp({}, { workers: false });
    const server: Server = t.app.listen(0, '127.0.0.1');
    try {
      await once(server, 'listening');
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const key = (await apiKey(t.prisma, { scopes: ['admin:full'] })).key;
      const headers = { Authorization: `Bearer ${key}` };
      const plain = createFetchClient<Record<string, never>>({ baseUrl, headers });
      const get = plain.GET as unknown as (url: string, init?: object) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
      const first = await get('/api/v1/services');
      const etag = first.response.headers.get('ETag')!;
      const again = await get('/api/v1/services', { headers: { 'If-None-Match': etag } });
      assert.equal(again.response.status, 304);
      assert.deepEqual([again.data, again.error], [undefined, '']);

      const hey = await import(path.join(dir, 'hey', 'sdk.gen.ts')) as { listServices: (o: object) => Promise<{ data?: unknown; error?: unknown; response: Response }> };
      const heyClient = (await import(path.join(dir, 'hey', 'client.gen.ts')) as { client: { setConfig(c: object): void } }).client;
      heyClient.setConfig({ baseUrl, headers });
      const heyAgain = await hey.listServices({ headers: { 'If-None-Match': etag } });
      assert.equal(heyAgain.response.status, 304);
      assert.deepEqual([heyAgain.data, heyAgain.error], [undefined, {}]);
      await assert.rejects(hey.listServices({ headers: { 'If-None-Match': etag }, throwOnError: true }), (err: unknown) => JSON.stringify(err) === '{}');

      const guide = (parse(readFileSync(contract, 'utf8')) as { tags: Array<{ name: string; description: string }> }).tags
        .find((tag) => tag.name === 'Client generators')?.description ?? '';
      assert.ok(guide.includes("`{ data: undefined, error: '' }`") && guide.includes('`{ data: undefined, error: {} }`'), 'the guide says so');
      assert.ok(guide.includes('--default-non-nullable false'), 'the guide names the flag the generated types above need');
    } finally {
      server.close();
      await t.close();
    }
  });
});
