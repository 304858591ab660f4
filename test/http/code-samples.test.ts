// Every operation's x-codeSamples in openapi.yaml (shown by Redoc) run against a real server with
// a sandbox key: the curl sample through bash, the TypeScript sample through the client in
// clients/typescript, type-checked first. A sample that no longer runs, or no longer type-checks
// against the contract, fails here. Each runs in a process of its own, several at a time; the
// TypeScript ones as one esbuild bundle each (sample and client source), run by plain node: a tsx
// start-up per sample was most of this file's time.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { parse } from 'yaml';
import { apiKey } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { runFile } from '../helpers/run-file.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SAMPLES_DIR = path.join(ROOT, 'var', `code-samples-${process.pid}`);
const BUNDLES_DIR = path.join(SAMPLES_DIR, 'bundles');

interface Sample {
  lang: string;
  label: string;
  source: string;
}

const document = parse(readFileSync(path.join(ROOT, 'openapi.yaml'), 'utf8')) as {
  paths: Record<string, Record<string, { operationId: string; 'x-codeSamples'?: Sample[] }>>;
};
const operations = Object.values(document.paths).flatMap((item) => Object.values(item));

let t: TestApp;
let server: Server;
let env: NodeJS.ProcessEnv;

const run = (file: string, args: string[], ids: Record<string, string> = {}) =>
  runFile(file, args, { cwd: ROOT, env: { ...env, ...ids }, timeoutMs: 120_000 });

/**
 * What the samples of one webhook endpoint or event read (openapi.yaml, "Code samples"): a test-mode
 * endpoint of the sample key's broker and a ping event of it, new for each sample, since the delete
 * sample deletes its endpoint; a request log's samples, the X-Request-Id of a request the key made;
 * a report run's samples, the run of a sandbox report the key made.
 * The other samples read none and get none.
 */
async function sampleIds(source: string): Promise<Record<string, string>> {
  if (/\bX_REQUEST_ID\b/.test(source)) {
    const res = await fetch(`${env.CAPI_URL}/api/v1/auth-check`, { headers: { Authorization: `Bearer ${env.CAPI_KEY}` } });
    assert.equal(res.status, 200);
    return { X_REQUEST_ID: res.headers.get('x-request-id')! };
  }
  if (/\bREPORT_ID\b/.test(source)) {
    const res = await fetch(`${env.CAPI_URL}/api/v1/reports/services`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${env.CAPI_KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ recipients: ['ops@broker.example'] }),
    });
    assert.equal(res.status, 200);
    return { REPORT_ID: ((await res.json()) as { data: { report_id: string } }).data.report_id };
  }
  if (!/\b(WEBHOOK_ENDPOINT_ID|EVENT_ID)\b/.test(source)) return {};
  const call = async (path: string, body?: object) => {
    const res = await fetch(`${env.CAPI_URL}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${env.CAPI_KEY}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
    assert.equal(res.status, 200, path);
    return ((await res.json()) as { data: { id: string } }).data.id;
  };
  const endpointId = await call('/api/v1/webhook-endpoints', { url: 'https://93.184.216.34/hook' });
  return { WEBHOOK_ENDPOINT_ID: endpointId, EVENT_ID: await call(`/api/v1/webhook-endpoints/${endpointId}/ping`) };
}

/** The TypeScript sample as a module of its own, importing the client from this repository. */
function tsFile(operationId: string, source: string): string {
  const client = path.relative(SAMPLES_DIR, path.join(ROOT, 'clients/typescript/src/index.ts'));
  const file = path.join(SAMPLES_DIR, `${operationId}.mts`);
  writeFileSync(file, source.replace("from '@client-api-v1/client'", `from './${client}'`));
  return file;
}

const tsSource = (op: (typeof operations)[number]) => op['x-codeSamples']!.find((s) => s.lang === 'TypeScript')!.source;

before(async () => {
  // Each webhook sample gets an endpoint of its own: more than one broker's default bound.
  t = await createTestApp({ webhookEndpointsPerBroker: 100 });
  server = t.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const key = await apiKey(t.prisma, { mode: 'test', scopes: ['admin:full'], rateLimit: 1000 });
  env = { ...process.env, CAPI_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, CAPI_KEY: key.key };
  mkdirSync(SAMPLES_DIR, { recursive: true });
  const files = operations.map((op) => tsFile(op.operationId, tsSource(op)));
  // Types stripped and the client's source inlined, as tsx would load them; packages stay imports.
  buildSync({ entryPoints: files, outdir: BUNDLES_DIR, outExtension: { '.js': '.mjs' }, bundle: true, packages: 'external', platform: 'node', format: 'esm', target: 'node20', logLevel: 'error' });
});
after(async () => {
  server?.close();
  await t?.close();
  rmSync(SAMPLES_DIR, { recursive: true, force: true });
});

describe('x-codeSamples', () => {
  test('every operation has a curl and a TypeScript sample', () => {
    assert.equal(operations.length, 34);
    for (const op of operations) {
      const labels = (op['x-codeSamples'] ?? []).map((s) => s.lang).sort();
      assert.deepEqual(labels, ['Shell', 'TypeScript'], op.operationId);
    }
  });

  test("every POST's curl sample that changes something sends an Idempotency-Key and retries with it", () => {
    const posts = Object.values(document.paths).flatMap((item) => (item.post ? [item.post] : []));
    assert.equal(posts.length, 18);
    for (const op of posts.filter((o) => o.operationId !== 'postAuthCheck')) {
      const curl = op['x-codeSamples']!.find((s) => s.lang === 'Shell')!.source;
      assert.match(curl, /-H "Idempotency-Key: \$\(openssl rand -hex 16\)" --retry \d/, op.operationId);
    }
  });

  test('the TypeScript samples type-check against the contract', async () => {
    writeFileSync(
      path.join(SAMPLES_DIR, 'tsconfig.json'),
      JSON.stringify({ extends: '../../tsconfig.json', compilerOptions: { module: 'NodeNext', noEmit: true }, include: ['*.mts'] }),
    );
    const checked = await run(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(SAMPLES_DIR, 'tsconfig.json')]);
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  });

  // downloadReport's samples need a link from a report e-mail: test/reports/delivery/links.test.ts runs them against one.
  // The samples share nothing but the sandbox key and its broker's data; none reads another's result.
  describe('each sample runs', { concurrency: 4 }, () => {
    for (const op of operations.filter((o) => o.operationId !== 'downloadReport')) {
      for (const sample of op['x-codeSamples'] ?? []) {
        test(`${op.operationId}: the ${sample.label} sample runs and succeeds`, async () => {
          const ids = await sampleIds(sample.source);
          const result = sample.lang === 'Shell'
            ? await run('bash', ['-c', sample.source], ids)
            : await run(process.execPath, [path.join(BUNDLES_DIR, `${op.operationId}.mjs`)], ids);
          assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
          if (sample.lang === 'Shell') assert.equal((JSON.parse(result.stdout) as { success: boolean }).success, true, result.stdout);
          else assert.notEqual(result.stdout.trim(), '', 'the sample prints what it got');
        });
      }
    }
  });
});
