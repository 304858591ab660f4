import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { canonicalRequestId, formatRequestId, isStorableRequestId, parseRequestId } from '../../src/shared/ids.ts';
import { requestMatches, sandboxRequest } from '../../src/requests/sandbox.ts';
import { addMonthsClamped, endOfCurrentBillingPeriod } from '../../src/services/billing.ts';
import { escapeLike, isUniqueViolation } from '../../src/shared/db-errors.ts';
import { generatePassword, GENERATED_PASSWORD_LENGTH, PASSWORD_ALPHABET } from '../../src/services/generate.ts';
import { randomSandboxRequestNumber, randomServiceNumber } from '../../src/shared/ids.ts';
import { intParam, pageParams, textParam } from '../../src/http/params.ts';
import { parseInstant, serviceNumberParam } from '../../src/services/adapter.ts';
import { clampInstant, isoInstant } from '../../src/shared/dates.ts';
import { sandboxPage, sandboxService, serviceMatches } from '../../src/services/sandbox.ts';

describe('request ids', () => {
  test('formatted as REQ- plus at least six digits', () => {
    assert.equal(formatRequestId(42), 'REQ-000042');
    assert.equal(formatRequestId(123456), 'REQ-123456');
    assert.equal(formatRequestId(1234567), 'REQ-1234567');
  });

  test('parsed case-insensitively, with any padding', () => {
    assert.equal(parseRequestId('req-42'), 42n);
    assert.equal(parseRequestId('ReQ-000042'), 42n);
    assert.equal(parseRequestId('REQ-'), undefined);
    assert.equal(parseRequestId('RQ-1'), undefined);
    assert.equal(canonicalRequestId(parseRequestId('req-7')!), 'REQ-000007');
  });

  test('ids beyond the database column are well-formed but never stored', () => {
    assert.equal(isStorableRequestId(99999999999999999999n), false);
    assert.equal(isStorableRequestId(0n), false);
    assert.equal(isStorableRequestId(2147483647n), true);
  });
});

describe('generated values', () => {
  test('service numbers have nine digits', () => {
    for (let i = 0; i < 1000; i += 1) {
      const n = randomServiceNumber();
      assert.ok(n >= 100000000 && n <= 999999999, String(n));
    }
  });

  test('sandbox request numbers have six digits', () => {
    for (let i = 0; i < 200; i += 1) assert.match(formatRequestId(randomSandboxRequestNumber()), /^REQ-\d{6}$/);
  });

  test('passwords: 20 characters of the safe alphabet, mixed classes, not repeated', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i += 1) {
      const p = generatePassword();
      assert.equal(p.length, GENERATED_PASSWORD_LENGTH);
      for (const c of p) assert.ok(PASSWORD_ALPHABET.includes(c), c);
      assert.match(p, /[A-Z]/);
      assert.match(p, /[a-z]/);
      assert.match(p, /[0-9]/);
      seen.add(p);
    }
    assert.equal(seen.size, 200);
  });
});

describe('billing periods', () => {
  const d = (s: string) => new Date(s);

  test('months are added from the anchor and clamped to the month end', () => {
    assert.equal(addMonthsClamped(d('2025-01-31T10:00:00.000Z'), 1).toISOString(), '2025-02-28T10:00:00.000Z');
    assert.equal(addMonthsClamped(d('2024-01-31T10:00:00.000Z'), 1).toISOString(), '2024-02-29T10:00:00.000Z');
    assert.equal(addMonthsClamped(d('2025-01-31T10:00:00.000Z'), 3).toISOString(), '2025-04-30T10:00:00.000Z');
    assert.equal(addMonthsClamped(d('2025-11-15T00:00:00.000Z'), 2).toISOString(), '2026-01-15T00:00:00.000Z');
  });

  test('end of the current period: the first boundary after now', () => {
    const created = d('2025-01-31T10:00:00.000Z');
    assert.equal(endOfCurrentBillingPeriod(created, 'monthly', d('2025-02-10T00:00:00.000Z')).toISOString(), '2025-02-28T10:00:00.000Z');
    assert.equal(endOfCurrentBillingPeriod(created, 'monthly', d('2025-03-01T00:00:00.000Z')).toISOString(), '2025-03-31T10:00:00.000Z');
    // Exactly on a boundary: that period has just ended, the next one ends a cycle later.
    assert.equal(endOfCurrentBillingPeriod(created, 'monthly', d('2025-03-31T10:00:00.000Z')).toISOString(), '2025-04-30T10:00:00.000Z');
    assert.equal(endOfCurrentBillingPeriod(created, 'quarterly', d('2025-06-01T00:00:00.000Z')).toISOString(), '2025-07-31T10:00:00.000Z');
    assert.equal(endOfCurrentBillingPeriod(created, 'annually', d('2027-05-01T00:00:00.000Z')).toISOString(), '2028-01-31T10:00:00.000Z');
    // Created in the future (clock skew): one cycle after creation.
    assert.equal(endOfCurrentBillingPeriod(created, 'monthly', d('2025-01-01T00:00:00.000Z')).toISOString(), '2025-02-28T10:00:00.000Z');
  });

  test('the end is always after now and at most one cycle later', () => {
    const created = d('2023-08-31T23:59:59.999Z');
    for (let day = 0; day < 900; day += 7) {
      const now = new Date(created.getTime() + day * 86_400_000 + 3_600_000);
      for (const cycle of ['monthly', 'quarterly', 'annually'] as const) {
        const end = endOfCurrentBillingPeriod(created, cycle, now);
        assert.ok(end > now, `${cycle} ${now.toISOString()} -> ${end.toISOString()}`);
        const months = { monthly: 1, quarterly: 3, annually: 12 }[cycle];
        assert.ok(end <= addMonthsClamped(now, months + 1));
      }
    }
  });
});

