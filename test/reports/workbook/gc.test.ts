import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { test } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { canCollect, collectGarbage } from '../../../src/reports/workbook/gc.ts';
import { startThread } from '../../../src/shared/threads.ts';

// The start scripts pass no --expose-gc: the collection must work in any process.
test('collectGarbage runs a full collection without --expose-gc, and leaves no global gc in the main thread', async () => {
  assert.ok(!process.execArgv.includes('--expose-gc'));
  assert.equal(canCollect, true);
  let garbage: object | null = { rows: Array.from({ length: 1000 }, (_, i) => ({ i })) };
  const ref = new WeakRef(garbage);
  garbage = null;
  await tick(); // a WeakRef's target is kept until the job that made it has ended
  collectGarbage();
  assert.equal(ref.deref(), undefined);
  assert.equal((globalThis as { gc?: unknown }).gc, undefined);
});

// Issue 45: each thread switched the process-wide flag on and off, and one thread's "off" made
// another's `gc` undefined. 16 threads loading gc.ts at once must all be able to collect.
test('16 threads loading gc.ts at once can each run a full collection', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'capi-gc-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const probe = path.join(dir, 'probe.ts');
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
  writeFileSync(probe, `
    import { parentPort } from 'node:worker_threads';
    const { canCollect, collectGarbage } = await import(${JSON.stringify(new URL('../../../src/reports/workbook/gc.ts', import.meta.url).href)});
    let garbage: object | null = { rows: Array.from({ length: 1000 }, (_, i) => ({ i })) };
    const ref = new WeakRef(garbage);
    garbage = null;
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    parentPort!.postMessage({ canCollect, collected: ref.deref() === undefined });
  `);
  const answers = await Promise.all(Array.from({ length: 16 }, () => new Promise<unknown>((resolve, reject) => {
    const thread = startThread(pathToFileURL(probe), {});
    thread.once('message', (m) => void thread.terminate().then(() => resolve(m)));
    thread.once('error', reject);
  })));
  assert.deepEqual(answers, Array.from({ length: 16 }, () => ({ canCollect: true, collected: true })));
});
