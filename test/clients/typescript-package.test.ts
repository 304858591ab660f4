// The TypeScript client as an integrator gets it (issue 24): the server serves the package at
// /clients/typescript.tgz; `npm install <that URL>` into an empty directory needs nothing else (the
// package has no dependencies: openapi-fetch and standardwebhooks are vendored into dist/), its
// webhook verifier verifies what the server signs (every sample type-checks: samples.test.ts), and a sample runs with
// plain `node` (no tsx): as it is on a Node that strips types, compiled to JavaScript by
// TypeScript's transpileModule (types removed, nothing else) on one that does not.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import request from 'supertest';
import ts from 'typescript';
import { parse } from 'yaml';
import { CLIENT_PACKAGE_PATH, packClient } from '../../src/http/client-package.ts';
import { newEndpointSecret } from '../../src/webhooks/secrets.ts';
import { signatureHeaders } from '../../src/webhooks/sign.ts';
import { apiKey } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { runFile } from '../helpers/run-file.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Sample {
  lang: string;
  source: string;
}
const document = parse(readFileSync(path.join(ROOT, 'openapi.yaml'), 'utf8')) as {
  paths: Record<string, Record<string, { operationId: string; 'x-codeSamples'?: Sample[] }>>;
};
const tsSamples = Object.values(document.paths)
  .flatMap((item) => Object.values(item))
  .map((op) => ({ name: op.operationId, source: op['x-codeSamples']!.find((s) => s.lang === 'TypeScript')!.source }));

/** A README's TypeScript blocks, in order (the repository's, or the client package's). */
function readmeSamples(file = 'README.md'): string[] {
  return [...readFileSync(path.join(ROOT, file), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

let t: TestApp;
let server: Server;
let baseUrl: string;
let dir: string;
let env: NodeJS.ProcessEnv;

const run = (file: string, args: string[]) => runFile(file, args, { cwd: dir, env, timeoutMs: 120_000 });

before(async () => {
  t = await createTestApp({}, { workers: false });
  server = t.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const key = await apiKey(t.prisma, { mode: 'test', scopes: ['admin:full'], rateLimit: 1000 });
  dir = mkdtempSync(path.join(os.tmpdir(), 'capi-client-install-'));
  // Nothing of this repository's environment: its own npm cache, no tsx loader.
  env = { PATH: process.env.PATH, HOME: dir, npm_config_cache: path.join(dir, '.npm'), CAPI_URL: baseUrl, CAPI_KEY: key.key };
});
after(async () => {
  server?.close();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('how to install it', () => {
  test('/docs (openapi.yaml) and the README give the same install command and variable names', () => {
    const install = 'npm install "$CAPI_URL/clients/typescript.tgz"';
    const info = (parse(readFileSync(path.join(ROOT, 'openapi.yaml'), 'utf8')) as { info: { description: string } }).info.description;
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    for (const [name, text] of [['openapi.yaml', info], ['README.md', readme]] as const) {
      assert.ok(text.includes(install), `${name} says ${install}`);
      assert.match(text, /export CAPI_URL=/, name);
      assert.match(text, /export CAPI_KEY=sk_test_/, name);
    }
    assert.doesNotMatch(readme, /\$KEY\b|process\.env\.KEY\b/, 'the README uses CAPI_KEY as /docs does');
  });
});

describe(`GET ${CLIENT_PACKAGE_PATH}`, () => {
  test('is the packed client: gzip, ETag, Last-Modified, the security headers, 304 when unchanged', async () => {
    const res = await request(t.app).get(CLIENT_PACKAGE_PATH).buffer(true).parse((r, done) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => done(null, Buffer.concat(chunks)));
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/gzip');
    assert.equal(res.headers['content-encoding'], undefined, 'a .tgz is not compressed again');
    assert.match(String(res.headers['content-disposition']), /attachment; filename="client-api-v1-client\.tgz"/);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.match(String(res.headers['content-security-policy']), /default-src 'none'/);
    assert.ok((res.body as Buffer).equals((await packClient()).tgz), 'the same bytes as a fresh pack');
    assert.match(String(res.headers.etag), /^"[\w-]{27}"$/);
    assert.ok(res.headers['last-modified']);
    const again = await request(t.app).get(CLIENT_PACKAGE_PATH).set('If-None-Match', String(res.headers.etag));
    assert.equal(again.status, 304);
  });
});

describe('installed from the server into an empty directory', () => {
  before(async () => {
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'integrator', private: true, type: 'module' }));
    // From the URL the README gives; no registry is asked (the package has no dependencies).
    const npm = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `${baseUrl}${CLIENT_PACKAGE_PATH}`]);
    assert.equal(npm.code, 0, npm.stdout + npm.stderr);
  });

  test('the package has no dependencies and ships compiled JavaScript with its .d.ts', () => {
    const manifest = JSON.parse(readFileSync(path.join(dir, 'node_modules/@client-api-v1/client/package.json'), 'utf8'));
    assert.equal(manifest.dependencies, undefined);
    assert.deepEqual(manifest.exports['.'], { types: './dist/index.d.ts', default: './dist/index.js' });
    const installed = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    assert.equal(installed.dependencies['@client-api-v1/client'], `${baseUrl}${CLIENT_PACKAGE_PATH}`);
  });

  test('getAuthCheck runs with plain node against the server', async () => {
    const source = tsSamples.find((s) => s.name === 'getAuthCheck')!.source;
    const stripping = Boolean((process.features as { typescript?: string | false }).typescript);
    const file = path.join(dir, stripping ? 'run.ts' : 'run.mjs');
    writeFileSync(file, stripping ? source : ts.transpileModule(source, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } }).outputText);
    const result = await run(process.execPath, [file]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /Test key/, 'the key name from auth-check');
  });

  test('the README first call runs as written: its file, verbatim, with plain node, in an `npm init -y` project', async () => {
    // Issue 39: in the CommonJS project `npm init -y` makes, a `.ts` or `.js` file refuses top-level await.
    const project = mkdtempSync(path.join(dir, 'npm-init-'));
    const init = await runFile('npm', ['init', '-y'], { cwd: project, env, timeoutMs: 120_000 });
    assert.equal(init.code, 0, init.stdout + init.stderr);
    assert.notEqual(JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')).type, 'module');
    const npm = await runFile('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `${baseUrl}${CLIENT_PACKAGE_PATH}`], { cwd: project, env, timeoutMs: 120_000 });
    assert.equal(npm.code, 0, npm.stdout + npm.stderr);
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const name = /save this as `([\w-]+\.mjs)` and run `node \1`/.exec(readme)?.[1];
    assert.ok(name, 'the README names the file and the command');
    writeFileSync(path.join(project, name), readmeSamples()[0]!);
    const result = await runFile(process.execPath, [name], { cwd: project, env, timeoutMs: 120_000 });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /Test key/, 'the key name from auth-check');
  });

  test('verifyWebhook, run with plain node, verifies a delivery the server signed and refuses a changed one', async () => {
    const secret = newEndpointSecret();
    const body = JSON.stringify({ id: 'evt_installed', type: 'ping', created_at: new Date().toISOString(), mode: 'test', data: { object: {} } });
    // Two signatures, as during a rotation: the receiver holds only one of the secrets.
    const headers = signatureHeaders({ eventId: 'evt_installed', body, secrets: [newEndpointSecret(), secret] });
    writeFileSync(path.join(dir, 'delivery.json'), JSON.stringify({ secret, body, headers }));
    const script = path.join(dir, 'verify.mjs');
    writeFileSync(script, [
      "import { readFileSync } from 'node:fs';",
      "import { verifyWebhook, WebhookVerificationError } from '@client-api-v1/client';",
      "const { secret, body, headers } = JSON.parse(readFileSync(new URL('./delivery.json', import.meta.url), 'utf8'));",
      'const event = verifyWebhook(secret, body, headers);',
      "let refused = 'accepted';",
      "try { verifyWebhook(secret, body + ' ', headers); } catch (err) { refused = err instanceof WebhookVerificationError ? err.reason : String(err); }",
      'console.log(event.type, event.id, refused);',
    ].join('\n'));
    const result = await run(process.execPath, [script]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.equal(result.stdout.trim(), 'ping evt_installed signature');
  });
});

