#!/usr/bin/env node
// The build's stamp, so that the start scripts run what `npm run build` built and never compile:
// `--write` (the last step of the build) records in dist/build-stamp.json a hash of every input
// of dist/ (the sources, the generated code, the console, openapi.yaml, the Prisma schema, the
// TypeScript settings); `--check` (the start scripts' pre-step) refuses, naming what changed, a
// dist/ built from another tree. Hashing the ~200 files takes a few tens of milliseconds.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** What dist/ is made from (tsconfig.build.json, console/build.mjs, scripts/generate.mjs --prisma) or read beside it. */
const INPUTS = ['src', 'generated', 'console', 'openapi.yaml', 'prisma/schema.prisma', 'tsconfig.json', 'tsconfig.build.json'];
const STAMP = path.join(ROOT, 'dist', 'build-stamp.json');

/** Each input file (relative path, `/`-separated) and the SHA-256 of its bytes, sorted by path. */
function inputHashes() {
  const files = [];
  for (const input of INPUTS) {
    const full = path.join(ROOT, input);
    let entries;
    try {
      entries = readdirSync(full, { recursive: true, withFileTypes: true });
    } catch (e) {
      if (e.code === 'ENOTDIR') {
        files.push(input);
        continue;
      }
      if (e.code === 'ENOENT') continue;
      throw e;
    }
    for (const d of entries) {
      if (d.isFile()) files.push(path.relative(ROOT, path.join(d.parentPath ?? d.path, d.name)).split(path.sep).join('/'));
    }
  }
  files.sort();
  return Object.fromEntries(files.map((f) => [f, createHash('sha256').update(readFileSync(path.join(ROOT, f))).digest('hex')]));
}

function treeHash(hashes) {
  return createHash('sha256').update(JSON.stringify(hashes)).digest('hex');
}

function refuse(reason) {
  process.stderr.write(`client-api-v1: ${reason}: run npm run build\n`);
  process.exit(1);
}

const mode = process.argv[2];
if (mode === '--write') {
  const files = inputHashes();
  writeFileSync(STAMP, `${JSON.stringify({ tree: treeHash(files), files }, null, 1)}\n`);
} else if (mode === '--check') {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch (e) {
    if (e.code !== 'ENOENT' && !(e instanceof SyntaxError)) throw e;
    refuse('dist/ holds no build of this tree (no readable dist/build-stamp.json)');
  }
  const files = inputHashes();
  if (treeHash(files) !== stamp.tree) {
    const was = stamp.files ?? {};
    const changed = [...new Set([...Object.keys(files), ...Object.keys(was)])].filter((f) => files[f] !== was[f]).sort();
    const named = changed.slice(0, 5).join(', ') + (changed.length > 5 ? ` and ${changed.length - 5} more` : '');
    refuse(`dist/ was built from another tree (changed since the build: ${named || 'the build stamp'})`);
  }
} else {
  process.stderr.write('usage: node scripts/build-stamp.mjs --write | --check\n');
  process.exit(2);
}
