// Pure parsers of the admin CLI: dates, amounts, IP whitelist entries, import files.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InvalidValue, parseAmount, parseDateOnly, parsePositiveInt, parseTimestamp } from '../../src/cli/values.ts';
import { parseIpWhitelist, parseScopes, parseRateLimit, parseExpiresAt, splitList } from '../../src/cli/keys.ts';
import { slugify } from '../../src/cli/brokers.ts';
import { parseImportText } from '../../src/cli/import-file.ts';
import { validateInvoiceRows, validateServiceRows } from '../../src/cli/imports.ts';
import { CliError, ImportRowError } from '../../src/cli/errors.ts';

const rowError = (row: number, field: string | undefined, pattern?: RegExp) => (e: unknown) => {
  assert.ok(e instanceof ImportRowError, `expected ImportRowError, got ${String(e)}`);
  assert.equal(e.row, row, e.message);
  assert.equal(e.field, field, e.message);
  if (pattern) assert.match(e.message, pattern);
  return true;
};

describe('dates', () => {
  test('YYYY-MM-DD must be a real date', () => {
    assert.equal(parseDateOnly('2024-02-29').toISOString(), '2024-02-29T00:00:00.000Z');
    for (const bad of ['2023-02-29', '2026-13-01', '2026-04-31', '2026-1-5', '26-01-05', '2026-01-05T00:00:00Z', '']) {
      assert.throws(() => parseDateOnly(bad), InvalidValue, bad);
    }
  });

  test('ISO 8601 timestamps: offsets honoured, no offset means UTC', () => {
    assert.equal(parseTimestamp('2030-01-02').toISOString(), '2030-01-02T00:00:00.000Z');
    assert.equal(parseTimestamp('2030-01-02T03:04:05Z').toISOString(), '2030-01-02T03:04:05.000Z');
    assert.equal(parseTimestamp('2030-01-02T03:04:05.678+02:00').toISOString(), '2030-01-02T01:04:05.678Z');
    assert.equal(parseTimestamp('2030-01-02T03:04-0130').toISOString(), '2030-01-02T04:34:00.000Z');
    assert.equal(parseTimestamp('2030-01-02T03:04:05').toISOString(), '2030-01-02T03:04:05.000Z');
    for (const bad of ['tomorrow', '2030-02-30', '2030-01-02T24:00:00Z', '2030-01-02T10:61Z', '2030-01-02T10:00+25:00', '1735689600']) {
      assert.throws(() => parseTimestamp(bad), InvalidValue, bad);
    }
  });

  test('--expires-at: bad text is a CliError naming the option', () => {
    assert.throws(() => parseExpiresAt('2026-13-01'), (e: unknown) => e instanceof CliError && /--expires-at/.test(e.message));
  });
});

describe('amounts are exact decimal strings', () => {
  test('accepted forms', () => {
    assert.equal(parseAmount('10'), '10');
    assert.equal(parseAmount(' 10.5 '), '10.5');
    assert.equal(parseAmount('0010.50'), '10.50');
    assert.equal(parseAmount('0.07'), '0.07');
    assert.equal(parseAmount(19.99), '19.99'); // a JSON number, read as a double
    assert.equal(parseAmount('999999999999.99'), '999999999999.99');
    assert.equal(parseAmount(999999999999.99), '999999999999.99');
  });
  test('rejected forms', () => {
    for (const bad of ['1.234', '-5', '1e3', 1e21, '12,50', 'abc', '', '.5', '5.', '1234567890123', NaN, null, true]) {
      assert.throws(() => parseAmount(bad), InvalidValue, String(bad));
    }
    assert.throws(() => parseAmount('1.234'), /more than 2 decimals/);
  });
});

test('positive integers', () => {
  assert.equal(parsePositiveInt('42'), 42);
  assert.equal(parsePositiveInt(100000001), 100000001);
  for (const bad of ['0', '-1', '1.5', 1.5, 'x', '2147483648', '']) assert.throws(() => parsePositiveInt(bad), InvalidValue, String(bad));
});

