/**
 * Sandbox keys on the service and request operations: every rule of openapi.yaml's "Sandbox (test mode)
 * of the other operations" and "Test scenarios", with response validation on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

let t: TestApp;
let manualBroker: string;
let autoBroker: string;
let admin: string; // sandbox admin:full, manual approval
let adminAuto: string; // sandbox admin:full, automatic approval
let reader: string; // sandbox services:read + requests:read
let writer: string; // sandbox services:write + requests:write
let liveNumber: number;

before(async () => {
  t = await createTestApp();
  manualBroker = (await broker(t.prisma, { approval: 'manual' })).id;
  autoBroker = (await broker(t.prisma, { approval: 'automatic' })).id;
  admin = (await apiKey(t.prisma, { brokerId: manualBroker, mode: 'test', scopes: ['admin:full'] })).key;
  adminAuto = (await apiKey(t.prisma, { brokerId: autoBroker, mode: 'test', scopes: ['admin:full'] })).key;
  reader = (await apiKey(t.prisma, { brokerId: manualBroker, mode: 'test', scopes: ['services:read', 'requests:read'] })).key;
  writer = (await apiKey(t.prisma, { brokerId: manualBroker, mode: 'test', scopes: ['services:write', 'requests:write'] })).key;
  // A live service of the same broker: sandbox keys must never see it.
  liveNumber = (await service(t, { brokerId: manualBroker, hostname: 'live-only.example.net', status: 'active' })).serviceNumber;
});
after(async () => {
  await t?.close();
});

const get = (key: string, path: string, scenario?: string) => {
  const r = request(t.app).get(path).set('Authorization', `Bearer ${key}`);
  return scenario ? r.set('X-Test-Scenario', scenario) : r;
};
const post = (key: string, path: string, body?: unknown, scenario?: string) => {
  let r = request(t.app).post(path).set('Authorization', `Bearer ${key}`);
  if (scenario) r = r.set('X-Test-Scenario', scenario);
  return body === undefined ? r : r.send(body as object);
};
const markers = (data: Record<string, unknown>) => {
  assert.equal(data.mode, 'test');
  assert.equal(data.simulated, true);
};

async function businessRows() {
  return {
    services: await t.prisma.service.count(),
    requests: await t.prisma.serviceRequest.count(),
    updated: (await t.prisma.service.findFirstOrThrow({ where: { serviceNumber: liveNumber } })).updatedAt.getTime(),
  };
}

describe('sandbox: GET /api/v1/services', () => {
  test('one generated row with markers; no credentials unless asked by an admin key', async () => {
    const res = await get(reader, '/api/v1/services');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.length, 1);
    const row = res.body.data[0];
    markers(row);
    assert.match(String(row.service_number), /^\d{9}$/);
    assert.equal(row.credentials, undefined);
    assert.notEqual(row.service_number, liveNumber);
    assert.deepEqual(res.body.pagination, { total: 1, limit: 25, offset: 0, has_more: false });
  });

  test('include_credentials=true without admin:full: still no credentials', async () => {
    const res = await get(reader, '/api/v1/services?include_credentials=true');
    assert.equal(res.status, 200);
    assert.equal(res.body.data[0].credentials, undefined);
  });

  test('include_credentials=true with admin:full: test credentials', async () => {
    const res = await get(admin, '/api/v1/services?include_credentials=true');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data[0].credentials, { username: 'root', password: 'Test-Passw0rd-Sandbox' });
    const without = await get(admin, '/api/v1/services?include_credentials=false');
    assert.equal(without.body.data[0].credentials, undefined);
  });

  const cases: Array<[string, number]> = [
    ['status=active', 1],
    ['status=cancelled', 0],
    ['search=TEST-SERVER', 1],
    ['search=731845', 1],
    ['search=live-only', 0],
    ['modified_since=2000-01-01', 1],
    ['modified_since=2999-01-01T00:00:00Z', 0],
    ['limit=1', 1],
    ['offset=1', 0],
    ['status=active&search=test.customer&limit=5&offset=0', 1],
  ];
  for (const [query, rows] of cases) {
    test(`filters and pagination apply to the row: ${query} -> ${rows}`, async () => {
      const res = await get(reader, `/api/v1/services?${query}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.length, rows);
      const offset = /offset=(\d+)/.exec(query)?.[1];
      assert.equal(res.body.pagination.offset, Number(offset ?? 0));
      assert.equal(res.body.pagination.has_more, false);
      assert.equal(res.body.pagination.total, query.startsWith('offset=1') ? 1 : rows);
    });
  }

  test('validation comes before the scenario', async () => {
    const bad = await get(reader, '/api/v1/services?limit=0', 'server_error');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_parameter');
    const simulated = await get(reader, '/api/v1/services', 'Validation_Error');
    assert.equal(simulated.status, 400);
    assert.equal(simulated.body.error.code, 'invalid_parameter');
    const crash = await get(reader, '/api/v1/services', 'server_error');
    assert.equal(crash.status, 500);
    assert.equal(crash.body.error.code, 'server_error');
  });

  test('provider_review does not change a list', async () => {
    const res = await get(reader, '/api/v1/services', 'provider_review');
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 1);
  });
});

describe('sandbox: GET /api/v1/services/{n}', () => {
  test('echoes the number with test credentials, without a lookup', async () => {
    // Any numeric service number, also one above what the database could store.
    for (const n of [42, liveNumber, 9_999_999_999, Number.MAX_SAFE_INTEGER]) {
      const res = await get(admin, `/api/v1/services/${n}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.service_number, n);
      assert.deepEqual(res.body.data.credentials, { username: 'root', password: 'Test-Passw0rd-Sandbox' });
      assert.notEqual(res.body.data.hostname, 'live-only.example.net');
      markers(res.body.data);
    }
  });

  test('provider_review and unknown scenarios give the normal success', async () => {
    for (const scenario of ['provider_review', 'no-such-scenario', 'SUCCESS']) {
      const res = await get(admin, '/api/v1/services/77', scenario);
      assert.equal(res.status, 200, scenario);
      assert.equal(res.body.data.service_number, 77);
      const list = await get(reader, '/api/v1/requests', scenario);
      assert.equal(list.status, 200, scenario);
      assert.equal(list.body.data.length, 1);
    }
  });

  test('Infinity is not a service number, also in the sandbox', async () => {
    for (const path of ['/api/v1/services/Infinity', '/api/v1/services/1e309']) {
      const res = await get(admin, path, 'provider_review');
      assert.equal(res.status, 400, path);
    }
    const cancel = await post(admin, '/api/v1/services/Infinity/cancel', { reason: 'moving' });
    assert.equal(cancel.status, 400);
  });

  test('a malformed number is a validation error, before any scenario', async () => {
    const res = await get(admin, '/api/v1/services/abc', 'provider_review');
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'invalid_parameter');
  });
});

describe('sandbox: POST /api/v1/service-create', () => {
  const body = { plan: 'Standard VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example' };

  test('automatic approval: 200 with an active generated service (nine digits)', async () => {
    const res = await post(adminAuto, '/api/v1/service-create', { ...body, billing_cycle: 'annually' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.status, 'active');
    assert.match(String(res.body.data.service_number), /^[1-9]\d{8}$/);
    assert.equal(res.body.data.hostname, 'web01.client.example');
    assert.equal(res.body.data.billing_cycle, 'annually');
    assert.equal(res.body.data.customer_name, null);
    markers(res.body.data);
  });

  test('manual approval: 202 with a pending create request REQ- plus six digits', async () => {
    const res = await post(writer, '/api/v1/service-create', body);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.match(res.body.data.request_id, /^REQ-\d{6}$/);
    assert.equal(res.body.data.request_type, 'create');
    assert.equal(res.body.data.request_status, 'pending');
    assert.equal(res.body.data.requested_plan, 'Standard VPS');
    assert.equal(res.body.data.service_number, null);
    markers(res.body.data);
  });

  test('provider_review: 202 with request_status provider_review (either approval mode)', async () => {
    for (const key of [writer, adminAuto]) {
      const res = await post(key, '/api/v1/service-create', body, 'PROVIDER_REVIEW');
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal(res.body.data.request_status, 'provider_review');
      markers(res.body.data);
    }
  });

  test('validation first: an unknown plan or a missing field wins over any scenario', async () => {
    const plan = await post(writer, '/api/v1/service-create', { ...body, plan: 'Mega VPS' }, 'server_error');
    assert.equal(plan.status, 400);
    assert.equal(plan.body.error.code, 'invalid_parameter');
    assert.equal(plan.body.error.details.rule, 'catalogue');
    const missing = await post(writer, '/api/v1/service-create', { plan: 'Basic VPS' }, 'provider_review');
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'missing_parameter');
    const scenario = await post(writer, '/api/v1/service-create', body, 'validation_error');
    assert.equal(scenario.status, 400);
    assert.equal(scenario.body.error.details.scenario, 'validation_error');
  });
});

describe('sandbox: password, upgrade, downgrade, cancel', () => {
  test('password: a generated test password when none is given; nothing changes, no e-mail', async () => {
    const res = await post(admin, `/api/v1/services/${liveNumber}/password`, {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.password_generated, true);
    assert.equal(typeof res.body.data.password, 'string');
    assert.equal(res.body.data.customer_notified, false);
    markers(res.body.data);
    const chosen = await post(admin, '/api/v1/services/123/password', { password: 'a-chosen-password-1' }, 'provider_review');
    assert.equal(chosen.status, 200);
    assert.equal(chosen.body.data.password_generated, false);
    assert.equal(chosen.body.data.password, undefined);
    const short = await post(admin, '/api/v1/services/123/password', { password: 'short' }, 'server_error');
    assert.equal(short.status, 400);
  });

  test('upgrade: simulated current plan Basic VPS, 202 pending', async () => {
    const res = await post(admin, '/api/v1/services/555/upgrade', { plan: 'Enterprise VPS' });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.data.current_plan, 'Basic VPS');
    assert.equal(res.body.data.requested_plan, 'Enterprise VPS');
    assert.equal(res.body.data.request_type, 'upgrade');
    assert.equal(res.body.data.request_status, 'pending');
    assert.equal(res.body.data.service_number, 555);
    assert.match(res.body.data.request_id, /^REQ-\d{6}$/);
    markers(res.body.data);
    const same = await post(admin, '/api/v1/services/555/upgrade', { plan: 'Basic VPS' }, 'provider_review');
    assert.equal(same.status, 400);
    assert.equal(same.body.error.details.rule, 'tier');
  });

  test('downgrade: simulated current plan Professional VPS', async () => {
    const res = await post(admin, '/api/v1/services/555/downgrade', { plan: 'Standard VPS' });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.data.current_plan, 'Professional VPS');
    assert.equal(res.body.data.request_type, 'downgrade');
    const up = await post(admin, '/api/v1/services/555/downgrade', { plan: 'Enterprise VPS' });
    assert.equal(up.status, 400);
    assert.equal(up.body.error.details.rule, 'tier');
  });

  test('cancel: 202 with the reason and when; a blank reason is missing', async () => {
    const res = await post(admin, '/api/v1/services/555/cancel', { reason: 'Moving out', when: 'immediate' });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(res.body.data.request_type, 'cancel');
    assert.equal(res.body.data.reason, 'Moving out');
    assert.equal(res.body.data.cancel_when, 'immediate');
    const blank = await post(admin, '/api/v1/services/555/cancel', { reason: '   ' }, 'provider_review');
    assert.equal(blank.status, 400);
    assert.equal(blank.body.error.code, 'missing_parameter');
  });

  for (const [op, body] of [
    ['upgrade', { plan: 'Standard VPS' }],
    ['downgrade', { plan: 'Basic VPS' }],
    ['cancel', { reason: 'Too expensive' }],
  ] as const) {
    test(`${op}: provider_review gives 202 with request_status provider_review`, async () => {
      const res = await post(admin, `/api/v1/services/555/${op}`, body, 'provider_review');
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal(res.body.data.request_status, 'provider_review');
      markers(res.body.data);
    });
  }
});

describe('sandbox: requests', () => {
  test('list: one generated row; filters, limit and offset apply to it', async () => {
    const res = await get(reader, '/api/v1/requests');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.length, 1);
    markers(res.body.data[0]);
    assert.equal(res.body.data[0].request_id, 'REQ-318274');
    const today = new Date().toISOString().slice(0, 10);
    const cases: Array<[string, number]> = [
      ['status=pending', 1],
      ['status=approved', 0],
      ['type=create', 1],
      ['type=upgrade', 0],
      ['source=api', 1],
      ['source=import', 0],
      [`date=${today}`, 1],
      ['date=2001-01-01', 0],
      ['search=req-318', 1],
      ['search=zzz', 0],
      ['offset=1', 0],
      ['limit=1&offset=0', 1],
    ];
    for (const [query, rows] of cases) {
      const r = await get(reader, `/api/v1/requests?${query}`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.data.length, rows, query);
    }
    const bad = await get(reader, '/api/v1/requests?type=sideways', 'server_error');
    assert.equal(bad.status, 400);
  });

  test('manage: path case-insensitive, answered as uppercase REQ- padded to six', async () => {
    const res = await post(writer, '/api/v1/requests/req-42/manage', { action: 'approve' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.request_id, 'REQ-000042');
    assert.equal(res.body.data.request_status, 'approved');
    assert.match(String(res.body.data.service_number), /^\d{9}$/);
    markers(res.body.data);
    const long = await post(writer, '/api/v1/requests/rEq-1234567/manage', { action: 'approve' });
    assert.equal(long.body.data.request_id, 'REQ-1234567');
  });

  test('manage: a simulated denial carries the reason, and the request its id tells', async () => {
    const res = await post(writer, '/api/v1/requests/REQ-000005/manage', { action: 'deny', denial_reason: 'Duplicate' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.request_status, 'denied');
    assert.equal(res.body.data.denial_reason, 'Duplicate');
    assert.equal(res.body.data.request_type, 'create');
    assert.equal(res.body.data.service_number, null, 'a denied create made no service');
    const downgrade = await post(writer, '/api/v1/requests/REQ-000007/manage', { action: 'deny', denial_reason: 'Duplicate' });
    assert.deepEqual([downgrade.body.data.request_type, downgrade.body.data.request_status], ['downgrade', 'denied']);
    assert.match(String(downgrade.body.data.service_number), /^\d{9}$/, 'a denied downgrade names its service, as in live');
  });

  test('manage: provider_review makes an approval 202, but a denial is answered first', async () => {
    const approve = await post(writer, '/api/v1/requests/REQ-000007/manage', { action: 'approve' }, 'provider_review');
    assert.equal(approve.status, 202, JSON.stringify(approve.body));
    assert.equal(approve.body.data.request_status, 'provider_review');
    const deny = await post(writer, '/api/v1/requests/REQ-000007/manage', { action: 'deny', denial_reason: 'No' }, 'provider_review');
    assert.equal(deny.status, 200);
    assert.equal(deny.body.data.request_status, 'denied');
  });

  test('manage: validation first (denial_reason, action, id format)', async () => {
    const noReason = await post(writer, '/api/v1/requests/REQ-1/manage', { action: 'deny', denial_reason: ' ' }, 'server_error');
    assert.equal(noReason.status, 400);
    assert.equal(noReason.body.error.code, 'missing_parameter');
    assert.deepEqual(noReason.body.error.details.missing, ['denial_reason']);
    const action = await post(writer, '/api/v1/requests/REQ-1/manage', { action: 'maybe' }, 'provider_review');
    assert.equal(action.status, 400);
    const id = await post(writer, '/api/v1/requests/ABC-1/manage', { action: 'approve' }, 'provider_review');
    assert.equal(id.status, 400);
  });
});

test('sandbox keys never wrote a business record or changed live data', async () => {
  const before = await businessRows();
  await post(adminAuto, '/api/v1/service-create', { plan: 'Basic VPS', hostname: 'x.example', customer_email: 'x@example.com' });
  await post(writer, '/api/v1/service-create', { plan: 'Basic VPS', hostname: 'y.example', customer_email: 'y@example.com' });
  await post(admin, `/api/v1/services/${liveNumber}/password`, { password: 'another-password-1' });
  await post(admin, `/api/v1/services/${liveNumber}/cancel`, { reason: 'test' });
  await post(writer, '/api/v1/requests/REQ-000001/manage', { action: 'approve' });
  assert.deepEqual(await businessRows(), before);
  // And nothing created appears later, in the sandbox or in the live list.
  const live = await apiKey(t.prisma, { brokerId: manualBroker, mode: 'live', scopes: ['admin:full'] });
  const list = await get(live.key, '/api/v1/services');
  assert.deepEqual(list.body.data.map((s: { service_number: number }) => s.service_number), [liveNumber]);
  const requests = await get(live.key, '/api/v1/requests');
  assert.equal(requests.body.data.length, 0);
});
