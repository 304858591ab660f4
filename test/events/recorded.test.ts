/**
 * Every change of a service or a service request writes its event in the change's own transaction
 * (src/events/store.ts): one row per change, the events it writes, and the object each carries as
 * the API's own answers show it (never credentials). A refused change writes none.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { applyAllDueCancellations } from '../../src/services/store.ts';
import { formatRequestId } from '../../src/shared/ids.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { eventsWrittenBy } from '../helpers/events.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service, serviceRequest } from '../helpers/service-factories.ts';

let t: TestApp;
let manual: { brokerId: string; key: string };
let automatic: { brokerId: string; key: string };

async function brokerWithKey(approval: 'manual' | 'automatic') {
  const { id } = await broker(t.prisma, { approval });
  return { brokerId: id, key: (await apiKey(t.prisma, { brokerId: id, scopes: ['admin:full'] })).key };
}

before(async () => {
  t = await createTestApp();
  manual = await brokerWithKey('manual');
  automatic = await brokerWithKey('automatic');
});
after(async () => {
  await t?.close();
});

const post = (key: string, path: string, body: object = {}) => request(t.app).post(path).set('Authorization', `Bearer ${key}`).send(body);
const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

/** The broker's events written by `change`, oldest first. */
const eventsOf = async (brokerId: string, change: () => Promise<unknown>) => (await eventsWrittenBy(t.prisma, brokerId, change)).events;

const NEW_SERVICE = { plan: 'Professional VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example', customer_name: 'Client Ltd' };