describe('key options', () => {
  test('scopes: known names only, duplicates dropped', () => {
    assert.deepEqual(parseScopes(splitList('services:read, admin:full,services:read')), ['services:read', 'admin:full']);
    assert.throws(() => parseScopes(['services:delete']), /unknown scope "services:delete"/);
    assert.throws(() => parseScopes([]), /at least one scope/);
  });

  test('IP whitelist: v4/v6 addresses and CIDR blocks, canonical, strict', () => {
    assert.deepEqual(parseIpWhitelist(['10.0.0.0/8', '2001:DB8:0:0::/32', '192.168.1.10', '::1', '::ffff:10.1.2.3', '10.0.0.0/8']), [
      '10.0.0.0/8',
      '2001:db8::/32',
      '192.168.1.10',
      '::1',
      '10.1.2.3',
    ]);
    for (const bad of ['10.0.0.0/33', '2001:db8::/129', '10.1', '0x0a.0.0.1', '300.1.1.1', 'example.com', 'fe80::1%eth0', '10.0.0.0/', '']) {
      assert.throws(() => parseIpWhitelist([bad]), CliError, bad);
    }
  });

  test('rate limit: positive whole number', () => {
    assert.equal(parseRateLimit('60'), 60);
    for (const bad of ['0', '-1', '1.5', 'ten', '']) assert.throws(() => parseRateLimit(bad), CliError, bad);
  });
});

test('slugs derived from names', () => {
  assert.equal(slugify('Acme Hosting, Inc.'), 'acme-hosting-inc');
  assert.equal(slugify('  Héllo  Wörld!! '), 'hello-world');
  assert.equal(slugify('***'), '');
  assert.ok(slugify('x'.repeat(100)).length <= 48);
});

describe('import files', () => {
  test('CSV: header row, BOM, quoted fields, blank lines; values stay strings', () => {
    const rows = parseImportText('\uFEFFNumber,service_number,amount,currency,status,date\r\n"INV-1, a",101,"1,5",usd,paid,2026-01-31\r\n\r\n');
    assert.deepEqual(rows, [{ number: 'INV-1, a', service_number: '101', amount: '1,5', currency: 'usd', status: 'paid', date: '2026-01-31' }]);
    assert.deepEqual(parseImportText('number,amount\n'), []);
    assert.deepEqual(parseImportText(''), []);
  });

  test('CSV: a row with the wrong number of fields names its row', () => {
    assert.throws(() => parseImportText('a,b\n1,2\n3\n'), rowError(2, undefined, /1 fields, the header has 2/));
    assert.throws(() => parseImportText('a,a\n1,2\n'), /twice/);
    assert.throws(() => parseImportText('a,"b\n1,2\n'), /not valid CSV/);
  });

  test('JSON: an array of objects', () => {
    assert.deepEqual(parseImportText(' [{"a":1}]'), [{ a: 1 }]);
    assert.throws(() => parseImportText('{"a":1}'), /must be an array/);
    assert.throws(() => parseImportText('[{"a":1},'), /not valid JSON/);
  });
});

describe('invoice rows', () => {
  const good = { number: 'INV-1', service_number: 100000001, amount: '10.00', currency: 'usd', status: 'Paid', date: '2026-03-01' };
  const rows = (...extra: unknown[]) => [good, { ...good, number: 'INV-2' }, ...extra];

  test('normalised: currency upper case, status lower case, amount kept as written', () => {
    const [inv] = validateInvoiceRows([good]);
    assert.deepEqual(inv, { number: 'INV-1', serviceNumber: 100000001, amount: '10.00', currency: 'USD', status: 'paid', date: new Date('2026-03-01T00:00:00Z') });
  });

  test('each defect names the 1-based data row and the field', () => {
    assert.throws(() => validateInvoiceRows(rows({ ...good, number: 'INV-3', date: '2026-02-30' })), rowError(3, 'date', /real date/));
    assert.throws(() => validateInvoiceRows(rows({ ...good, number: 'INV-3', amount: '1.005' })), rowError(3, 'amount', /2 decimals/));
    assert.throws(() => validateInvoiceRows(rows({ ...good, number: 'INV-3', status: 'void' })), rowError(3, 'status', /paid, pending, overdue, cancelled, refunded/));
    assert.throws(() => validateInvoiceRows(rows({ ...good, number: 'INV-3', currency: 'US$' })), rowError(3, 'currency'));
    assert.throws(() => validateInvoiceRows(rows({ ...good, number: 'INV-3', service_number: 'abc' })), rowError(3, 'service_number'));
    assert.throws(() => validateInvoiceRows(rows({ ...good, number: 'INV-1' })), rowError(3, 'number', /already appears in row 1/));
    const { date: _date, ...noDate } = good;
    assert.throws(() => validateInvoiceRows(rows({ ...noDate, number: 'INV-3' })), rowError(3, 'date', /missing/));
    assert.throws(() => validateInvoiceRows(rows({ ...good, number: 'INV-3', date: ' ' })), rowError(3, 'date', /missing or empty/));
    assert.throws(() => validateInvoiceRows(rows({ ...good, number: 'INV-3', customer: 'x' })), rowError(3, 'customer', /unknown field/));
    assert.throws(() => validateInvoiceRows(rows('INV-3')), rowError(3, undefined, /must be an object/));
  });
});

