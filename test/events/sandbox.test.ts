/**
 * A sandbox (test-mode) key's simulated change writes no business record but the events its live
 * twin writes (test/events/recorded.test.ts), in test mode, with `simulated: true` in the object:
 * one row per sandbox operation that simulates a change, the events it writes and the object each
 * carries as the sandbox's answer shows it (never credentials). A read, a refusal or a replay
 * writes none, and the two modes never cross (events, endpoints, deliveries).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { eventsWrittenBy } from '../helpers/events.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

let t: TestApp;
let manual: Broker;
let automatic: Broker;

interface Broker {
  brokerId: string;
  sandbox: string;
  live: string;
}

async function brokerWithKeys(approval: 'manual' | 'automatic'): Promise<Broker> {
  const { id } = await broker(t.prisma, { approval });
  const key = async (mode: 'live' | 'test') => (await apiKey(t.prisma, { brokerId: id, mode, scopes: ['admin:full'] })).key;
  return { brokerId: id, sandbox: await key('test'), live: await key('live') };
}

before(async () => {
  t = await createTestApp();
  manual = await brokerWithKeys('manual');
  automatic = await brokerWithKeys('automatic');
});
after(async () => {
  await t?.close();
});

interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: object;
  scenario?: string;
  idempotencyKey?: string;
}

function send(key: string, call: Call) {
  let r = call.method === 'GET' ? request(t.app).get(call.path) : request(t.app).post(call.path).send(call.body ?? {});
  r = r.set('Authorization', `Bearer ${key}`);
  if (call.scenario) r = r.set('X-Test-Scenario', call.scenario);
  if (call.idempotencyKey) r = r.set('Idempotency-Key', call.idempotencyKey);
  return r;
}

/** The broker's events written by `change`, oldest first, with the answer it got. */
async function eventsOf(brokerId: string, change: () => Promise<request.Response>) {
  const { result: res, events } = await eventsWrittenBy(t.prisma, brokerId, change);
  return { res, events };
}

const NEW_SERVICE = { plan: 'Professional VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example', customer_name: 'Client Ltd' };
const SERVICE_NUMBER = 123456789;
/** The fields of a service as the API shows it (openapi.yaml `Service`), with the sandbox markers. */
const SERVICE_FIELDS = ['object', 'service_number', 'status', 'plan', 'hostname', 'customer_email', 'customer_name', 'billing_cycle', 'created_at', 'updated_at', 'cancel_at', 'cancelled_at', 'mode', 'simulated'].sort();

type Data = Record<string, unknown>;

interface Row {
  what: string;
  broker: () => Broker;
  call: Call;
  status: number;
  expect: string[];
  /** The object each event carries, from the answer's `data`. */
  objects: (data: Data) => Array<(object: Data) => void>;
}

/** The event's object is the answer's, plus `simulated: true`. */
const isAnswer = (data: Data) => (object: Data) => assert.deepEqual(object, { ...data, simulated: true });

