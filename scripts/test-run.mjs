// `node --test` for scripts/test.mjs, but in the order given: node:test's run() on the files after
// `--`, with the flags before it (--test-concurrency, --test-timeout, --test-name-pattern,
// --test-only, --test-reporter and --test-reporter-destination, each as --flag=value). Any other
// flag hands the files to `node --test` itself (in its order). Each file is a process of its own
// that inherits this one's --import tsx.
import { spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { run } from 'node:test';
import * as builtin from 'node:test/reporters';
import { pathToFileURL } from 'node:url';

const split = process.argv.indexOf('--');
const flags = process.argv.slice(2, split);
const files = process.argv.slice(split + 1);
const value = (flag) => flag.slice(flag.indexOf('=') + 1);
const options = { files: files.map((f) => path.resolve(f)), concurrency: 1, timeout: Infinity };
const reporters = [];
const destinations = [];
const patterns = [];
for (const flag of flags) {
  if (flag.startsWith('--test-concurrency=')) options.concurrency = Number(value(flag));
  else if (flag.startsWith('--test-timeout=')) options.timeout = Number(value(flag));
  else if (flag.startsWith('--test-name-pattern=')) patterns.push(value(flag));
  else if (flag === '--test-only') options.only = true;
  else if (flag.startsWith('--test-reporter=')) reporters.push(value(flag));
  else if (flag.startsWith('--test-reporter-destination=')) destinations.push(value(flag));
  else {
    const fallback = spawnSync(process.execPath, [...process.execArgv, '--test', ...flags, ...files], { stdio: 'inherit' });
    process.exit(fallback.status ?? 1);
  }
}
if (patterns.length > 0) options.testNamePatterns = patterns;
if (reporters.length === 0) reporters.push('spec');

async function reporterOf(name) {
  if (Object.hasOwn(builtin, name)) return typeof builtin[name] === 'function' && /^[A-Z]/.test(builtin[name].name) ? new builtin[name]() : builtin[name];
  const module = await import(name.startsWith('.') || path.isAbsolute(name) ? pathToFileURL(path.resolve(name)).href : name);
  return module.default;
}

function destinationOf(name = 'stdout') {
  if (name === 'stdout') return process.stdout;
  if (name === 'stderr') return process.stderr;
  return createWriteStream(name);
}

const stream = run(options);
let failed = false;
stream.on('test:fail', () => (failed = true));
for (const [i, name] of reporters.entries()) stream.compose(await reporterOf(name)).pipe(destinationOf(destinations[i]));
stream.on('end', () => {
  if (failed) process.exitCode = 1;
});