describe("Node's own type stripping (issue 24 row 2)", () => {
  // Node >= 22.18 runs .ts by stripping types; the client's sources had a parameter property,
  // which it refuses (ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX). On an older Node there is nothing to run.
  const stripping = Boolean((process.features as { typescript?: string | false }).typescript);
  test('clients/typescript/src/index.ts loads with plain node', { skip: !stripping && 'this Node does not strip types' }, async () => {
    const source = pathToFileURL(path.join(ROOT, 'clients/typescript/src/index.ts')).href;
    const result = await run(process.execPath, ['-e', `import(${JSON.stringify(source)}).then((m) => console.log(Object.keys(m).sort().join()))`]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.equal(result.stdout.trim(), 'ClientApiError,EVENT_TYPES,WebhookVerificationError,createClient,verifyWebhook');
  });
});

describe('installed from a checkout of this repository', () => {
  test('npm install <repository>/clients/typescript, then plain node imports it', async () => {
    const project = mkdtempSync(path.join(dir, 'checkout-'));
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'integrator', private: true, type: 'module' }));
    const npm = await run('npm', ['install', '--no-audit', '--no-fund', '--offline', '--prefix', project, path.join(ROOT, 'clients/typescript')]);
    assert.equal(npm.code, 0, npm.stdout + npm.stderr);
    const script = path.join(project, 'check.mjs');
    writeFileSync(script, "import { ClientApiError, createClient, verifyWebhook } from '@client-api-v1/client';\nconsole.log(typeof createClient, typeof verifyWebhook, new ClientApiError('not_found', 'x', 404, undefined, undefined).code);\n");
    const result = await run(process.execPath, [script]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.equal(result.stdout.trim(), 'function function not_found');
  });
});
