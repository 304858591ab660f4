import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { test } from 'node:test';
import { collectGarbage } from '../../../src/reports/workbook/gc.ts';

// The start scripts no longer pass --expose-gc: the collection must work in any process.
test('collectGarbage runs a full collection without --expose-gc, and leaves no global gc behind', async () => {
  assert.ok(!process.execArgv.includes('--expose-gc'));
  let garbage: object | null = { rows: Array.from({ length: 1000 }, (_, i) => ({ i })) };
  const ref = new WeakRef(garbage);
  garbage = null;
  await tick(); // a WeakRef's target is kept until the job that made it has ended
  collectGarbage();
  assert.equal(ref.deref(), undefined);
  assert.equal((globalThis as { gc?: unknown }).gc, undefined);
});
