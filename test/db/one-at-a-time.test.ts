import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { oneAtATime } from '../../src/db/one-at-a-time.ts';

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('oneAtATime (src/db/one-at-a-time.ts)', () => {
  test('work handed over at once runs one piece at a time, in order', async () => {
    const inTurn = oneAtATime();
    const seen: string[] = [];
    const piece = (name: string) => async () => {
      seen.push(`${name} starts`);
      await tick();
      seen.push(`${name} ends`);
      return name;
    };
    const results = await Promise.all([inTurn(piece('a')), inTurn(piece('b')), inTurn(piece('c'))]);
    assert.deepEqual(results, ['a', 'b', 'c']);
    assert.deepEqual(seen, ['a starts', 'a ends', 'b starts', 'b ends', 'c starts', 'c ends']);
  });

  test('a piece that fails: its caller gets the error, and the next piece still runs', async () => {
    const inTurn = oneAtATime();
    const failing = inTurn(async () => {
      await tick();
      throw new Error('refused');
    });
    const next = inTurn(async () => 'ran');
    await assert.rejects(failing, /refused/);
    assert.equal(await next, 'ran');
  });
});
