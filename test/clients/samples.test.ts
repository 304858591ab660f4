// Issue 46 item 5: every TypeScript sample an integrator reads compiles under --strict against the
// client as it is installed: each ```ts block of openapi.yaml (every description: the guides of
// /docs and each operation's) and its TypeScript x-codeSamples, of docs/*.md and of both READMEs,
// against `npm pack` of clients/typescript installed into an empty directory. The released copies
// (docs/released) are history and stay as they were published.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { runFile } from '../helpers/run-file.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Sample {
  name: string;
  source: string;
}

/** The ```ts (or ```typescript) blocks of a text: Markdown, or a description of openapi.yaml. */
function blocks(text: string): string[] {
  return [...text.matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
}

/** Every TypeScript sample of openapi.yaml: fenced blocks in any string, and x-codeSamples in TypeScript, named by where they are. */
function contractSamples(): Sample[] {
  const samples: Sample[] = [];
  const walk = (node: unknown, at: string): void => {
    if (typeof node === 'string') {
      blocks(node).forEach((source, i) => samples.push({ name: `openapi-${at}-${i}`, source }));
    } else if (Array.isArray(node)) {
      node.forEach((item, i) => walk(item, `${at}-${i}`));
    } else if (typeof node === 'object' && node !== null) {
      const sample = node as { lang?: unknown; source?: unknown };
      if (sample.lang === 'TypeScript' && typeof sample.source === 'string') samples.push({ name: `openapi-${at}`, source: sample.source });
      for (const [key, value] of Object.entries(node)) walk(value, `${at}-${key}`);
    }
  };
  walk(parse(readFileSync(path.join(ROOT, 'openapi.yaml'), 'utf8')), 'doc');
  return samples.map((s) => ({ ...s, name: s.name.replace(/[^\w-]+/g, '_') }));
}

function markdownSamples(): Sample[] {
  const files = ['README.md', 'clients/typescript/README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  return files.flatMap((file) => blocks(readFileSync(path.join(ROOT, file), 'utf8')).map((source, i) => ({ name: `${file.replace(/[^\w]+/g, '_')}-${i}`, source })));
}

let dir: string;

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'capi-samples-'));
  // Nothing of this repository's environment: its own npm cache; the package has no dependencies, so no registry is asked.
  const env = { PATH: process.env.PATH, HOME: dir, npm_config_cache: path.join(dir, '.npm') };
  const run = (file: string, args: string[], cwd: string) => runFile(file, args, { cwd, env, timeoutMs: 120_000 });
  const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], path.join(ROOT, 'clients/typescript'));
  assert.equal(packed.code, 0, packed.stdout + packed.stderr);
  const tarball = path.join(dir, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'integrator', private: true, type: 'module' }));
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--offline', tarball], dir);
  assert.equal(installed.code, 0, installed.stdout + installed.stderr);
  // The receiver of "Receiving webhooks" uses the standardwebhooks package (types only are checked).
  cpSync(realpathSync(path.join(ROOT, 'node_modules/standardwebhooks')), path.join(dir, 'node_modules/standardwebhooks'), { recursive: true });
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('every TypeScript sample of openapi.yaml, docs/ and both READMEs compiles under --strict against the packed client', async () => {
  const samples = [...contractSamples(), ...markdownSamples()];
  const names = samples.map((s) => s.name).join(' ');
  // The feed walk of "Polling the event feed", the conditional poll, an operation's sample, the READMEs'.
  assert.ok(samples.some((s) => s.source.includes("order: 'asc'")), names);
  assert.ok(samples.some((s) => s.source.includes('If-None-Match')), names);
  assert.ok(samples.filter((s) => s.name.includes('x-codeSamples')).length >= 18, names);
  assert.ok(samples.some((s) => s.name.startsWith('README_md')) && samples.some((s) => s.source.includes('verifyWebhook')), names);
  for (const { name, source } of samples) writeFileSync(path.join(dir, `${name}.ts`), source);
  // Each file a module of its own (top-level await, no names shared); the package's .d.ts and @types/node are checked.
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', moduleDetection: 'force', strict: true, noEmit: true,
      skipLibCheck: false, skipDefaultLibCheck: true, lib: ['ES2023', 'DOM'], types: ['node'], typeRoots: [path.join(ROOT, 'node_modules/@types')],
    },
    include: ['*.ts'],
  }));
  const checked = await runFile(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: dir, timeoutMs: 300_000 });
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
});
