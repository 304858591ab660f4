/** The recipients and date rules as functions (the HTTP tests cover them through the API). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../src/http/errors.ts';
import { validateDateRange } from '../../src/reports/rules.ts';
import { isCalendarDate } from '../../src/shared/dates.ts';
import { isEmailAddress, normalizeRecipients } from '../../src/reports/rules.ts';

const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError);
    return err.code;
  }
  return 'ok';
};

describe('normalizeRecipients', () => {
  test('trims, lower-cases, drops empty items and de-duplicates, keeping first-seen order', () => {
    assert.deepEqual(normalizeRecipients([' B@X.example', '', 'a@x.example', 'b@x.example ', '  ']), ['b@x.example', 'a@x.example']);
  });
  test('codes', () => {
    assert.equal(codeOf(() => normalizeRecipients(undefined)), 'missing_parameter');
    assert.equal(codeOf(() => normalizeRecipients(null)), 'missing_parameter');
    assert.equal(codeOf(() => normalizeRecipients('a@x.example')), 'invalid_parameter');
    assert.equal(codeOf(() => normalizeRecipients([1])), 'invalid_parameter');
    assert.equal(codeOf(() => normalizeRecipients([null])), 'invalid_parameter');
    assert.equal(codeOf(() => normalizeRecipients(['nope'])), 'invalid_parameter');
    assert.equal(codeOf(() => normalizeRecipients([''])), 'invalid_parameter');
    assert.equal(codeOf(() => normalizeRecipients(Array.from({ length: 11 }, (_, i) => `u${i}@x.example`))), 'too_many_recipients');
    assert.equal(codeOf(() => normalizeRecipients(Array.from({ length: 11 }, (_, i) => `U${i % 10}@x.example`))), 'ok');
  });
  test('invalid_parameter details carry max_recipients: 10', () => {
    try {
      normalizeRecipients(['ok@x.example', 'bad']);
      assert.fail('expected an error');
    } catch (err) {
      assert.ok(err instanceof ApiError);
      assert.deepEqual(err.details, { field: 'recipients[1]', location: 'body', rule: 'email', reason: 'not a valid e-mail address', max_recipients: 10 });
    }
  });
  test('addresses', () => {
    for (const ok of ['a@b.example', 'first.last+tag@sub.domain.example', "o'brien@x.example"]) assert.ok(isEmailAddress(ok), ok);
    for (const bad of ['a', 'a@', '@b.example', 'a@b', 'a b@c.example', 'a@b..example', 'a@-b.example', `${'x'.repeat(65)}@b.example`]) {
      assert.ok(!isEmailAddress(bad), bad);
    }
  });
});

describe('validateDateRange', () => {
  test('calendar dates', () => {
    assert.ok(isCalendarDate('2024-02-29'));
    assert.ok(!isCalendarDate('2025-02-29'));
    assert.ok(!isCalendarDate('2026-02-30'));
    assert.ok(!isCalendarDate('2025-00-10'));
    assert.ok(!isCalendarDate('2025-1-1'));
  });
  test('codes', () => {
    assert.equal(codeOf(() => validateDateRange(undefined, '2025-01-01')), 'missing_parameter');
    assert.equal(codeOf(() => validateDateRange('', '2025-01-01')), 'missing_parameter');
    assert.equal(codeOf(() => validateDateRange('2025-01-01', '2025-01-01')), 'ok');
    assert.equal(codeOf(() => validateDateRange('2025-01-02', '2025-01-01')), 'invalid_parameter');
    assert.equal(codeOf(() => validateDateRange('2025-02-30', '2025-03-01')), 'invalid_parameter');
  });
  test('missing dates name both date fields as required', () => {
    try {
      validateDateRange('', undefined, ['recipients', 'start_date', 'end_date']);
      assert.fail('expected an error');
    } catch (err) {
      assert.ok(err instanceof ApiError);
      assert.deepEqual(err.details, { required: ['recipients', 'start_date', 'end_date'], missing: ['start_date', 'end_date'] });
    }
  });
});
