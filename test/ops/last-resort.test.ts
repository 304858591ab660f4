// The process-wide last resort (src/ops/last-resort.ts): a child process that throws, or leaves a
// rejection unhandled, logs the stack, counts it in DATA_DIR and exits with EXIT_UNCAUGHT
// promptly; the next process of the role starts its /metrics counter from that count.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { countFileOf, EXIT_UNCAUGHT } from '../../src/ops/last-resort.ts';
import { runFile } from '../helpers/run-file.ts';
import { ROOT, tmpDir } from './helpers.ts';

const data = tmpDir('capi-last-resort-');
after(() => data.remove());

const lastResort = pathToFileURL(path.join(ROOT, 'src/ops/last-resort.ts')).href;
const metrics = pathToFileURL(path.join(ROOT, 'src/ops/metrics.ts')).href;

/** A child that installs the last resort as the entry points do, prints its counter, then fails as `how` says. */
function child(name: string, how: string): string {
  const file = path.join(data.dir, `${name}.mts`);
  writeFileSync(file, [
    `import { exitOnUncaught } from ${JSON.stringify(lastResort)};`,
    `import { registry } from ${JSON.stringify(metrics)};`,
    `exitOnUncaught('worker');`,
    `const line = (await registry.metrics()).split('\\n').find((l) => l.startsWith('process_uncaught_exceptions_total '));`,
    `console.log('COUNTER ' + line);`,
    // A server keeps its event loop busy: the exit must not wait for it.
    `setInterval(() => undefined, 1000);`,
    how,
  ].join('\n'));
  return file;
}

async function run(file: string) {
  const result = await runFile(process.execPath, ['--import', 'tsx', file], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: data.dir, LOG_LEVEL: 'silent' },
    timeoutMs: 60_000,
  });
  const fatal = result.stdout.split('\n').filter((l) => l.includes('"level":60')).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { ...result, fatal };
}

test('an uncaught exception: its stack logged once (even at LOG_LEVEL=silent), counted in DATA_DIR, exit non-zero', async () => {
  const r = await run(child('throws', `setTimeout(() => { throw new Error('boom from a timer'); }, 50);`));
  assert.equal(r.code, EXIT_UNCAUGHT, r.stderr);
  assert.equal(r.fatal.length, 1, r.stdout);
  const line = r.fatal[0]!;
  const err = line.err as { message: string; stack: string };
  assert.equal(err.message, 'boom from a timer');
  assert.match(err.stack, /Error: boom from a timer\n\s+at /);
  assert.equal(line.origin, 'uncaughtException');
  assert.equal(line.uncaughtExceptions, 1);
  assert.match(r.stdout, /COUNTER process_uncaught_exceptions_total 0/);
  assert.equal(JSON.parse(readFileSync(countFileOf(data.dir, 'worker'), 'utf8')).count, 1);
});

test('an unhandled rejection ends the process the same way, and the next process starts its counter from the file', async () => {
  const r = await run(child('rejects', `setTimeout(() => { void Promise.reject(new TypeError('results[i] is not iterable')); }, 50);`));
  assert.equal(r.code, EXIT_UNCAUGHT, r.stderr);
  assert.equal(r.fatal.length, 1, r.stdout);
  assert.equal(r.fatal[0]!.origin, 'unhandledRejection');
  assert.match((r.fatal[0]!.err as { stack: string }).stack, /TypeError: results\[i\] is not iterable/);
  // The first test's crash was recorded: this process's /metrics began at 1, and it counted its own.
  assert.match(r.stdout, /COUNTER process_uncaught_exceptions_total 1/);
  assert.equal(r.fatal[0]!.uncaughtExceptions, 2);
  assert.equal(JSON.parse(readFileSync(countFileOf(data.dir, 'worker'), 'utf8')).count, 2);
});

test('a throw while the module is still being evaluated (an entry point\'s top level) is the last resort\'s too', async () => {
  const r = await run(child('top-level', `throw new Error('at once');`));
  assert.equal(r.code, EXIT_UNCAUGHT, r.stderr);
  assert.equal(r.fatal.length, 1, r.stdout);
  assert.equal((r.fatal[0]!.err as { message: string }).message, 'at once');
});

test('every entry point installs the last resort for its role', () => {
  for (const role of ['all', 'api', 'worker']) {
    const source = readFileSync(path.join(ROOT, 'src/main', `${role}.ts`), 'utf8');
    assert.match(source, new RegExp(`exitOnUncaught\\('${role}'\\);\\n`), `src/main/${role}.ts`);
  }
});
