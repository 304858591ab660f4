/**
 * Live keys on the request operations: the list, every approval and denial transition, the
 * 404/409 cases, tenant isolation and two simultaneous approvals of one request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service, serviceRequest } from '../helpers/service-factories.ts';
import { formatRequestId } from '../../src/shared/ids.ts';

let t: TestApp;
let brokerId: string;
let otherBrokerId: string;
let manager: string; // requests:write only
let reader: string; // requests:read only
let admin: string;
let otherAdmin: string;

before(async () => {
  t = await createTestApp();
  brokerId = (await broker(t.prisma)).id;
  otherBrokerId = (await broker(t.prisma)).id;
  manager = (await apiKey(t.prisma, { brokerId, scopes: ['requests:write'] })).key;
  reader = (await apiKey(t.prisma, { brokerId, scopes: ['requests:read'] })).key;
  admin = (await apiKey(t.prisma, { brokerId, scopes: ['admin:full'] })).key;
  otherAdmin = (await apiKey(t.prisma, { brokerId: otherBrokerId, scopes: ['admin:full'] })).key;
});
after(async () => {
  await t?.close();
});

const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
const manage = (key: string, id: string | number, body: unknown, app = t.app) =>
  request(app)
    .post(`/api/v1/requests/${typeof id === 'number' ? formatRequestId(id) : id}/manage`)
    .set('Authorization', `Bearer ${key}`)
    .send(body as object);
const approve = (id: number | string, key = manager) => manage(key, id, { action: 'approve' });

describe('POST /api/v1/requests/{id}/manage: approval carries the request out', () => {
  test('create: the service is made active with a nine-digit number', async () => {
    const r = await serviceRequest(t.prisma, {
      brokerId,
      type: 'create',
      requestedPlan: 'Enterprise VPS',
      hostname: 'new.client.example',
      customerEmail: 'new@client.example',
      customerName: 'New Client',
      billingCycle: 'annually',
    });
    const res = await approve(r.id);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body.data;
    assert.equal(d.request_id, formatRequestId(r.id));
    assert.equal(d.request_status, 'approved');
    assert.match(String(d.service_number), /^[1-9]\d{8}$/);
    assert.ok(d.decided_at);
    const s = await t.prisma.service.findUniqueOrThrow({ where: { serviceNumber: d.service_number }, include: { plan: true } });
    assert.equal(s.brokerId, brokerId);
    assert.equal(s.status, 'active');
    assert.equal(s.plan.name, 'Enterprise VPS');
    assert.equal(s.hostname, 'new.client.example');
    assert.equal(s.customerName, 'New Client');
    assert.equal(s.billingCycle, 'annually');
    assert.match(s.passwordEnc, /^v1:/);
  });

  test('upgrade and downgrade: the plan changes', async () => {
    for (const [type, from, to] of [
      ['upgrade', 'Basic VPS', 'Professional VPS'],
      ['downgrade', 'Enterprise VPS', 'Standard VPS'],
    ] as const) {
      const s = await service(t, { brokerId, plan: from });
      const r = await serviceRequest(t.prisma, { brokerId, type, service: s, requestedPlan: to });
      const res = await approve(r.id);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.service_number, s.serviceNumber);
      assert.equal(res.body.data.current_plan, from);
      assert.equal(res.body.data.requested_plan, to);
      const after = await t.prisma.service.findUniqueOrThrow({ where: { id: s.id }, include: { plan: true } });
      assert.equal(after.plan.name, to);
      assert.ok(after.updatedAt > s.updatedAt);
    }
  });

  test('cancel immediate: cancelled at once', async () => {
    const s = await service(t, { brokerId });
    const r = await serviceRequest(t.prisma, { brokerId, type: 'cancel', service: s, cancelWhen: 'immediate' });
    const res = await approve(r.id);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const after = await t.prisma.service.findUniqueOrThrow({ where: { id: s.id } });
    assert.equal(after.status, 'cancelled');
    assert.ok(after.cancelledAt);
    assert.equal(after.cancelAt, null);
  });

  test('cancel end_of_billing_period: cancel_at at the period end, still active until then', async () => {
    const created = new Date(Date.now() - 40 * 86_400_000); // 40 days ago, monthly: period 2 ends ~20 days ahead
    const s = await service(t, { brokerId, createdAt: created, billingCycle: 'monthly' });
    const r = await serviceRequest(t.prisma, { brokerId, type: 'cancel', service: s, cancelWhen: 'end_of_billing_period' });
    const res = await approve(r.id);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const detail = await get(admin, `/api/v1/services/${s.serviceNumber}`);
    assert.equal(detail.body.data.status, 'active');
    const cancelAt = new Date(detail.body.data.cancel_at);
    assert.ok(cancelAt.getTime() > Date.now());
    assert.ok(cancelAt.getTime() < Date.now() + 32 * 86_400_000);
    assert.equal(cancelAt.getUTCDate(), created.getUTCDate() > 28 ? cancelAt.getUTCDate() : created.getUTCDate());
    assert.equal(detail.body.data.cancelled_at, null);
    // Once the time has come, the service is cancelled.
    await t.prisma.service.update({ where: { id: s.id }, data: { cancelAt: new Date(Date.now() - 1000) } });
    const later = await get(admin, `/api/v1/services/${s.serviceNumber}`);
    assert.equal(later.body.data.status, 'cancelled');
  });

  test('the path id matches case-insensitively and with any padding', async () => {
    const r = await serviceRequest(t.prisma, { brokerId, type: 'create', requestedPlan: 'Basic VPS' });
    const res = await manage(manager, `req-${r.id}`, { action: 'deny', denial_reason: 'Not now' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.request_id, formatRequestId(r.id));
  });
});

describe('POST /api/v1/requests/{id}/manage: denial, 404 and 409', () => {
  test('deny: denied with the reason; the service is untouched', async () => {
    const s = await service(t, { brokerId, plan: 'Basic VPS' });
    const r = await serviceRequest(t.prisma, { brokerId, type: 'upgrade', service: s, requestedPlan: 'Enterprise VPS' });
    const res = await manage(manager, r.id, { action: 'deny', denial_reason: '  Capacity exhausted  ' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.request_status, 'denied');
    assert.equal(res.body.data.denial_reason, 'Capacity exhausted');
    assert.ok(res.body.data.decided_at);
    const after = await t.prisma.service.findUniqueOrThrow({ where: { id: s.id }, include: { plan: true } });
    assert.equal(after.plan.name, 'Basic VPS');
    // The service may be changed again now.
    const again = await request(t.app)
      .post(`/api/v1/services/${s.serviceNumber}/upgrade`)
      .set('Authorization', `Bearer ${admin}`)
      .send({ plan: 'Standard VPS' });
    assert.equal(again.status, 202);
  });

  test('deny needs a non-blank denial_reason; action must be approve or deny', async () => {
    const r = await serviceRequest(t.prisma, { brokerId, type: 'create', requestedPlan: 'Basic VPS' });
    for (const body of [{ action: 'deny' }, { action: 'deny', denial_reason: '' }, { action: 'deny', denial_reason: '   ' }]) {
      const res = await manage(manager, r.id, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, 'missing_parameter');
      assert.deepEqual(res.body.error.details.missing, ['denial_reason']);
    }
    const nul = await manage(manager, r.id, { action: 'deny', denial_reason: 'no\u0000pe' });
    assert.equal(nul.status, 400);
    assert.equal(nul.body.error.code, 'invalid_parameter');
    const action = await manage(manager, r.id, { action: 'cancel' });
    assert.equal(action.status, 400);
    assert.equal(action.body.error.code, 'invalid_parameter');
    const none = await manage(manager, r.id, {});
    assert.equal(none.body.error.code, 'missing_parameter');
    assert.equal((await t.prisma.serviceRequest.findUniqueOrThrow({ where: { id: r.id } })).status, 'pending');
  });

  test('a request that is not pending: 409 with details.current_status', async () => {
    for (const status of ['approved', 'denied', 'provider_review'] as const) {
      const r = await serviceRequest(t.prisma, { brokerId, type: 'create', requestedPlan: 'Basic VPS', status });
      for (const body of [{ action: 'approve' }, { action: 'deny', denial_reason: 'x' }]) {
        const res = await manage(manager, r.id, body);
        assert.equal(res.status, 409, `${status} ${body.action}`);
        assert.equal(res.body.error.code, 'conflict');
        assert.deepEqual(res.body.error.details, { current_status: status });
      }
    }
  });

  test('approving twice: the second is 409 approved', async () => {
    const r = await serviceRequest(t.prisma, { brokerId, type: 'create', requestedPlan: 'Basic VPS' });
    assert.equal((await approve(r.id)).status, 200);
    const res = await approve(r.id);
    assert.equal(res.status, 409);
    assert.deepEqual(res.body.error.details, { current_status: 'approved' });
  });

  test('a plan change on a service that is no longer active: 409, the request stays pending', async () => {
    const s = await service(t, { brokerId, plan: 'Basic VPS' });
    const r = await serviceRequest(t.prisma, { brokerId, type: 'upgrade', service: s, requestedPlan: 'Standard VPS' });
    await t.prisma.service.update({ where: { id: s.id }, data: { status: 'suspended' } });
    const res = await approve(r.id);
    assert.equal(res.status, 409);
    assert.deepEqual(res.body.error.details, { current_status: 'suspended' });
    assert.equal((await t.prisma.serviceRequest.findUniqueOrThrow({ where: { id: r.id } })).status, 'pending');
    assert.equal((await t.prisma.service.findUniqueOrThrow({ where: { id: s.id }, include: { plan: true } })).plan.name, 'Basic VPS');
  });

  test('cancelling a service cancelled meanwhile: 409 cancelled', async () => {
    const s = await service(t, { brokerId });
    const r = await serviceRequest(t.prisma, { brokerId, type: 'cancel', service: s });
    await t.prisma.service.update({ where: { id: s.id }, data: { status: 'cancelled' } });
    const res = await approve(r.id);
    assert.equal(res.status, 409);
    assert.deepEqual(res.body.error.details, { current_status: 'cancelled' });
  });

  test('unknown id, a too-large id, or another broker\'s request: 404 not_found', async () => {
    const theirs = await serviceRequest(t.prisma, { brokerId: otherBrokerId, type: 'create', requestedPlan: 'Basic VPS' });
    for (const id of [formatRequestId(theirs.id), 'REQ-999999', 'REQ-99999999999999999999']) {
      const res = await manage(manager, id, { action: 'approve' });
      assert.equal(res.status, 404, id);
      assert.equal(res.body.error.code, 'not_found');
    }
    assert.equal((await t.prisma.serviceRequest.findUniqueOrThrow({ where: { id: theirs.id } })).status, 'pending');
    assert.equal((await manage(otherAdmin, theirs.id, { action: 'deny', denial_reason: 'mine' })).status, 200);
  });

  test('requests:read alone may not manage', async () => {
    const r = await serviceRequest(t.prisma, { brokerId, type: 'create', requestedPlan: 'Basic VPS' });
    const res = await approve(r.id, reader);
    assert.equal(res.status, 403);
  });
});

describe('two simultaneous approvals of one request', () => {
  test('exactly one 200 and one 409; one service is created', async () => {
    for (let round = 0; round < 3; round += 1) {
      const r = await serviceRequest(t.prisma, { brokerId, type: 'create', requestedPlan: 'Standard VPS', hostname: `race${round}.example` });
      // Two app instances, as two API processes on one database would be.
      const [a, b] = await Promise.all([manage(manager, r.id, { action: 'approve' }), manage(admin, r.id, { action: 'approve' }, await t.another())]);
      assert.deepEqual([a.status, b.status].sort(), [200, 409], JSON.stringify([a.body, b.body]));
      const loser = a.status === 409 ? a : b;
      assert.deepEqual(loser.body.error.details, { current_status: 'approved' });
      assert.equal(await t.prisma.service.count({ where: { hostname: `race${round}.example` } }), 1);
    }
  });

  test('approve and deny at once: one wins, the other is 409 with the winner\'s status', async () => {
    const s = await service(t, { brokerId, plan: 'Basic VPS' });
    const r = await serviceRequest(t.prisma, { brokerId, type: 'upgrade', service: s, requestedPlan: 'Standard VPS' });
    const [a, b] = await Promise.all([
      manage(manager, r.id, { action: 'approve' }),
      manage(manager, r.id, { action: 'deny', denial_reason: 'no' }, await t.another()),
    ]);
    assert.deepEqual([a.status, b.status].sort(), [200, 409]);
    const final = await t.prisma.serviceRequest.findUniqueOrThrow({ where: { id: r.id } });
    const winner = a.status === 200 ? a : b;
    const loser = a.status === 200 ? b : a;
    assert.equal(final.status, winner.body.data.request_status);
    assert.equal(loser.body.error.details.current_status, final.status);
    const plan = (await t.prisma.service.findUniqueOrThrow({ where: { id: s.id }, include: { plan: true } })).plan.name;
    assert.equal(plan, final.status === 'approved' ? 'Standard VPS' : 'Basic VPS');
  });
});

describe('GET /api/v1/requests', () => {
  let listBroker: string;
  let key: string;
  const ids: Record<string, number> = {};

  before(async () => {
    listBroker = (await broker(t.prisma)).id;
    key = (await apiKey(t.prisma, { brokerId: listBroker, scopes: ['requests:read'] })).key;
    const s1 = await service(t, { brokerId: listBroker, serviceNumber: 246813579, hostname: 'one.example', customerEmail: 'one@cust.example', plan: 'Basic VPS' });
    const s2 = await service(t, { brokerId: listBroker, hostname: 'two.example', customerEmail: 'two@cust.example' });
    const at = (s: string) => new Date(s);
    ids.create = (await serviceRequest(t.prisma, { brokerId: listBroker, type: 'create', requestedPlan: 'Enterprise VPS', hostname: 'fresh.example', customerEmail: 'fresh@cust.example', createdAt: at('2025-03-01T08:00:00Z') })).id;
    ids.upgrade = (await serviceRequest(t.prisma, { brokerId: listBroker, type: 'upgrade', service: s1, requestedPlan: 'Standard VPS', status: 'approved', createdAt: at('2025-03-01T23:59:59.999Z') })).id;
    ids.cancel = (await serviceRequest(t.prisma, { brokerId: listBroker, type: 'cancel', service: s2, reason: 'Budget cuts', source: 'import', createdAt: at('2025-03-02T00:00:00Z') })).id;
    ids.denied = (await serviceRequest(t.prisma, { brokerId: listBroker, type: 'create', requestedPlan: 'Basic VPS', status: 'denied', source: 'portal', createdAt: at('2025-03-02T00:00:00Z') })).id;
    // Another broker's request matching every filter.
    await serviceRequest(t.prisma, { brokerId: otherBrokerId, type: 'create', requestedPlan: 'Enterprise VPS', hostname: 'fresh.example', createdAt: at('2025-03-01T08:00:00Z') });
  });

  const idsOf = (res: request.Response) => res.body.data.map((r: { request_id: string }) => r.request_id);
  const f = (...names: string[]) => names.map((n) => formatRequestId(ids[n]!));

  test('only the broker\'s requests, newest first, ties broken by id', async () => {
    const res = await get(key, '/api/v1/requests');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(idsOf(res), f('denied', 'cancel', 'upgrade', 'create'));
    assert.deepEqual(res.body.pagination, { total: 4, limit: 25, offset: 0, has_more: false });
    const cancel = res.body.data[1];
    assert.equal(cancel.request_type, 'cancel');
    assert.equal(cancel.source, 'import');
    assert.equal(cancel.reason, 'Budget cuts');
    assert.equal(cancel.hostname, 'two.example');
  });

  test('filters: status, type, source, date (UTC day), search', async () => {
    const cases: Array<[string, string[]]> = [
      ['status=pending', f('cancel', 'create')],
      ['status=approved', f('upgrade')],
      ['type=create', f('denied', 'create')],
      ['type=create&status=denied', f('denied')],
      ['source=import', f('cancel')],
      ['source=portal', f('denied')],
      ['source=admin', []],
      ['date=2025-03-01', f('upgrade', 'create')],
      ['date=2025-03-02', f('denied', 'cancel')],
      ['date=2025-03-03', []],
      [`search=${formatRequestId(ids.cancel!).toLowerCase()}`, f('cancel')],
      ['search=FRESH.example', f('create')],
      ['search=one@cust', f('upgrade')],
      ['search=budget', f('cancel')],
      ['search=enterprise', f('create')],
      ['search=4681357', f('upgrade')],
      ['search=none-such', []],
    ];
    for (const [query, expected] of cases) {
      const res = await get(key, `/api/v1/requests?${query}`);
      assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(idsOf(res), expected, query);
      assert.equal(res.body.pagination.total, expected.length, query);
    }
    // Days PostgreSQL cannot hold a request for: refused as a format (400) or an empty list; never a 500.
    for (const edge of ['date=0000-01-01', 'date=9999-12-31']) {
      const res = await get(key, `/api/v1/requests?${edge}`);
      if (res.status === 200) assert.equal(res.body.data.length, 0, edge);
      else assert.equal(res.body.error?.code, 'invalid_parameter', `${edge}: ${JSON.stringify(res.body)}`);
    }
    for (const bad of ['date=2025-02-30', 'date=March', 'status=open', 'type=move', 'source=email', 'limit=500', 'search=%00', 'offset=1e309']) {
      const res = await get(key, `/api/v1/requests?${bad}`);
      assert.equal(res.status, 400, bad);
    }
  });

  test('pagination', async () => {
    const page = await get(key, '/api/v1/requests?limit=2&offset=1');
    assert.deepEqual(idsOf(page), f('cancel', 'upgrade'));
    assert.deepEqual(page.body.pagination, { total: 4, limit: 2, offset: 1, has_more: true });
  });

  test('services:read is not enough to list requests', async () => {
    const k = await apiKey(t.prisma, { brokerId: listBroker, scopes: ['services:read'] });
    assert.equal((await get(k.key, '/api/v1/requests')).status, 403);
  });
});
