/**
 * POST /api/v1/reports/invoices: every error sendInvoicesReport documents in openapi.yaml and every
 * sandbox rule, with response validation on (a reply off the contract would be a 500).
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { apiKey } from '../helpers/factories.ts';
import { assertError } from '../helpers/answers.ts';
import { addInvoices, createReportTestApp, type ReportTestApp } from './harness.ts';

const PATH = '/api/v1/reports/invoices';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const GOOD = { recipients: ['finance@broker.example'], start_date: '2025-01-01', end_date: '2025-01-31' };

let h: ReportTestApp;
let app: Express;
let live: string;
let sandbox: string;
let brokerId: string;

before(async () => {
  h = await createReportTestApp();
  ({ app } = await h.withJobs());
  const k = await apiKey(h.t.prisma, { scopes: ['reports:generate'], rateLimit: 10_000 });
  brokerId = k.brokerId;
  live = k.key;
  sandbox = (await apiKey(h.t.prisma, { brokerId, scopes: ['reports:generate'], mode: 'test', rateLimit: 10_000 })).key;
  // Only statuses the report leaves out, so a live range with data of other statuses is still no_data.
  await addInvoices(h.t, brokerId, [
    { status: 'overdue', date: '2024-06-10' },
    { status: 'cancelled', date: '2024-06-11' },
    { status: 'refunded', date: '2024-06-12' },
  ]);
});
after(async () => {
  await h?.close();
});

const post = (key: string, body: unknown, headers: Record<string, string> = {}) => {
  const r = request(app).post(PATH).set('Authorization', `Bearer ${key}`);
  for (const [name, value] of Object.entries(headers)) r.set(name, value);
  return typeof body === 'string' ? r.set('Content-Type', 'application/json').send(body) : r.send(body as object);
};

// Both key kinds: validation is the same, and comes before anything else.
for (const kind of ['live', 'sandbox'] as const) {
  const key = () => (kind === 'live' ? live : sandbox);
  describe(`validation (${kind} key)`, () => {
    test('body that is not valid JSON: 400 invalid_request with the spec message', async () => {
      const res = await post(key(), '{"recipients": [');
      assertError(res, 400, 'invalid_request');
      assert.equal(res.body.error.message, 'Invalid JSON in request body');
    });

    test('body that is not an object: 400 invalid_request', async () => {
      assertError(await post(key(), '["a@b.example"]'), 400, 'invalid_request');
    });

    for (const [label, body] of [
      ['missing', { start_date: '2025-01-01', end_date: '2025-01-31' }],
      ['null', { recipients: null, start_date: '2025-01-01', end_date: '2025-01-31' }],
    ] as const) {
      test(`recipients ${label}: 400 missing_parameter listing recipients as required`, async () => {
        const details = assertError(await post(key(), body), 400, 'missing_parameter');
        assert.ok((details.required as string[]).includes('recipients'), JSON.stringify(details));
        assert.deepEqual(details.missing, ['recipients']);
      });
    }

    for (const [label, recipients] of [
      ['not an array (a string)', 'finance@broker.example'],
      ['not an array (an object)', { to: 'finance@broker.example' }],
      ['an item not a string', ['finance@broker.example', 42]],
      ['an invalid address', ['finance@broker.example', 'not-an-address']],
      ['an address without a domain dot', ['finance@localhost']],
      ['an address with two @', ['a@b@broker.example']],
      ['only empty items', ['', '   ']],
      ['an empty array', []],
    ] as const) {
      test(`recipients ${label}: 400 invalid_parameter with max_recipients 10`, async () => {
        const details = assertError(await post(key(), { ...GOOD, recipients }), 400, 'invalid_parameter');
        assert.equal(details.max_recipients, 10, JSON.stringify(details));
        assert.match(String(details.field), /^recipients/);
      });
    }

    // Only a field itself can be missing: a null item inside the array is an item that is not a string.
    test('recipients an item null: 400 invalid_parameter with max_recipients 10', async () => {
      const details = assertError(await post(key(), { ...GOOD, recipients: [null] }), 400, 'invalid_parameter');
      assert.equal(details.max_recipients, 10);
    });

    test('more than 10 unique normalized recipients: 400 too_many_recipients', async () => {
      const recipients = Array.from({ length: 11 }, (_, i) => `user${i}@broker.example`);
      const details = assertError(await post(key(), { ...GOOD, recipients }), 400, 'too_many_recipients');
      assert.equal(details.max_recipients, 10);
    });

    test('an invalid address is reported before the count (11 unique with a bad one)', async () => {
      const recipients = [...Array.from({ length: 11 }, (_, i) => `user${i}@broker.example`), 'bad'];
      assertError(await post(key(), { ...GOOD, recipients }), 400, 'invalid_parameter');
    });

    for (const [label, body, missing] of [
      ['start_date missing', { recipients: GOOD.recipients, end_date: '2025-01-31' }, ['start_date']],
      ['end_date missing', { recipients: GOOD.recipients, start_date: '2025-01-01' }, ['end_date']],
      ['start_date empty', { ...GOOD, start_date: '' }, ['start_date']],
      ['end_date blank', { ...GOOD, end_date: '  ' }, ['end_date']],
      ['both dates missing', { recipients: GOOD.recipients }, ['start_date', 'end_date']],
      ['start_date null', { ...GOOD, start_date: null }, ['start_date']],
    ] as const) {
      test(`${label}: 400 missing_parameter listing both date fields as required`, async () => {
        const details = assertError(await post(key(), body), 400, 'missing_parameter');
        const required = details.required as string[];
        assert.ok(required.includes('start_date') && required.includes('end_date'), JSON.stringify(details));
        assert.deepEqual([...(details.missing as string[])].sort(), [...missing].sort());
      });
    }

    for (const [label, patch] of [
      ['start_date with slashes', { start_date: '2025/01/01' }],
      ['start_date without zero padding', { start_date: '2025-1-1' }],
      ['end_date as a date-time', { end_date: '2025-01-31T00:00:00Z' }],
      ['end_date not a date', { end_date: 'yesterday' }],
      ['end_date a number', { end_date: 20250131 }],
      ['start_date that is not a real date (2026-02-30)', { start_date: '2026-02-30', end_date: '2026-03-31' }],
      ['end_date month 13', { end_date: '2025-13-01' }],
      ['2025-02-29 (not a leap year)', { start_date: '2025-02-29', end_date: '2025-03-31' }],
      ['start_date after end_date', { start_date: '2025-02-01', end_date: '2025-01-31' }],
    ] as const) {
      test(`${label}: 400 invalid_parameter`, async () => {
        const details = assertError(await post(key(), { ...GOOD, ...patch }), 400, 'invalid_parameter');
        assert.match(String(details.field), /^(start_date|end_date)$/);
      });
    }

    test('2024-02-29 (leap year) and a one-day range are valid dates', async () => {
      const res = await post(key(), { ...GOOD, start_date: '2024-02-29', end_date: '2024-02-29' });
      // Live: valid, but no invoice that day; sandbox: simulated success.
      if (kind === 'live') assertError(res, 400, 'no_data');
      else assert.equal(res.status, 200);
    });

    // The documented order: recipients (missing, invalid, too many) before the dates (missing, invalid),
    // whichever of them the schema validator happens to see first.
    const eleven = Array.from({ length: 11 }, (_, i) => `user${i}@broker.example`);
    for (const [label, body, code, field] of [
      ['a bad recipient, start_date after end_date', { recipients: ['bad'], start_date: '2025-02-01', end_date: '2025-01-01' }, 'invalid_parameter', 'recipients[0]'],
      ['a bad recipient, start_date empty', { recipients: ['bad'], start_date: '', end_date: '2025-01-31' }, 'invalid_parameter', 'recipients[0]'],
      ['recipients not an array, the dates missing', { recipients: 'x' }, 'invalid_parameter', 'recipients'],
      ['11 unique recipients, start_date month 13', { recipients: eleven, start_date: '2025-13-01', end_date: '2025-12-31' }, 'too_many_recipients', undefined],
      ['no recipients left, end_date not a date', { recipients: [], start_date: '2025-01-01', end_date: 'yesterday' }, 'invalid_parameter', 'recipients'],
      ['recipients missing, start_date malformed', { start_date: '2025/01/01', end_date: '2025-01-31' }, 'missing_parameter', undefined],
      ['a good recipient, start_date empty and end_date malformed', { recipients: GOOD.recipients, start_date: '', end_date: '2025/01/31' }, 'missing_parameter', undefined],
    ] as const) {
      test(`recipients are checked before the dates: ${label} → ${code}`, async () => {
        const details = assertError(await post(key(), body), 400, code);
        if (field !== undefined) assert.equal(details.field, field);
        if (code !== 'missing_parameter') assert.equal(details.max_recipients, 10, JSON.stringify(details));
        if (label.startsWith('recipients missing')) assert.deepEqual(details.missing, ['recipients']);
        if (label.startsWith('a good recipient')) assert.deepEqual(details.missing, ['start_date']);
      });
    }
  });
}

describe('live only', () => {
  test('a range with no paid or pending invoice: 400 no_data with the requested dates', async () => {
    const details = assertError(await post(live, { ...GOOD, start_date: '2024-06-01', end_date: '2024-06-30' }), 400, 'no_data');
    assert.deepEqual(details, { start_date: '2024-06-01', end_date: '2024-06-30' });
  });

  test('a range with no invoice at all: 400 no_data, nothing recorded', async () => {
    assertError(await post(live, GOOD), 400, 'no_data');
    assert.equal(await h.t.prisma.reportRun.count({ where: { mode: 'live' } }), 0);
  });

  test('X-Test-Scenario is ignored for live keys', async () => {
    const res = await post(live, GOOD, { 'X-Test-Scenario': 'server_error' });
    assertError(res, 400, 'no_data');
  });
});

describe('sandbox', () => {
  test('fixed totals, the requested range, the normalized recipient count, mode test, simulated', async () => {
    const recipients = [' Finance@Broker.example ', 'finance@broker.example', '', 'CEO@broker.example', '   '];
    const res = await post(sandbox, { recipients, start_date: '2030-01-01', end_date: '2030-12-31' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.success, true);
    const { generated_at: generatedAt, report_id: reportId, ...data } = res.body.data as Record<string, unknown>;
    assert.match(String(generatedAt), ISO_MS);
    assert.match(String(reportId), /^[0-9a-f-]{36}$/, 'a simulated report_id');
    assert.deepEqual(data, {
      object: 'invoices_report',
      report_type: 'invoices',
      total_invoices: 12,
      paid_invoices: 9,
      unpaid_invoices: 3,
      // Every simulated recipient is sent (none at failed.test or pending.test): the counts add up.
      recipients_sent: 2,
      recipients_failed: 0,
      recipients_pending: 0,
      date_range: { start: '2030-01-01', end: '2030-12-31' },
      mode: 'test',
      simulated: true,
      recipient_count: 2,
    });
  });

  test('10 unique after normalization is allowed (duplicates by case and spaces collapse)', async () => {
    const recipients = [
      ...Array.from({ length: 10 }, (_, i) => `user${i}@broker.example`),
      ...Array.from({ length: 10 }, (_, i) => `  USER${i}@Broker.Example`),
    ];
    const res = await post(sandbox, { ...GOOD, recipients });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.recipient_count, 10);
  });

  test('no invoice read, no file, no e-mail; the run is recorded in test mode only', async () => {
    const res = await post(sandbox, { ...GOOD, start_date: '2024-06-01', end_date: '2024-06-30' });
    // Live would be no_data for this range: the sandbox never looks at invoices.
    assert.equal(res.status, 200);
    assert.equal(await h.t.prisma.reportRun.count({ where: { mode: 'live' } }), 0);
    assert.equal((await h.t.prisma.reportRun.findUniqueOrThrow({ where: { id: res.body.data.report_id } })).mode, 'test');
    const dirs = ['outbox', 'tmp'].map((d) => path.join(h.t.dataDir, d));
    for (const dir of dirs) {
      let files: string[] = [];
      try {
        files = readdirSync(dir);
      } catch {
        files = [];
      }
      assert.deepEqual(files, [], dir);
    }
  });

  for (const value of ['validation_error', 'VALIDATION_ERROR', ' Validation_Error ']) {
    test(`X-Test-Scenario: ${JSON.stringify(value)} → 400 invalid_parameter`, async () => {
      assertError(await post(sandbox, GOOD, { 'X-Test-Scenario': value }), 400, 'invalid_parameter');
    });
  }

  for (const value of ['server_error', 'Server_Error']) {
    test(`X-Test-Scenario: ${value} → 500 server_error`, async () => {
      assertError(await post(sandbox, GOOD, { 'X-Test-Scenario': value }), 500, 'server_error');
    });
  }

  for (const value of ['provider_review', 'PROVIDER_REVIEW', 'success', 'no_such_scenario', '']) {
    test(`X-Test-Scenario: ${JSON.stringify(value)} → the normal simulated 200`, async () => {
      const res = await post(sandbox, GOOD, { 'X-Test-Scenario': value });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.simulated, true);
      assert.equal(res.body.data.total_invoices, 12);
    });
  }

  test('validation runs before the scenario: a malformed request gets its own error', async () => {
    const missing = await post(sandbox, { start_date: '2025-01-01', end_date: '2025-01-31' }, { 'X-Test-Scenario': 'server_error' });
    assertError(missing, 400, 'missing_parameter');
    const tooMany = await post(
      sandbox,
      { ...GOOD, recipients: Array.from({ length: 11 }, (_, i) => `u${i}@broker.example`) },
      { 'X-Test-Scenario': 'server_error' },
    );
    assertError(tooMany, 400, 'too_many_recipients');
    const order = await post(sandbox, { ...GOOD, start_date: '2025-03-01' }, { 'X-Test-Scenario': 'validation_error' });
    const details = assertError(order, 400, 'invalid_parameter');
    assert.equal(details.scenario, undefined, 'the real validation error, not the simulated one');
    assert.equal(details.field, 'start_date');
  });
});

describe('authentication, permissions and rate limit rows', () => {
  test('no bearer token: 401 authentication_failed', async () => {
    const res = await request(app).post(PATH).send(GOOD);
    assertError(res, 401, 'authentication_failed');
  });

  test('an unknown token: 401 authentication_failed', async () => {
    assertError(await post('sk_live_thisisnotakey000000000000000000', GOOD), 401, 'authentication_failed');
  });

  test('a key without reports:generate or admin:full: 403 insufficient_permissions', async () => {
    const k = await apiKey(h.t.prisma, { brokerId, scopes: ['services:read', 'services:write', 'requests:write'] });
    assertError(await post(k.key, GOOD), 403, 'insufficient_permissions');
  });

  test('admin:full is accepted', async () => {
    const k = await apiKey(h.t.prisma, { brokerId, scopes: ['admin:full'], mode: 'test' });
    assert.equal((await post(k.key, GOOD)).status, 200);
  });

  test('a key whose IP whitelist does not hold the caller: 403 insufficient_permissions', async () => {
    const k = await apiKey(h.t.prisma, { brokerId, scopes: ['reports:generate'], ipWhitelist: ['203.0.113.7'] });
    assertError(await post(k.key, GOOD), 403, 'insufficient_permissions');
  });

  test('over the key rate limit: 429 rate_limit_exceeded with Retry-After', async () => {
    const k = await apiKey(h.t.prisma, { brokerId, scopes: ['reports:generate'], mode: 'test', rateLimit: 1 });
    assert.equal((await post(k.key, GOOD)).status, 200);
    const res = await post(k.key, GOOD);
    assertError(res, 429, 'rate_limit_exceeded');
    assert.match(String(res.headers['retry-after']), /^\d+$/);
  });
});
