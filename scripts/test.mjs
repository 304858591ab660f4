#!/usr/bin/env node
// Runs every test/**/*.test.ts with node's own test runner (each file in its own process, so each
// file's private database and Redis are its own). Extra arguments narrow the files by substring.
// Files start longest first (scripts/test-durations.json; a file not in it counts as the median),
// so the workers finish together instead of one running the slowest file alone at the end;
// `node --test` sorts its files by name, so scripts/test-run.mjs runs them in this order.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const filters = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const flags = process.argv.slice(2).filter((a) => a.startsWith('-'));
// TEST_SKIP: comma-separated substrings of files left out (CI's second run leaves out what reads no database).
const skipped = (process.env.TEST_SKIP ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
let known = {};
try {
  known = JSON.parse(readFileSync('scripts/test-durations.json', 'utf8'));
} catch (e) {
  if (e.code !== 'ENOENT') throw e;
}
const times = Object.values(known).sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)] ?? 0;
const seconds = (f) => known[f] ?? median;
const files = readdirSync('test', { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => path.join('test', f))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .filter((f) => !skipped.some((x) => f.includes(x)))
  .sort()
  .sort((a, b) => seconds(b) - seconds(a));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', 'scripts/test-run.mjs', `--test-concurrency=${concurrency}`, '--test-timeout=300000', ...flags, '--', ...files],
  { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' } },
);
process.exit(result.status ?? 1);