describe('helpers', () => {
  test('LIKE wildcards are escaped', () => {
    assert.equal(escapeLike('50%_a\\b'), '50\\%\\_a\\\\b');
  });

  test('unique violations are recognised by their target', () => {
    const err = { code: 'P2002', meta: { driverAdapterError: { cause: { constraint: { fields: ['service_number'] } } } } };
    assert.equal(isUniqueViolation(err), true);
    assert.equal(isUniqueViolation(err, 'service_number'), true);
    assert.equal(isUniqueViolation(err, 'hostname'), false);
    assert.equal(isUniqueViolation(new Error('x')), false);
  });

  test('modified_since: a date is midnight UTC; a date-time keeps its offset', () => {
    assert.equal(parseInstant('2025-03-01').toISOString(), '2025-03-01T00:00:00.000Z');
    assert.equal(parseInstant('2025-03-01T09:30:00+02:00').toISOString(), '2025-03-01T07:30:00.000Z');
    assert.equal(parseInstant('2025-03-01T09:30:00').toISOString(), '2025-03-01T09:30:00.000Z');
  });

  test('modified_since takes ISO 8601 extended date-times, not only RFC 3339 ones', () => {
    for (const [text, iso] of [
      ['2025-03-01T09:30Z', '2025-03-01T09:30:00.000Z'],
      ['2025-03-01T09:30', '2025-03-01T09:30:00.000Z'],
      ['2025-03-01T10:30:00+0100', '2025-03-01T09:30:00.000Z'],
      ['2025-03-01T10:30+01', '2025-03-01T09:30:00.000Z'],
      ['2025-03-01T09:30:00.123456z', '2025-03-01T09:30:00.123Z'],
      ['2025-03-01t04:00:00-05:30', '2025-03-01T09:30:00.000Z'],
    ] as const) {
      assert.equal(isoInstant(text)?.toISOString(), iso, text);
      assert.equal(parseInstant(text).toISOString(), iso, text);
    }
    for (const text of ['2025-03-01T24:00', '2025-03-01T09', '2025-03-01 09:30', '2025-02-30T09:30', '2025-03-01T09:30+24', '2025-03-01T09:30:60', '20250301T0930Z', '0000-12-31T23:59Z']) {
      assert.equal(isoInstant(text), undefined, text);
    }
  });
});

