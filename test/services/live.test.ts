/** Live keys on the service operations: every transition, 404/409 case and tenant isolation. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { outboxMailsTo } from '../helpers/outbox.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

let t: TestApp;
let brokerId: string;
let otherBrokerId: string;
let admin: string;
let adminAuto: string;
let autoBrokerId: string;
let reader: string;
let writer: string;
let otherAdmin: string;

before(async () => {
  t = await createTestApp();
  brokerId = (await broker(t.prisma, { approval: 'manual' })).id;
  autoBrokerId = (await broker(t.prisma, { approval: 'automatic' })).id;
  otherBrokerId = (await broker(t.prisma)).id;
  admin = (await apiKey(t.prisma, { brokerId, scopes: ['admin:full'] })).key;
  adminAuto = (await apiKey(t.prisma, { brokerId: autoBrokerId, scopes: ['admin:full'] })).key;
  reader = (await apiKey(t.prisma, { brokerId, scopes: ['services:read'] })).key;
  writer = (await apiKey(t.prisma, { brokerId, scopes: ['services:write'] })).key;
  otherAdmin = (await apiKey(t.prisma, { brokerId: otherBrokerId, scopes: ['admin:full'] })).key;
});
after(async () => {
  await t?.close();
});

const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
const post = (key: string, path: string, body: unknown = {}) =>
  request(t.app).post(path).set('Authorization', `Bearer ${key}`).send(body as object);
const stored = (serviceNumber: number) =>
  t.prisma.service.findUniqueOrThrow({ where: { serviceNumber }, include: { plan: true } });

describe('POST /api/v1/service-create', () => {
  const body = { plan: 'Professional VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example', customer_name: 'Client Ltd' };

  test('automatic approval: 200 with an active service, nine-digit number, generated credentials', async () => {
    const res = await post(adminAuto, '/api/v1/service-create', { ...body, billing_cycle: 'quarterly' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const data = res.body.data;
    assert.match(String(data.service_number), /^[1-9]\d{8}$/);
    assert.equal(data.status, 'active');
    assert.equal(data.plan, 'Professional VPS');
    assert.equal(data.billing_cycle, 'quarterly');
    assert.equal(data.customer_name, 'Client Ltd');
    assert.equal(data.mode, undefined);
    assert.equal(data.credentials, undefined);
    const row = await stored(data.service_number);
    assert.equal(row.brokerId, autoBrokerId);
    assert.equal(row.username, 'root');
    assert.match(row.passwordEnc, /^v1:/);
    const password = (await t.deps.credentials()).decrypt(row.passwordEnc);
    assert.equal(password.length, 20);
    // The approved create request is kept as the service's history.
    const requests = await t.prisma.serviceRequest.findMany({ where: { serviceId: row.id } });
    assert.equal(requests.length, 1);
    assert.equal(requests[0]!.type, 'create');
    assert.equal(requests[0]!.status, 'approved');
    assert.equal(requests[0]!.source, 'api');
  });

  test('manual approval: 202 with a pending create request and no service yet', async () => {
    const before = await t.prisma.service.count();
    const res = await post(writer, '/api/v1/service-create', body);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const data = res.body.data;
    assert.match(data.request_id, /^REQ-\d{6,}$/);
    assert.equal(data.request_type, 'create');
    assert.equal(data.request_status, 'pending');
    assert.equal(data.source, 'api');
    assert.equal(data.service_number, null);
    assert.equal(data.requested_plan, 'Professional VPS');
    assert.equal(data.hostname, 'web01.client.example');
    assert.equal(await t.prisma.service.count(), before);
    const row = await t.prisma.serviceRequest.findUniqueOrThrow({ where: { id: Number(data.request_id.slice(4)) } });
    assert.equal(row.brokerId, brokerId);
  });

  test('plan must be in the catalogue; fields are validated', async () => {
    const plan = await post(writer, '/api/v1/service-create', { ...body, plan: 'Gold VPS' });
    assert.equal(plan.status, 400);
    assert.equal(plan.body.error.code, 'invalid_parameter');
    assert.equal(plan.body.error.details.rule, 'catalogue');
    const email = await post(writer, '/api/v1/service-create', { ...body, customer_email: 'nope' });
    assert.equal(email.status, 400);
    assert.equal(email.body.error.code, 'invalid_parameter');
    const missing = await post(writer, '/api/v1/service-create', { plan: 'Basic VPS' });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'missing_parameter');
  });

  test('a key without services:write is refused', async () => {
    const res = await post(reader, '/api/v1/service-create', body);
    assert.equal(res.status, 403);
  });
});

describe('GET /api/v1/services', () => {
  let numbers: Record<string, number>;
  let listBroker: string;
  let listAdmin: string;
  let listReader: string;

  before(async () => {
    listBroker = (await broker(t.prisma)).id;
    listAdmin = (await apiKey(t.prisma, { brokerId: listBroker, scopes: ['admin:full'] })).key;
    listReader = (await apiKey(t.prisma, { brokerId: listBroker, scopes: ['services:read'] })).key;
    const at = (s: string) => new Date(s);
    const same = at('2025-02-01T00:00:00.000Z');
    numbers = {
      a: (await service(t, { brokerId: listBroker, serviceNumber: 111222333, hostname: 'alpha.shop.example', customerEmail: 'anna@alpha.example', customerName: 'Anna 50%_Off', createdAt: at('2025-01-01T00:00:00Z'), updatedAt: at('2025-01-05T00:00:00Z') })).serviceNumber,
      b: (await service(t, { brokerId: listBroker, serviceNumber: 444555666, hostname: 'beta.example', status: 'suspended', createdAt: same, updatedAt: at('2025-03-01T12:00:00Z'), password: 'Beta-Secret-123' })).serviceNumber,
      c: (await service(t, { brokerId: listBroker, serviceNumber: 777888999, hostname: 'gamma.example', status: 'cancelled', createdAt: same, updatedAt: at('2025-03-02T00:00:00Z') })).serviceNumber,
      d: (await service(t, { brokerId: listBroker, serviceNumber: 123123123, hostname: 'delta.shop.example', createdAt: at('2025-03-01T00:00:00Z'), updatedAt: at('2025-03-03T00:00:00Z') })).serviceNumber,
    };
    // Another broker's service that would match every filter.
    await service(t, { brokerId: otherBrokerId, hostname: 'alpha.shop.example', customerEmail: 'anna@alpha.example' });
  });

  const numbersOf = (res: request.Response) => res.body.data.map((s: { service_number: number }) => s.service_number);

  test('only the broker\'s services, newest first, ties broken by id (stable)', async () => {
    const res = await get(listReader, '/api/v1/services');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(numbersOf(res), [numbers.d, numbers.c, numbers.b, numbers.a]);
    assert.deepEqual(res.body.pagination, { total: 4, limit: 25, offset: 0, has_more: false });
    assert.equal(res.body.data[0].credentials, undefined);
  });

  test('limit and offset page through the same order', async () => {
    const first = await get(listReader, '/api/v1/services?limit=3');
    assert.deepEqual(numbersOf(first), [numbers.d, numbers.c, numbers.b]);
    assert.deepEqual(first.body.pagination, { total: 4, limit: 3, offset: 0, has_more: true });
    const second = await get(listReader, '/api/v1/services?limit=3&offset=3');
    assert.deepEqual(numbersOf(second), [numbers.a]);
    assert.deepEqual(second.body.pagination, { total: 4, limit: 3, offset: 3, has_more: false });
    const beyond = await get(listReader, '/api/v1/services?offset=10');
    assert.deepEqual(numbersOf(beyond), []);
    assert.equal(beyond.body.pagination.total, 4);
    for (const bad of ['limit=0', 'limit=101', 'offset=-1', 'limit=abc']) {
      const r = await get(listReader, `/api/v1/services?${bad}`);
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.error.code, 'invalid_parameter', bad);
    }
  });

  test('filters: status, search (case-insensitive, number substring, wildcards literal), modified_since', async () => {
    const cases: Array<[string, number[]]> = [
      ['status=suspended', [numbers.b!]],
      ['status=active', [numbers.d!, numbers.a!]],
      ['search=SHOP', [numbers.d!, numbers.a!]],
      ['search=anna@ALPHA', [numbers.a!]],
      ['search=50%25_off', [numbers.a!]],
      ['search=%25', [numbers.a!]],
      ['search=_', [numbers.a!]],
      ['search=5556', [numbers.b!]],
      ['search=customer ltd', [numbers.d!, numbers.c!, numbers.b!]],
      ['modified_since=2025-03-02', [numbers.d!, numbers.c!]],
      ['modified_since=2025-03-01T12:00:00Z', [numbers.d!, numbers.c!, numbers.b!]],
      ['modified_since=2025-03-01T13:00:00%2B01:00', [numbers.d!, numbers.c!, numbers.b!]],
      // ISO 8601 forms beyond RFC 3339: no seconds, no zone (UTC), a basic offset.
      ['modified_since=2025-03-01T12:00Z', [numbers.d!, numbers.c!, numbers.b!]],
      ['modified_since=2025-03-01T12:00', [numbers.d!, numbers.c!, numbers.b!]],
      ['modified_since=2025-03-01T13:00%2B0100', [numbers.d!, numbers.c!, numbers.b!]],
      ['status=active&search=delta&modified_since=2025-01-01', [numbers.d!]],
      ['search=nothing-like-this', []],
    ];
    for (const [query, expected] of cases) {
      const res = await get(listReader, `/api/v1/services?${query}`);
      assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(numbersOf(res), expected, query);
      assert.equal(res.body.pagination.total, expected.length, query);
    }
    // Year 0000: PostgreSQL cannot store it. Refused as a format (400) or taken as "since always";
    // never a 500.
    const always = await get(listReader, '/api/v1/services?modified_since=0000-01-01');
    if (always.status === 200) assert.equal(always.body.pagination.total, 4);
    else assert.equal(always.body.error?.code, 'invalid_parameter', JSON.stringify(always.body));
    for (const query of ['search=%00', 'search=a%00b', 'offset=1e309', 'limit=Infinity']) {
      const r = await get(listReader, `/api/v1/services?${query}`);
      assert.equal(r.status, 400, query);
      assert.equal(r.body.error.code, 'invalid_parameter', query);
    }
    const bad = await get(listReader, '/api/v1/services?modified_since=yesterday');
    assert.equal(bad.status, 400);
    const badStatus = await get(listReader, '/api/v1/services?status=deleted');
    assert.equal(badStatus.status, 400);
  });

  test('credentials only with include_credentials=true and admin:full', async () => {
    const admin = await get(listAdmin, `/api/v1/services?include_credentials=true&search=beta`);
    assert.deepEqual(admin.body.data[0].credentials, { username: 'root', password: 'Beta-Secret-123' });
    const notAsked = await get(listAdmin, '/api/v1/services?search=beta');
    assert.equal(notAsked.body.data[0].credentials, undefined);
    const notAdmin = await get(listReader, '/api/v1/services?include_credentials=true&search=beta');
    assert.equal(notAdmin.status, 200);
    assert.equal(notAdmin.body.data[0].credentials, undefined);
  });

  test('a scheduled cancellation whose time has passed shows as cancelled', async () => {
    const s = await service(t, { brokerId: listBroker, hostname: 'due.example', cancelAt: new Date(Date.now() - 60_000) });
    const res = await get(listReader, '/api/v1/services?search=due.example');
    assert.equal(res.body.data[0].status, 'cancelled');
    assert.equal(res.body.data[0].cancelled_at, s.cancelAt!.toISOString());
    await t.prisma.service.delete({ where: { id: s.id } });
  });

  test('the request that applies a due cancellation already filters and counts it as cancelled', async () => {
    const due = await service(t, { brokerId: listBroker, hostname: 'due-filter.example', cancelAt: new Date(Date.now() - 1000) });
    const active = await get(listReader, '/api/v1/services?search=due-filter.example&status=active');
    assert.equal(active.status, 200, JSON.stringify(active.body));
    assert.deepEqual(active.body.data, []);
    assert.equal(active.body.pagination.total, 0);
    const cancelled = await get(listReader, '/api/v1/services?search=due-filter.example&status=cancelled');
    assert.equal(cancelled.body.pagination.total, 1);
    assert.equal(cancelled.body.data[0].service_number, due.serviceNumber);
    await t.prisma.service.delete({ where: { id: due.id } });
  });
});

describe('GET /api/v1/services/{n}', () => {
  test('admin detail with decrypted credentials', async () => {
    const s = await service(t, { brokerId, password: 'Detail-Passw0rd' });
    const res = await get(admin, `/api/v1/services/${s.serviceNumber}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.service_number, s.serviceNumber);
    assert.equal(res.body.data.plan, 'Standard VPS');
    assert.deepEqual(res.body.data.credentials, { username: 'root', password: 'Detail-Passw0rd' });
  });

  test('unknown number or another broker\'s service: 404 not_found', async () => {
    const unknown = await get(admin, '/api/v1/services/999999998');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'not_found');
    const theirs = await service(t, { brokerId: otherBrokerId });
    const res = await get(admin, `/api/v1/services/${theirs.serviceNumber}`);
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'not_found');
    assert.equal((await get(otherAdmin, `/api/v1/services/${theirs.serviceNumber}`)).status, 200);
  });

  test('a number above any stored one (2147483648, 9999999999) is 404 not_found on every service path', async () => {
    for (const n of ['2147483648', '9999999999', String(Number.MAX_SAFE_INTEGER)]) {
      const answers = [
        await get(admin, `/api/v1/services/${n}`),
        await post(admin, `/api/v1/services/${n}/password`, {}),
        await post(admin, `/api/v1/services/${n}/upgrade`, { plan: 'Professional VPS' }),
        await post(admin, `/api/v1/services/${n}/downgrade`, { plan: 'Basic VPS' }),
        await post(admin, `/api/v1/services/${n}/cancel`, { reason: 'no longer needed' }),
      ];
      for (const res of answers) {
        assert.equal(res.status, 404, `${n}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error.code, 'not_found');
      }
    }
  });

  test('a number that is not a plain integer (Infinity, 1e309) is 400, not 404', async () => {
    for (const n of ['Infinity', '1e309', '-Infinity']) {
      const res = await get(admin, `/api/v1/services/${n}`);
      assert.equal(res.status, 400, n);
      assert.equal(res.body.error.code, 'invalid_parameter');
    }
  });

  test('admin:full is required', async () => {
    const s = await service(t, { brokerId });
    assert.equal((await get(reader, `/api/v1/services/${s.serviceNumber}`)).status, 403);
  });
});

describe('POST /api/v1/services/{n}/password', () => {
  test('a chosen password is stored encrypted and not echoed; the customer is told', async () => {
    const s = await service(t, { brokerId, customerEmail: 'pw-chosen@client.example' });
    const res = await post(admin, `/api/v1/services/${s.serviceNumber}/password`, { password: 'My-New-Password-42' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.password_generated, false);
    assert.equal(res.body.data.password, undefined);
    assert.equal(res.body.data.customer_notified, true);
    const row = await stored(s.serviceNumber);
    assert.notEqual(row.passwordEnc, s.passwordEnc);
    assert.ok(!row.passwordEnc.includes('My-New-Password-42'));
    assert.equal((await t.deps.credentials()).decrypt(row.passwordEnc), 'My-New-Password-42');
    assert.equal(res.body.data.updated_at, row.updatedAt.toISOString());
    const mails = await outboxMailsTo(t.dataDir, 'pw-chosen@client.example');
    assert.equal(mails.length, 1);
    assert.match(mails[0]!.text ?? '', /My-New-Password-42/);
    assert.match(`${mails[0]!.subject ?? ''}\n${mails[0]!.text ?? ''}`, new RegExp(String(s.serviceNumber)));
  });

  test('no password: a strong one is generated, returned once and stored', async () => {
    const s = await service(t, { brokerId });
    for (const body of [{}, undefined]) {
      const res = body === undefined
        ? await request(t.app).post(`/api/v1/services/${s.serviceNumber}/password`).set('Authorization', `Bearer ${admin}`)
        : await post(admin, `/api/v1/services/${s.serviceNumber}/password`, body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.password_generated, true);
      assert.equal(res.body.data.password.length, 20);
      const detail = await get(admin, `/api/v1/services/${s.serviceNumber}`);
      assert.equal(detail.body.data.credentials.password, res.body.data.password);
    }
  });

  test('too short, cancelled (409), unknown or foreign (404)', async () => {
    const s = await service(t, { brokerId });
    const short = await post(admin, `/api/v1/services/${s.serviceNumber}/password`, { password: 'short' });
    assert.equal(short.status, 400);
    assert.equal(short.body.error.code, 'invalid_parameter');
    const cancelled = await service(t, { brokerId, status: 'cancelled' });
    const res = await post(admin, `/api/v1/services/${cancelled.serviceNumber}/password`, {});
    assert.equal(res.status, 409);
    assert.deepEqual(res.body.error.details, { current_status: 'cancelled' });
    assert.equal((await post(admin, '/api/v1/services/999999997/password', {})).status, 404);
    const theirs = await service(t, { brokerId: otherBrokerId });
    assert.equal((await post(admin, `/api/v1/services/${theirs.serviceNumber}/password`, {})).status, 404);
    assert.equal((await stored(theirs.serviceNumber)).passwordEnc, theirs.passwordEnc);
  });
});

describe('POST /api/v1/services/{n}/upgrade and /downgrade', () => {
  test('upgrade: 202 pending request from the current to a higher plan; nothing changes yet', async () => {
    const s = await service(t, { brokerId, plan: 'Standard VPS' });
    const res = await post(admin, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Enterprise VPS' });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const d = res.body.data;
    assert.match(d.request_id, /^REQ-\d{6,}$/);
    assert.equal(d.request_type, 'upgrade');
    assert.equal(d.request_status, 'pending');
    assert.equal(d.source, 'api');
    assert.equal(d.service_number, s.serviceNumber);
    assert.equal(d.current_plan, 'Standard VPS');
    assert.equal(d.requested_plan, 'Enterprise VPS');
    assert.equal(d.hostname, s.hostname);
    assert.equal((await stored(s.serviceNumber)).plan.name, 'Standard VPS');
  });

  test('downgrade: 202 pending request to a lower plan', async () => {
    const s = await service(t, { brokerId, plan: 'Professional VPS' });
    const res = await post(admin, `/api/v1/services/${s.serviceNumber}/downgrade`, { plan: 'Basic VPS' });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.data.request_type, 'downgrade');
    assert.equal(res.body.data.current_plan, 'Professional VPS');
    assert.equal(res.body.data.requested_plan, 'Basic VPS');
  });

  test('the tier must go the right way; the plan must exist', async () => {
    const s = await service(t, { brokerId, plan: 'Standard VPS' });
    for (const [op, plan, rule] of [
      ['upgrade', 'Standard VPS', 'tier'],
      ['upgrade', 'Basic VPS', 'tier'],
      ['downgrade', 'Standard VPS', 'tier'],
      ['downgrade', 'Enterprise VPS', 'tier'],
      ['upgrade', 'Platinum VPS', 'catalogue'],
    ] as const) {
      const res = await post(admin, `/api/v1/services/${s.serviceNumber}/${op}`, { plan });
      assert.equal(res.status, 400, `${op} ${plan}`);
      assert.equal(res.body.error.code, 'invalid_parameter');
      assert.equal(res.body.error.details.rule, rule);
    }
    const missing = await post(admin, `/api/v1/services/${s.serviceNumber}/upgrade`, {});
    assert.equal(missing.body.error.code, 'missing_parameter');
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: s.id } }), 0);
  });

  test('a second change while one is pending: 409 conflict naming the pending request', async () => {
    const s = await service(t, { brokerId, plan: 'Standard VPS' });
    const first = await post(admin, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Professional VPS' });
    assert.equal(first.status, 202);
    for (const [op, body] of [
      ['upgrade', { plan: 'Enterprise VPS' }],
      ['downgrade', { plan: 'Basic VPS' }],
      ['cancel', { reason: 'Changed my mind' }],
    ] as const) {
      const res = await post(admin, `/api/v1/services/${s.serviceNumber}/${op}`, body);
      assert.equal(res.status, 409, op);
      assert.equal(res.body.error.code, 'conflict');
      assert.equal(res.body.error.details.current_status, 'pending');
      assert.equal(res.body.error.details.pending_request_id, first.body.data.request_id);
    }
  });

  test('two simultaneous changes: one 202, one 409', async () => {
    const s = await service(t, { brokerId, plan: 'Standard VPS' });
    const results = await Promise.all([
      post(admin, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Enterprise VPS' }),
      post(admin, `/api/v1/services/${s.serviceNumber}/downgrade`, { plan: 'Basic VPS' }),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), [202, 409]);
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: s.id, status: 'pending' } }), 1);
  });

  test('only an active service changes plan: suspended, pending and cancelled are 409', async () => {
    for (const status of ['suspended', 'pending', 'cancelled'] as const) {
      const s = await service(t, { brokerId, plan: 'Standard VPS', status });
      const res = await post(admin, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Enterprise VPS' });
      assert.equal(res.status, 409, status);
      assert.deepEqual(res.body.error.details, { current_status: status });
    }
  });

  test('unknown or foreign service: 404', async () => {
    const theirs = await service(t, { brokerId: otherBrokerId, plan: 'Basic VPS' });
    for (const n of [999999996, theirs.serviceNumber]) {
      const res = await post(admin, `/api/v1/services/${n}/upgrade`, { plan: 'Enterprise VPS' });
      assert.equal(res.status, 404);
      assert.equal(res.body.error.code, 'not_found');
    }
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: theirs.id } }), 0);
  });
});

describe('POST /api/v1/services/{n}/cancel', () => {
  test('202 cancel request; when defaults to end_of_billing_period; reason trimmed', async () => {
    const s = await service(t, { brokerId });
    const res = await post(admin, `/api/v1/services/${s.serviceNumber}/cancel`, { reason: '  Moving to another provider ' });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.data.request_type, 'cancel');
    assert.equal(res.body.data.cancel_when, 'end_of_billing_period');
    assert.equal(res.body.data.reason, 'Moving to another provider');
    assert.equal(res.body.data.requested_plan, null);
    assert.equal((await stored(s.serviceNumber)).status, 'active');
  });

  test('pending and suspended services may be cancelled; a cancelled one is 409', async () => {
    for (const status of ['pending', 'suspended'] as const) {
      const s = await service(t, { brokerId, status });
      const res = await post(admin, `/api/v1/services/${s.serviceNumber}/cancel`, { reason: 'x', when: 'immediate' });
      assert.equal(res.status, 202, status);
    }
    const s = await service(t, { brokerId, status: 'cancelled' });
    const res = await post(admin, `/api/v1/services/${s.serviceNumber}/cancel`, { reason: 'again' });
    assert.equal(res.status, 409);
    assert.deepEqual(res.body.error.details, { current_status: 'cancelled' });
  });

  test('reason required and non-blank; when must be known', async () => {
    const s = await service(t, { brokerId });
    for (const body of [{}, { reason: '' }, { reason: '  ' }, { reason: null }]) {
      const res = await post(admin, `/api/v1/services/${s.serviceNumber}/cancel`, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, 'missing_parameter', JSON.stringify(body));
    }
    const nul = await post(admin, `/api/v1/services/${s.serviceNumber}/cancel`, { reason: 'x\u0000y' });
    assert.equal(nul.status, 400);
    assert.equal(nul.body.error.details.rule, 'characters');
    const when = await post(admin, `/api/v1/services/${s.serviceNumber}/cancel`, { reason: 'x', when: 'tomorrow' });
    assert.equal(when.body.error.code, 'invalid_parameter');
  });

  test('another broker\'s service: 404 and untouched', async () => {
    const theirs = await service(t, { brokerId: otherBrokerId });
    const res = await post(admin, `/api/v1/services/${theirs.serviceNumber}/cancel`, { reason: 'x' });
    assert.equal(res.status, 404);
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: theirs.id } }), 0);
  });
});