const rows: Row[] = [
  {
    what: 'service-create, automatic approval',
    broker: () => automatic,
    call: { method: 'POST', path: '/api/v1/service-create', body: NEW_SERVICE },
    status: 200,
    expect: ['service.created', 'request.created'],
    objects: (data) => [
      isAnswer(data),
      (object) => {
        assert.equal(object.request_type, 'create');
        assert.equal(object.request_status, 'approved');
        assert.equal(object.service_number, data.service_number);
        assert.equal(object.requested_plan, NEW_SERVICE.plan);
        assert.equal(object.hostname, NEW_SERVICE.hostname);
        assert.deepEqual([object.mode, object.simulated], ['test', true]);
      },
    ],
  },
  {
    what: 'service-create, manual approval',
    broker: () => manual,
    call: { method: 'POST', path: '/api/v1/service-create', body: NEW_SERVICE },
    status: 202,
    expect: ['request.created'],
    objects: (data) => [isAnswer(data)],
  },
  {
    what: 'service-create, provider_review scenario',
    broker: () => automatic,
    call: { method: 'POST', path: '/api/v1/service-create', body: NEW_SERVICE, scenario: 'provider_review' },
    status: 202,
    expect: ['request.created'],
    objects: (data) => [isAnswer(data), () => assert.equal(data.request_status, 'provider_review')],
  },
  {
    what: 'a new (generated) password',
    broker: () => manual,
    call: { method: 'POST', path: `/api/v1/services/${SERVICE_NUMBER}/password`, body: {} },
    status: 200,
    expect: ['service.updated'],
    objects: (data) => [
      (object) => {
        assert.deepEqual(Object.keys(object).sort(), SERVICE_FIELDS, 'the service as the sandbox shows it, without credentials');
        assert.deepEqual([object.service_number, object.updated_at, object.mode, object.simulated], [SERVICE_NUMBER, data.updated_at, 'test', true]);
      },
    ],
  },
  {
    what: 'a chosen password',
    broker: () => manual,
    call: { method: 'POST', path: `/api/v1/services/${SERVICE_NUMBER}/password`, body: { password: 'My-Chosen-Passw0rd' } },
    status: 200,
    expect: ['service.updated'],
    objects: () => [(object) => assert.equal(object.service_number, SERVICE_NUMBER)],
  },
  ...(['upgrade', 'downgrade'] as const).map(
    (change): Row => ({
      what: change,
      broker: () => manual,
      call: { method: 'POST', path: `/api/v1/services/${SERVICE_NUMBER}/${change}`, body: { plan: change === 'upgrade' ? 'Enterprise VPS' : 'Basic VPS' } },
      status: 202,
      expect: ['request.created'],
      objects: (data) => [isAnswer(data), () => assert.equal(data.request_type, change)],
    }),
  ),
  {
    what: 'cancel',
    broker: () => manual,
    call: { method: 'POST', path: `/api/v1/services/${SERVICE_NUMBER}/cancel`, body: { reason: 'moving on', when: 'immediate' } },
    status: 202,
    expect: ['request.created'],
    objects: (data) => [isAnswer(data), () => assert.equal(data.request_type, 'cancel')],
  },
  {
    what: 'approve a request',
    broker: () => manual,
    call: { method: 'POST', path: '/api/v1/requests/REQ-318274/manage', body: { action: 'approve' } },
    status: 200,
    expect: ['request.approved', 'service.created'],
    objects: (data) => [
      isAnswer(data),
      (object) => {
        assert.deepEqual(Object.keys(object).sort(), SERVICE_FIELDS);
        assert.deepEqual([object.service_number, object.plan, object.hostname, object.status], [data.service_number, data.requested_plan, data.hostname, 'active']);
      },
    ],
  },
  {
    what: 'deny a request',
    broker: () => manual,
    call: { method: 'POST', path: '/api/v1/requests/REQ-318274/manage', body: { action: 'deny', denial_reason: 'not now' } },
    status: 200,
    expect: ['request.denied'],
    objects: (data) => [isAnswer(data)],
  },
  {
    what: 'approve under provider_review (neither approved nor denied)',
    broker: () => manual,
    call: { method: 'POST', path: '/api/v1/requests/REQ-318274/manage', body: { action: 'approve' }, scenario: 'provider_review' },
    status: 202,
    expect: [],
    objects: () => [],
  },
  {
    what: 'an invoices report',
    broker: () => manual,
    call: { method: 'POST', path: '/api/v1/reports/invoices', body: { recipients: ['a@broker.example', 'b@broker.example'], start_date: '2025-01-01', end_date: '2025-01-31' } },
    status: 200,
    expect: ['report.completed'],
    objects: (data) => [
      (object) => {
        assert.deepEqual(
          [object.report_id, object.report_type, object.status, object.date_range, object.status_filter, object.recipients_sent, object.recipients_failed, object.recipients_pending],
          [data.report_id, 'invoices', 'completed', { start: '2025-01-01', end: '2025-01-31' }, null, 2, 0, 0],
        );
        assert.deepEqual((object.recipients as Data[]).map((r) => [r.email, r.status]), [['a@broker.example', 'sent'], ['b@broker.example', 'sent']]);
        assert.deepEqual([object.mode, object.simulated], ['test', true]);
      },
    ],
  },
  {
    what: 'a services report',
    broker: () => automatic,
    call: { method: 'POST', path: '/api/v1/reports/services', body: { recipients: ['a@broker.example'], status: 'active' } },
    status: 200,
    expect: ['report.completed'],
    objects: (data) => [
      (object) => {
        assert.deepEqual([object.report_id, object.report_type, object.status, object.date_range, object.status_filter], [data.report_id, 'services', 'completed', null, 'active']);
        assert.deepEqual([object.mode, object.simulated], ['test', true]);
      },
    ],
  },
];

