#!/usr/bin/env node
// Writes what is generated from the sources of truth:
//   generated/api.ts    <- openapi.yaml (openapi-typescript; committed, checked fresh in CI)
//   clients/typescript/src/schema.ts <- the same types, for the TypeScript client package (committed, checked)
//   generated/prisma/   <- prisma/schema.prisma (prisma generate; build output, not committed)
// `--check` regenerates the API types to a temporary file and fails if the committed copy differs.
// `--prisma` / `--api` limit the run to one of them.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const args = new Set(process.argv.slice(2));
const only = args.has('--prisma') ? 'prisma' : args.has('--api') ? 'api' : 'all';
const bin = (name) => path.join('node_modules', '.bin', name);
const CLIENT_SCHEMA = 'clients/typescript/src/schema.ts';

function run(command, argv, env = {}) {
  const result = spawnSync(command, argv, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

function apiTypes(target) {
  // Not the default: a request field with a `default` (billing_cycle, when) stays optional.
  run(bin('openapi-typescript'), ['openapi.yaml', '--output', target, '--silent', '--default-non-nullable', 'false']);
}

if (args.has('--check')) {
  const fresh = path.join(mkdtempSync(path.join(os.tmpdir(), 'capi-gen-')), 'api.ts');
  apiTypes(fresh);
  for (const file of ['generated/api.ts', CLIENT_SCHEMA]) {
    const committed = existsSync(file) ? readFileSync(file, 'utf8') : '';
    if (readFileSync(fresh, 'utf8') !== committed) {
      console.error(`${file} is stale: run \`npm run generate\` and commit the result`);
      process.exit(1);
    }
  }
  console.log('generated/api.ts and the TypeScript client\'s schema are up to date with openapi.yaml');
  process.exit(0);
}

if (only !== 'prisma') {
  apiTypes('generated/api.ts');
  copyFileSync('generated/api.ts', CLIENT_SCHEMA);
}
if (only !== 'api') {
  // prisma generate needs no engine, but its CLI insists a schema-engine path exists; no download
  // can happen here, so point it at any existing file (the node binary).
  run(bin('prisma'), ['generate'], {
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
  });
}
