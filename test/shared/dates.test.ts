import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseDateOnly, parseTimestamp } from '../../src/cli/values.ts';
import { calendarDate, dateOrInstant, isCalendarDate } from '../../src/shared/dates.ts';

// One set of date rules for the API's formats, modified_since, report ranges and the CLI.
describe('calendar dates (src/shared/dates.ts)', () => {
  const rows: Array<[string, string | undefined]> = [
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    ['2025-02-29', undefined],
    ['2026-04-31', undefined],
    ['0001-01-01', '0001-01-01T00:00:00.000Z'],
    // Years 1-99 are years 1-99, not 1901-1999 (Date.UTC's mapping).
    ['0050-06-15', '0050-06-15T00:00:00.000Z'],
    ['0099-12-31', '0099-12-31T00:00:00.000Z'],
    ['0000-01-01', undefined],
    ['9999-12-31', '9999-12-31T00:00:00.000Z'],
    ['2026-1-5', undefined],
  ];
  for (const [text, iso] of rows) {
    test(`${text} → ${iso ?? 'not a date'}`, () => {
      assert.equal(isCalendarDate(text), iso !== undefined);
      assert.equal(calendarDate(text)?.toISOString(), iso);
      assert.equal(dateOrInstant(text)?.toISOString(), iso);
    });
  }

  test('the CLI reads dates by the same rules as the API', () => {
    assert.equal(parseDateOnly('0050-06-15').toISOString(), '0050-06-15T00:00:00.000Z');
    assert.equal(parseTimestamp('0050-06-15').toISOString(), '0050-06-15T00:00:00.000Z');
    assert.equal(parseTimestamp('2030-01-02 03:04:05+02:00').toISOString(), '2030-01-02T01:04:05.000Z');
    assert.equal(parseTimestamp('2030-01-02T03:04:05+02').toISOString(), '2030-01-02T01:04:05.000Z');
  });
});
