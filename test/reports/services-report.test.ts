/** POST /api/v1/reports/services: recipients rules, live report through the jobs, sandbox totals. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { outboxMailsTo } from '../helpers/outbox.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

let t: TestApp;
let brokerId: string;
let live: string;
let sandbox: string;
let emptyLive: string;

before(async () => {
  t = await createTestApp();
  brokerId = (await broker(t.prisma)).id;
  const other = (await broker(t.prisma)).id;
  live = (await apiKey(t.prisma, { brokerId, scopes: ['reports:generate'] })).key;
  sandbox = (await apiKey(t.prisma, { brokerId, mode: 'test', scopes: ['reports:generate'] })).key;
  emptyLive = (await apiKey(t.prisma, { brokerId: (await broker(t.prisma)).id, scopes: ['admin:full'] })).key;
  for (const status of ['pending', 'active', 'active', 'active', 'suspended', 'cancelled'] as const) {
    await service(t, { brokerId, status });
  }
  await service(t, { brokerId: other, status: 'active' });
});
after(async () => {
  await t?.close();
});

const send = (key: string, body: unknown, scenario?: string) => {
  const r = request(t.app).post('/api/v1/reports/services').set('Authorization', `Bearer ${key}`);
  return (scenario ? r.set('X-Test-Scenario', scenario) : r).send(body as object);
};

describe('live', () => {
  test('counts the broker\'s services by status and mails the workbook to each recipient', async () => {
    const res = await send(live, { recipients: ['Ops@Broker.example', ' ops@broker.example ', '', 'finance@broker.example'] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body.data;
    assert.equal(d.report_type, 'services');
    assert.equal(d.total_services, 6);
    assert.deepEqual(d.services_by_status, { pending: 1, active: 3, suspended: 1, cancelled: 1 });
    assert.equal(d.status_filter, null);
    assert.equal(d.recipients_sent, 2);
    assert.equal(d.recipients_failed, 0);
    assert.match(d.generated_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(d.mode, undefined);
    const mails = await outboxMailsTo(t.dataDir, 'ops@broker.example');
    assert.equal(mails.length, 1);
    assert.match(mails[0]!.attachments[0]?.filename ?? '', /^services-\d{4}-\d{2}-\d{2}\.xlsx$/);
    assert.equal((await outboxMailsTo(t.dataDir, 'finance@broker.example')).length, 1);
  });

  test('a status filter counts only that status', async () => {
    const res = await send(live, { recipients: ['filter@broker.example'], status: 'active' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.total_services, 3);
    assert.deepEqual(res.body.data.services_by_status, { pending: 0, active: 3, suspended: 0, cancelled: 0 });
    assert.equal(res.body.data.status_filter, 'active');
  });

  test('a broker without services still gets its (empty) report', async () => {
    const res = await send(emptyLive, { recipients: ['empty@broker.example'], status: null });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.total_services, 0);
    assert.equal(res.body.data.recipients_sent, 1);
  });
});

describe('recipients and status rules (same codes as the invoices report)', () => {
  const cases: Array<[string, unknown, string]> = [
    ['missing', {}, 'missing_parameter'],
    ['null', { recipients: null }, 'missing_parameter'],
    ['not an array', { recipients: 'a@b.example' }, 'invalid_parameter'],
    ['an item not a string', { recipients: ['a@b.example', 7] }, 'invalid_parameter'],
    ['an invalid address', { recipients: ['a@b.example', 'nope'] }, 'invalid_parameter'],
    ['nothing left', { recipients: ['', '  '] }, 'invalid_parameter'],
    ['eleven unique', { recipients: Array.from({ length: 11 }, (_, i) => `r${i}@b.example`) }, 'too_many_recipients'],
    ['unknown status', { recipients: ['a@b.example'], status: 'deleted' }, 'invalid_parameter'],
    // Recipients come first, also when the schema rejects the status too.
    ['eleven unique and an unknown status', { recipients: Array.from({ length: 11 }, (_, i) => `r${i}@b.example`), status: 'deleted' }, 'too_many_recipients'],
    ['missing and an unknown status', { status: 'deleted' }, 'missing_parameter'],
  ];
  for (const [name, body, code] of cases) {
    test(`${name}: ${code}, before any sandbox scenario`, async () => {
      for (const [key, scenario] of [[live, undefined], [sandbox, 'provider_review'], [sandbox, 'server_error']] as const) {
        const res = await send(key, body, scenario);
        assert.equal(res.status, 400, `${name} ${scenario}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error.code, code);
        if (code !== 'missing_parameter' && name !== 'unknown status') assert.equal(res.body.error.details.max_recipients, 10);
      }
    });
  }

  test('ten unique after normalisation is allowed', async () => {
    const recipients = [...Array.from({ length: 10 }, (_, i) => `r${i}@b.example`), 'R0@B.example', ' r1@b.example'];
    const res = await send(sandbox, { recipients });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.recipient_count, 10);
  });

  test('a key without reports:generate is refused', async () => {
    const k = await apiKey(t.prisma, { brokerId, scopes: ['services:read'] });
    assert.equal((await send(k.key, { recipients: ['a@b.example'] })).status, 403);
  });
});

describe('sandbox', () => {
  test('fixed totals, markers and the normalized recipient count; no live run, no e-mail', async () => {
    const runs = await t.prisma.reportRun.count({ where: { mode: 'live' } });
    const res = await send(sandbox, { recipients: ['Sandbox@Broker.example', 'sandbox@broker.example', 'two@broker.example'] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(String(res.body.data.report_id), /^[0-9a-f-]{36}$/, 'a simulated report_id');
    assert.deepEqual(
      { ...res.body.data, generated_at: undefined, report_id: undefined },
      {
        object: 'services_report',
        report_id: undefined,
        report_type: 'services',
        total_services: 4,
        services_by_status: { pending: 1, active: 1, suspended: 1, cancelled: 1 },
        status_filter: null,
        recipients_sent: 2,
        recipients_failed: 0,
        recipients_pending: 0,
        generated_at: undefined,
        mode: 'test',
        simulated: true,
        recipient_count: 2,
      },
    );
    assert.equal(await t.prisma.reportRun.count({ where: { mode: 'live' } }), runs);
    assert.deepEqual(await outboxMailsTo(t.dataDir, 'sandbox@broker.example', 0), []);
  });

  test('with a status: the one simulated service of that status', async () => {
    const res = await send(sandbox, { recipients: ['a@b.example'], status: 'suspended' });
    assert.equal(res.body.data.total_services, 1);
    assert.deepEqual(res.body.data.services_by_status, { pending: 0, active: 0, suspended: 1, cancelled: 0 });
    assert.equal(res.body.data.status_filter, 'suspended');
  });

  test('scenarios: provider_review is a normal success; validation_error and server_error simulated', async () => {
    assert.equal((await send(sandbox, { recipients: ['a@b.example'] }, 'provider_review')).status, 200);
    const v = await send(sandbox, { recipients: ['a@b.example'] }, 'validation_error');
    assert.equal(v.status, 400);
    assert.equal(v.body.error.code, 'invalid_parameter');
    const s = await send(sandbox, { recipients: ['a@b.example'] }, 'server_error');
    assert.equal(s.status, 500);
    assert.equal(s.body.error.code, 'server_error');
  });
});