describe('events written by each simulated change (sandbox)', () => {
  for (const row of rows) {
    test(`${row.what} → ${row.expect.join(', ') || 'no event'}`, async () => {
      const { brokerId, sandbox } = row.broker();
      const { res, events } = await eventsOf(brokerId, () => send(sandbox, row.call));
      assert.equal(res.status, row.status, JSON.stringify(res.body));
      const data = res.body.data as Data;
      assert.deepEqual(events.map((e) => e.type), row.expect);
      for (const e of events) {
        assert.equal(e.mode, 'test', `${e.type} is a test-mode event`);
        assert.equal(e.object.simulated, true, `${e.type} says it is simulated`);
        assert.equal('credentials' in e.object || 'password' in e.object, false, `${e.type} carries no credential`);
      }
      if (typeof data.password === 'string') assert.ok(!JSON.stringify(events).includes(data.password), 'the generated password is in no event');
      const checks = row.objects(data);
      for (const [i, check] of checks.entries()) check(events[i]?.object ?? {});
    });
  }

  test('a replayed sandbox change (same Idempotency-Key) writes its events once', async () => {
    const call: Call = { method: 'POST', path: `/api/v1/services/${SERVICE_NUMBER}/cancel`, body: { reason: 'moving on' }, idempotencyKey: randomUUID() };
    const first = await eventsOf(manual.brokerId, () => send(manual.sandbox, call));
    const again = await eventsOf(manual.brokerId, () => send(manual.sandbox, call));
    assert.equal(again.res.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.res.body, first.res.body);
    assert.deepEqual(first.events.map((e) => e.type), ['request.created']);
    assert.deepEqual(again.events, []);
  });

  const writesNothing: Array<[what: string, call: Call]> = [
    ['the services list', { method: 'GET', path: '/api/v1/services' }],
    ['a service', { method: 'GET', path: `/api/v1/services/${SERVICE_NUMBER}` }],
    ['the requests list', { method: 'GET', path: '/api/v1/requests' }],
    ['a report run', { method: 'GET', path: `/api/v1/reports/${randomUUID()}` }],
    ['auth-check (GET)', { method: 'GET', path: '/api/v1/auth-check' }],
    ['auth-check (POST)', { method: 'POST', path: '/api/v1/auth-check' }],
    ['a refused change (invalid plan)', { method: 'POST', path: `/api/v1/services/${SERVICE_NUMBER}/upgrade`, body: { plan: 'No Such Plan' } }],
    ['the validation_error scenario', { method: 'POST', path: '/api/v1/service-create', body: NEW_SERVICE, scenario: 'validation_error' }],
    ['the server_error scenario', { method: 'POST', path: `/api/v1/services/${SERVICE_NUMBER}/password`, body: {}, scenario: 'server_error' }],
  ];
  for (const [what, call] of writesNothing) {
    test(`${what} writes no event`, async () => {
      const { events } = await eventsOf(manual.brokerId, () => send(manual.sandbox, call));
      assert.deepEqual(events, []);
    });
  }
});

describe('modes never cross', () => {
  /** An endpoint row as the webhook operations write it (the secret's form does not matter here). */
  const endpoint = (brokerId: string, mode: 'live' | 'test') =>
    t.prisma.webhookEndpoint.create({
      data: { id: `we_${Math.random().toString(36).slice(2, 14)}`, brokerId, mode, url: 'https://hooks.example/', events: [], status: 'enabled', secret: 'sealed' },
    });
  const owed = async (endpointId: string) => (await t.prisma.webhookDelivery.findMany({ where: { endpointId }, include: { event: true } })).map((d) => [d.event.type, d.event.mode]);

  test('a sandbox change writes test events only, owed to test-mode endpoints only; a live change the other way round', async () => {
    const b = await brokerWithKeys('manual');
    const live = await endpoint(b.brokerId, 'live');
    const test = await endpoint(b.brokerId, 'test');
    const s = await service(t, { brokerId: b.brokerId });

    const simulated = await eventsOf(b.brokerId, () => send(b.sandbox, { method: 'POST', path: `/api/v1/services/${s.serviceNumber}/password`, body: {} }));
    assert.equal(simulated.res.status, 200);
    assert.deepEqual(simulated.events.map((e) => [e.type, e.mode]), [['service.updated', 'test']]);
    assert.deepEqual(await owed(test.id), [['service.updated', 'test']]);
    assert.deepEqual(await owed(live.id), [], 'a sandbox event never goes to a live endpoint');
    const [d] = await t.prisma.webhookDelivery.findMany({ where: { endpointId: test.id } });
    assert.equal(d!.eventId, simulated.events[0]!.id);
    assert.equal(d!.status, 'pending');

    const real = await eventsOf(b.brokerId, () => send(b.live, { method: 'POST', path: `/api/v1/services/${s.serviceNumber}/password`, body: {} }));
    assert.equal(real.res.status, 200);
    assert.deepEqual(real.events.map((e) => [e.type, e.mode, e.object.simulated]), [['service.updated', 'live', undefined]]);
    assert.deepEqual(await owed(live.id), [['service.updated', 'live']]);
    assert.deepEqual(await owed(test.id), [['service.updated', 'test']], 'a live event never goes to a test endpoint');
  });

  test('a sandbox change about a live service number changes nothing of it', async () => {
    const s = await service(t, { brokerId: manual.brokerId, plan: 'Basic VPS' });
    const before = await t.prisma.service.findUniqueOrThrow({ where: { id: s.id } });
    const requestsBefore = await t.prisma.serviceRequest.count({ where: { brokerId: manual.brokerId } });
    const { events } = await eventsOf(manual.brokerId, async () => {
      await send(manual.sandbox, { method: 'POST', path: `/api/v1/services/${s.serviceNumber}/password`, body: {} });
      return send(manual.sandbox, { method: 'POST', path: `/api/v1/services/${s.serviceNumber}/upgrade`, body: { plan: 'Enterprise VPS' } });
    });
    assert.deepEqual(events.map((e) => [e.type, e.mode]), [['service.updated', 'test'], ['request.created', 'test']]);
    assert.deepEqual(await t.prisma.service.findUniqueOrThrow({ where: { id: s.id } }), before);
    assert.equal(await t.prisma.serviceRequest.count({ where: { brokerId: manual.brokerId } }), requestsBefore);
  });
});