describe('service rows', () => {
  const plans = ['Basic VPS', 'Standard VPS', 'Professional VPS', 'Enterprise VPS'];
  const good = { service_number: '123456789', plan: 'basic vps', status: 'active', hostname: 'Web01.Example.com', username: 'root', password: ' s3cret pass ', created_at: '2025-01-02T03:04:05Z' };

  test('plan matched without regard to case, stored as catalogued; optional fields defaulted', () => {
    const [s] = validateServiceRows([good], plans);
    assert.equal(s!.plan, 'Basic VPS');
    assert.equal(s!.hostname, 'web01.example.com');
    assert.equal(s!.password, ' s3cret pass ');
    assert.equal(s!.createdAt?.toISOString(), '2025-01-02T03:04:05.000Z');
    assert.equal(s!.billingCycle, 'monthly');
    assert.equal(s!.customerEmail, undefined);
    const [t] = validateServiceRows([{ ...good, created_at: '', customer_email: 'c@example.com', billing_cycle: 'Annually' }], plans);
    assert.equal(t!.createdAt, undefined);
    assert.equal(t!.customerEmail, 'c@example.com');
    assert.equal(t!.billingCycle, 'annually');
  });

  test('defects name row and field', () => {
    const second = { ...good, service_number: '123456790' };
    assert.throws(() => validateServiceRows([good, { ...second, plan: 'Mega VPS' }], plans), rowError(2, 'plan', /catalogue plan/));
    assert.throws(() => validateServiceRows([good, { ...second, status: 'deleted' }], plans), rowError(2, 'status'));
    assert.throws(() => validateServiceRows([good, { ...second, hostname: 'not a host' }], plans), rowError(2, 'hostname'));
    assert.throws(() => validateServiceRows([good, { ...second, created_at: '2025-02-30' }], plans), rowError(2, 'created_at'));
    assert.throws(() => validateServiceRows([good, { ...second, created_at: '2999-01-01' }], plans), rowError(2, 'created_at', /future/));
    assert.throws(() => validateServiceRows([good, { ...second, customer_email: 'nobody' }], plans), rowError(2, 'customer_email'));
    assert.throws(() => validateServiceRows([good, { ...second, password: '' }], plans), rowError(2, 'password', /missing/));
    assert.throws(() => validateServiceRows([good, { ...good }], plans), rowError(2, 'service_number', /already appears in row 1/));
  });

  test('a password with CR/LF or another control character is refused with its row and field (issue 21 row 5)', () => {
    const second = { ...good, service_number: '123456790' };
    for (const password of ['pw\r\nX-Evil: 1', 'pw\nx', 'pw\rx', 'pw\tx', 'pw\u0000x', 'pw\u0085x', '\u202eterces', 'pw\u2028x']) {
      assert.throws(() => validateServiceRows([good, { ...second, password }], plans), rowError(2, 'password', /control characters/), JSON.stringify(password));
    }
  });

  test('bidirectional controls and line/paragraph separators are refused in every text field (issue 21 row 9)', () => {
    const second = { ...good, service_number: '123456790' };
    for (const c of ['\u202e', '\u202a', '\u2066', '\u2069', '\u200e', '\u200f', '\u061c', '\u2028', '\u2029']) {
      assert.throws(() => validateServiceRows([good, { ...second, customer_name: `Client${c}Ltd` }], plans), rowError(2, 'customer_name', /bidirectional/), JSON.stringify(c));
      assert.throws(() => validateServiceRows([good, { ...second, username: `ro${c}ot` }], plans), rowError(2, 'username', /bidirectional/), JSON.stringify(c));
    }
  });
});