describe('parameter rules beyond the schema', () => {
  const code = (f: () => unknown) => {
    try {
      f();
      return 'ok';
    } catch (e) {
      return (e as { code: string }).code;
    }
  };

  // Their form and range are checked before (test/http/input-hygiene.test.ts): these only read them.
  test('integers read as numbers, absent ones as their default', () => {
    assert.equal(intParam('42', 0), 42);
    assert.equal(intParam(undefined, 7), 7);
    assert.deepEqual(pageParams({}), { limit: 25, offset: 0 });
    assert.equal(serviceNumberParam({ service_number: '123456789' }), 123456789);
    // Any plain positive integer a client can hold exactly is a service number (live: 404 if none).
    assert.equal(serviceNumberParam({ service_number: '2147483648' }), 2147483648);
    assert.equal(serviceNumberParam({ service_number: '9007199254740991' }), 9007199254740991);
  });

  test('text without control characters', () => {
    assert.equal(textParam('abc', 'f', 'body'), 'abc');
    assert.equal(textParam('', 'f', 'body'), undefined);
    assert.equal(code(() => textParam('a\u0007b', 'f', 'query')), 'invalid_parameter');
  });

  test('instants are clamped to the years PostgreSQL stores', () => {
    assert.equal(clampInstant(parseInstant('0000-01-01')).toISOString(), '0001-01-01T00:00:00.000Z');
    assert.equal(clampInstant(new Date('+010000-01-01T00:00:00Z')).toISOString(), '9999-12-31T23:59:59.999Z');
    assert.equal(clampInstant(parseInstant('2025-03-01')).toISOString(), '2025-03-01T00:00:00.000Z');
  });
});

describe('sandbox rows', () => {
  const now = new Date('2025-03-02T11:00:00.000Z');

  test('the services row matches every filter it should, and no other', () => {
    const row = sandboxService(731845206, now);
    assert.equal(serviceMatches(row, {}), true);
    assert.equal(serviceMatches(row, { status: 'active' }), true);
    assert.equal(serviceMatches(row, { status: 'cancelled' }), false);
    for (const s of ['TEST-SERVER', 'customer@example', 'test cust', '845']) assert.equal(serviceMatches(row, { search: s }), true, s);
    assert.equal(serviceMatches(row, { search: 'nothing' }), false);
    assert.equal(serviceMatches(row, { modifiedSince: new Date('2025-03-02T11:00:00.000Z') }), true);
    assert.equal(serviceMatches(row, { modifiedSince: new Date('2025-03-02T11:00:00.001Z') }), false);
  });

  test('the requests row matches every filter it should, and no other', () => {
    const row = sandboxRequest(now);
    assert.equal(requestMatches(row, { status: 'pending', type: 'create', source: 'api', date: '2025-03-02' }), true);
    assert.equal(requestMatches(row, { date: '2025-03-01' }), false);
    assert.equal(requestMatches(row, { type: 'upgrade' }), false);
    assert.equal(requestMatches(row, { search: 'basic vps' }), true);
    assert.equal(requestMatches(row, { source: 'import' }), false);
    assert.equal(requestMatches(row, { status: 'approved' }), false);
    assert.equal(requestMatches(row, { search: 'req-318' }), true);
    assert.equal(requestMatches(row, { search: 'nope' }), false);
  });

  test('a page holds the row only at offset 0', () => {
    assert.deepEqual(sandboxPage('r', true, { limit: 25, offset: 0 }, 7), { data: ['r'], pagination: { total: 1, limit: 25, offset: 0, has_more: false } });
    assert.deepEqual(sandboxPage('r', true, { limit: 1, offset: 1 }, 7), { data: [], pagination: { total: 1, limit: 1, offset: 1, has_more: false } });
    assert.deepEqual(sandboxPage('r', false, { limit: 25, offset: 0 }, 7), { data: [], pagination: { total: 0, limit: 25, offset: 0, has_more: false } });
  });

  test('cursors: nothing follows any cursor; the row, the newest, precedes any cursor but itself', () => {
    const empty = (offset: number, total = 1) => ({ data: [], pagination: { total, limit: 25, offset, has_more: offset < total } });
    assert.deepEqual(sandboxPage('r', true, { limit: 25, offset: 0, startingAfter: 7 }, 7), empty(1));
    assert.deepEqual(sandboxPage('r', true, { limit: 25, offset: 0, startingAfter: 8 }, 7), empty(1));
    assert.deepEqual(sandboxPage('r', true, { limit: 25, offset: 0, endingBefore: 7 }, 7), empty(0));
    assert.deepEqual(sandboxPage('r', true, { limit: 25, offset: 0, endingBefore: 8 }, 7), { data: ['r'], pagination: { total: 1, limit: 25, offset: 0, has_more: false } });
    assert.deepEqual(sandboxPage('r', false, { limit: 25, offset: 0, endingBefore: 8 }, 7), empty(0, 0));
    assert.deepEqual(sandboxPage('r', true, { limit: 25, offset: 0, startingAfter: 8, endingBefore: 9 }, 7), empty(1));
  });
});
