#!/usr/bin/env node
// Lints openapi.yaml and builds docs/index.html, offline.
//   node scripts/docs.mjs          lint + build
//   node scripts/docs.mjs --check  lint only
// --template is Redoc's page with one CSS rule of ours (scripts/redoc-template.hbs).
// --inlineBundle embeds the Redoc scripts in the page (no CDN at view time); telemetry and the
// update notice are switched off so nothing is sent over the network.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const redocly = path.join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'redocly.cmd' : 'redocly');
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };

function run(args) {
  const result = spawnSync(redocly, args, { cwd: root, env, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

run(['lint', 'openapi.yaml', '--max-problems', '200']);
if (!process.argv.includes('--check')) {
  run(['build-docs', 'openapi.yaml', '--inlineBundle', '--template', 'scripts/redoc-template.hbs', '-o', 'docs/index.html']);
}