describe('events written with each change (live)', () => {
  test('service-create, automatic approval → service.created, request.created (approved)', async () => {
    let answer: Record<string, unknown> = {};
    const events = await eventsOf(automatic.brokerId, async () => {
      const res = await post(automatic.key, '/api/v1/service-create', NEW_SERVICE);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      answer = res.body.data;
    });
    assert.deepEqual(events.map((e) => e.type), ['service.created', 'request.created']);
    assert.ok(events.every((e) => e.mode === 'live'));
    const { credentials: _credentials, ...shown } = answer;
    assert.deepEqual(events[0]!.object, shown, 'the service as the answer shows it, without its credentials');
    assert.equal(events[1]!.object.request_status, 'approved');
    assert.equal(events[1]!.object.service_number, answer.service_number);
  });

  test('service-create, manual approval → request.created (pending)', async () => {
    let answer: Record<string, unknown> = {};
    const events = await eventsOf(manual.brokerId, async () => {
      const res = await post(manual.key, '/api/v1/service-create', NEW_SERVICE);
      assert.equal(res.status, 202, JSON.stringify(res.body));
      answer = res.body.data;
    });
    assert.deepEqual(events.map((e) => e.type), ['request.created']);
    assert.deepEqual(events[0]!.object, answer);
  });

  test('a new password → service.updated, with no credential anywhere in the event', async () => {
    const s = await service(t, { brokerId: manual.brokerId });
    let password = '';
    const events = await eventsOf(manual.brokerId, async () => {
      const res = await post(manual.key, `/api/v1/services/${s.serviceNumber}/password`, {});
      assert.equal(res.status, 200, JSON.stringify(res.body));
      password = res.body.data.password;
    });
    assert.deepEqual(events.map((e) => e.type), ['service.updated']);
    assert.equal(events[0]!.object.service_number, s.serviceNumber);
    assert.equal('credentials' in events[0]!.object, false);
    assert.ok(password.length > 0 && !JSON.stringify(events).includes(password));
  });

  test('upgrade and cancel asked for → request.created each', async () => {
    const s = await service(t, { brokerId: manual.brokerId, plan: 'Basic VPS' });
    const other = await service(t, { brokerId: manual.brokerId });
    const events = await eventsOf(manual.brokerId, async () => {
      assert.equal((await post(manual.key, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Professional VPS' })).status, 202);
      assert.equal((await post(manual.key, `/api/v1/services/${other.serviceNumber}/cancel`, { reason: 'moving on' })).status, 202);
    });
    assert.deepEqual(events.map((e) => [e.type, e.object.request_type, e.object.service_number]), [
      ['request.created', 'upgrade', s.serviceNumber],
      ['request.created', 'cancel', other.serviceNumber],
    ]);
  });

  const decisions = [
    { what: 'approve a create', type: 'create', body: { action: 'approve' }, expect: ['request.approved', 'service.created'] },
    { what: 'approve an upgrade', type: 'upgrade', body: { action: 'approve' }, expect: ['request.approved', 'service.updated'] },
    { what: 'approve an immediate cancel', type: 'cancel', cancelWhen: 'immediate', body: { action: 'approve' }, expect: ['request.approved', 'service.cancelled'] },
    { what: 'approve a cancel at the end of the billing period', type: 'cancel', cancelWhen: 'end_of_billing_period', body: { action: 'approve' }, expect: ['request.approved', 'service.updated'] },
    { what: 'deny', type: 'upgrade', body: { action: 'deny', denial_reason: 'not now' }, expect: ['request.denied'] },
  ] as const;
  for (const row of decisions) {
    test(`${row.what} → ${row.expect.join(', ')}`, async () => {
      const s = row.type === 'create' ? undefined : await service(t, { brokerId: manual.brokerId, plan: 'Basic VPS' });
      const r = await serviceRequest(t.prisma, {
        brokerId: manual.brokerId,
        type: row.type,
        ...(s ? { service: s } : {}),
        ...(row.type === 'upgrade' || row.type === 'create' ? { requestedPlan: 'Professional VPS' as const } : {}),
        ...('cancelWhen' in row ? { cancelWhen: row.cancelWhen } : {}),
      });
      let answer: Record<string, unknown> = {};
      const events = await eventsOf(manual.brokerId, async () => {
        const res = await post(manual.key, `/api/v1/requests/${formatRequestId(r.id)}/manage`, row.body);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        answer = res.body.data;
      });
      assert.deepEqual(events.map((e) => e.type), row.expect);
      assert.deepEqual(events[0]!.object, answer, 'the request as the answer shows it');
      if (events[1]) assert.equal(events[1].object.service_number, answer.service_number);
      if (row.expect.includes('service.updated' as never) && row.type === 'upgrade') assert.equal(events[1]!.object.plan, 'Professional VPS');
      if (row.type === 'cancel' && row.cancelWhen === 'end_of_billing_period') {
        // The schedule is a change of the service: cancel_at set, status still active, was null before.
        const shown = (await get(manual.key, `/api/v1/services/${String(answer.service_number)}`)).body.data as Record<string, unknown>;
        assert.equal(events[1]!.object.status, 'active');
        assert.equal(events[1]!.object.cancel_at, shown.cancel_at);
        assert.ok(typeof shown.cancel_at === 'string');
        assert.equal(events[1]!.previousAttributes?.cancel_at, null);
      }
      if (row.expect.includes('service.cancelled' as never)) assert.equal(events[1]!.object.status, 'cancelled');
    });
  }

  test('a refused change writes no event (a decision on a decided request: 409)', async () => {
    const r = await serviceRequest(t.prisma, { brokerId: manual.brokerId, type: 'create', status: 'approved' });
    const events = await eventsOf(manual.brokerId, async () => {
      assert.equal((await post(manual.key, `/api/v1/requests/${formatRequestId(r.id)}/manage`, { action: 'deny', denial_reason: 'x' })).status, 409);
    });
    assert.deepEqual(events, []);
  });

  test('a scheduled cancellation that falls due → service.cancelled once, on the next read', async () => {
    const s = await service(t, { brokerId: manual.brokerId, cancelAt: new Date(Date.now() - 1000) });
    const events = await eventsOf(manual.brokerId, async () => {
      const first = await get(manual.key, `/api/v1/services/${s.serviceNumber}`);
      assert.equal(first.body.data.status, 'cancelled');
      await get(manual.key, `/api/v1/services/${s.serviceNumber}`);
      await get(manual.key, '/api/v1/services');
    });
    assert.deepEqual(events.map((e) => [e.type, e.object.service_number, e.object.status]), [['service.cancelled', s.serviceNumber, 'cancelled']]);
  });

  test('a scheduled cancellation that falls due → service.cancelled from the worker\'s sweep, unread', async () => {
    const s = await service(t, { brokerId: automatic.brokerId, cancelAt: new Date(Date.now() - 1000) });
    const events = await eventsOf(automatic.brokerId, async () => {
      assert.ok((await applyAllDueCancellations(t.prisma)) >= 1);
      assert.equal(await applyAllDueCancellations(t.prisma), 0, 'a second sweep finds nothing due');
    });
    assert.deepEqual(events.map((e) => [e.type, e.object.service_number]), [['service.cancelled', s.serviceNumber]]);
  });
});

describe('deliveries owed, written with the events', () => {
  /** An endpoint row as the webhook operations write it (the secret's form does not matter here). */
  async function endpoint(brokerId: string, over: { mode?: 'live' | 'test'; events?: string[]; status?: 'enabled' | 'disabled' } = {}) {
    return t.prisma.webhookEndpoint.create({
      data: { id: `we_${Math.random().toString(36).slice(2, 14)}`, brokerId, mode: over.mode ?? 'live', url: 'https://hooks.client.example/', events: over.events ?? [], status: over.status ?? 'enabled', secret: 'sealed' },
    });
  }
  const owed = async (endpointId: string) => (await t.prisma.webhookDelivery.findMany({ where: { endpointId }, include: { event: true } })).map((d) => d.event.type).sort();

  test('each enabled endpoint of the mode subscribed to the type gets one delivery per event, due at once', async () => {
    const { brokerId, key } = await brokerWithKey('manual');
    const all = await endpoint(brokerId);
    const onlyRequests = await endpoint(brokerId, { events: ['request.created'] });
    const onlyServices = await endpoint(brokerId, { events: ['service.updated'] });
    const disabled = await endpoint(brokerId, { status: 'disabled' });
    const test = await endpoint(brokerId, { mode: 'test' });
    const other = await endpoint((await brokerWithKey('manual')).brokerId);
    const s = await service(t, { brokerId });
    const before = Date.now();
    const res = await post(key, `/api/v1/services/${s.serviceNumber}/password`, {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(await owed(all.id), ['service.updated']);
    assert.deepEqual(await owed(onlyRequests.id), []);
    assert.deepEqual(await owed(onlyServices.id), ['service.updated']);
    assert.deepEqual(await owed(disabled.id), [], 'a disabled endpoint is owed nothing');
    assert.deepEqual(await owed(test.id), [], 'live events never go to test endpoints');
    assert.deepEqual(await owed(other.id), [], "another broker's endpoint is owed nothing");
    const [d] = await t.prisma.webhookDelivery.findMany({ where: { endpointId: all.id } });
    assert.equal(d!.status, 'pending');
    assert.ok(d!.nextAttemptAt!.getTime() >= before - 1000 && d!.nextAttemptAt!.getTime() <= Date.now() + 1000);
  });

  test('a refused change owes nothing', async () => {
    const { brokerId, key } = await brokerWithKey('manual');
    const all = await endpoint(brokerId);
    const res = await post(key, '/api/v1/services/999999999/password', {});
    assert.equal(res.status, 404, JSON.stringify(res.body));
    assert.deepEqual(await owed(all.id), []);
  });
});
