import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_DISABLE_AFTER_HOURS, DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from '../../src/config.ts';
import { nextAttemptDelayMs, shouldDisable } from '../../src/webhooks/schedule.ts';

describe('WEBHOOK_RETRY_SCHEDULE (parseRetrySchedule)', () => {
  const rows: Array<[text: string, schedule: number[] | RegExp]> = [
    ['0,1,2', [0, 1, 2]],
    ['0, 5 ,300', [0, 5, 300]],
    ['0.5', [0.5]],
    ['0', [0]],
    ['10,0', [10, 0]],
    ['', /must list at least one delay/],
    ['  ', /must list at least one delay/],
    ['0,,2', /item 2 is ""/],
    ['0,1,', /item 3 is ""/],
    ['-1', /item 1 is "-1"/],
    ['1e3', /item 1 is "1e3"/],
    ['0x10', /item 1 is "0x10"/],
    ['Infinity', /item 1 is "Infinity"/],
    ['5s', /item 1 is "5s"/],
    ['.5', /item 1 is ".5"/],
    ['0;5', /item 1 is "0;5"/],
  ];
  for (const [text, expected] of rows) {
    test(`"${text}" → ${Array.isArray(expected) ? `[${expected.join(', ')}]` : 'refused'}`, () => {
      if (Array.isArray(expected)) assert.deepEqual(parseRetrySchedule(text), expected);
      else assert.throws(() => parseRetrySchedule(text), { message: expected });
    });
  }

  test('a refusal names the setting and says what is expected', () => {
    assert.throws(() => parseRetrySchedule('0,x'), {
      message: 'WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of seconds (non-negative numbers, such as 0,5,300): item 2 is "x"',
    });
  });
});

describe('the default schedule (Standard Webhooks)', () => {
  test('immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    assert.deepEqual(DEFAULT_RETRY_SCHEDULE, [0, 5, 300, 1800, 7200, 18000, 36000, 36000]);
  });
});

describe('the delay before the next attempt (nextAttemptDelayMs)', () => {
  const schedule = [0, 5, 300];
  // [attempts made, random(), delay in ms]: random() 0 is -10 %, 0.5 none, 0.75 +5 %.
  const rows: Array<[attemptsMade: number, random: number, delayMs: number | null]> = [
    [0, 0, 0],
    [0, 0.999, 0],
    [1, 0.5, 5000],
    [1, 0, 4500],
    [1, 0.75, 5250],
    [2, 0.5, 300_000],
    [2, 0, 270_000],
    [2, 0.25, 285_000],
    [3, 0.5, null],
    [8, 0.5, null],
  ];
  for (const [attemptsMade, random, delayMs] of rows) {
    test(`after ${attemptsMade} attempts, random ${random} → ${delayMs ?? 'no more attempts'}`, () => {
      assert.equal(nextAttemptDelayMs(schedule, attemptsMade, () => random), delayMs);
    });
  }

  test('with real randomness every delay stays within ±10 %, and they differ', () => {
    const delays = Array.from({ length: 1000 }, () => nextAttemptDelayMs(DEFAULT_RETRY_SCHEDULE, 4)!);
    for (const delay of delays) assert.ok(delay >= 6_480_000 && delay <= 7_920_000, String(delay));
    assert.ok(new Set(delays).size > 100);
  });

  test('the default schedule makes 8 attempts', () => {
    const attempts = DEFAULT_RETRY_SCHEDULE.map((_, made) => nextAttemptDelayMs(DEFAULT_RETRY_SCHEDULE, made, () => 0.5));
    assert.deepEqual(attempts, [0, 5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    assert.equal(nextAttemptDelayMs(DEFAULT_RETRY_SCHEDULE, 8), null);
  });
});

describe('disabling an endpoint that keeps failing (shouldDisable)', () => {
  const now = new Date('2026-03-10T12:00:00Z');
  const hoursAgo = (hours: number): Date => new Date(now.getTime() - hours * 3_600_000);
  const rows: Array<[failingSince: Date | null, disableAfterHours: number | undefined, disable: boolean]> = [
    [null, undefined, false],
    [hoursAgo(1), undefined, false],
    [hoursAgo(119.99), undefined, false],
    [hoursAgo(120), undefined, true],
    [hoursAgo(500), undefined, true],
    [hoursAgo(2), 1, true],
    [hoursAgo(0.5), 1, false],
  ];
  for (const [failingSince, disableAfterHours, disable] of rows) {
    test(`failing since ${failingSince?.toISOString() ?? 'never'}, after ${disableAfterHours ?? 'default'} h → ${disable ? 'disable' : 'keep'}`, () => {
      assert.equal(shouldDisable({ failingSince, now, disableAfterHours }), disable);
    });
  }

  test('the default is 120 hours', () => {
    assert.equal(DEFAULT_DISABLE_AFTER_HOURS, 120);
  });
});
