#!/usr/bin/env node
// A step of `npm run build`: openapi.yaml parsed once, into dist/openapi.json with the SHA-256 of
// the text it was parsed from. Parsing the 600 KB of YAML took about a second of CPU at every
// start; src/http/contract.ts reads this JSON instead (milliseconds) when the hash is the text's.
// An argument names another output file (the tests write there).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const yaml = readFileSync(path.join(ROOT, 'openapi.yaml'), 'utf8');
const out = path.resolve(process.argv[2] ?? path.join(ROOT, 'dist', 'openapi.json'));
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(
  out,
  JSON.stringify({ sha256: createHash('sha256').update(yaml).digest('hex'), document: parse(yaml) }),
);
