#!/usr/bin/env node
// Fails when docs/index.html (the published Redoc reference) was not rebuilt after openapi.yaml changed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const fresh = path.join(mkdtempSync(path.join(os.tmpdir(), 'capi-docs-')), 'index.html');
// The same build as `npm run docs` (scripts/docs.mjs): inline bundle, no telemetry.
const result = spawnSync(path.join('node_modules', '.bin', 'redocly'), ['build-docs', 'openapi.yaml', '--inlineBundle', '--template', 'scripts/redoc-template.hbs', '--output', fresh], {
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
});
if (result.status !== 0) process.exit(result.status ?? 1);
const committed = existsSync('docs/index.html') ? readFileSync('docs/index.html', 'utf8') : '';
if (readFileSync(fresh, 'utf8') !== committed) {
  console.error('docs/index.html is stale: run `npm run docs` and commit the result');
  process.exit(1);
}
console.log('docs/index.html is up to date with openapi.yaml');
