// Issue 33: every resource an answer holds, and the object of every event (as GET /events shows it
// and as a webhook delivery carries it), names its kind in `object`, its first field, live and
// sandbox alike. One row per operation: the answer's status and the kind of each resource in it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { eventBody } from '../../src/webhooks/dispatcher.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { addInvoices } from '../reports/harness.ts';
import { service } from '../helpers/service-factories.ts';
import { event, sampleObject } from '../helpers/webhook-factories.ts';
import { eventually } from '../helpers/eventually.ts';

type Mode = 'live' | 'test';
type Json = Record<string, unknown>;

/** The kind each event type's object has (openapi.yaml EventObject's discriminator mapping). */
const OBJECT_OF_EVENT: Record<string, string> = {
  'service.created': 'service',
  'service.updated': 'service',
  'service.cancelled': 'service',
  'request.created': 'service_request',
  'request.approved': 'service_request',
  'request.denied': 'service_request',
  'report.completed': 'report',
  'report.failed': 'report',
  'webhook_endpoint.created': 'webhook_endpoint',
  'webhook_endpoint.updated': 'webhook_endpoint',
  'webhook_endpoint.deleted': 'webhook_endpoint',
  ping: 'ping',
};

let t: TestApp;
/** Per mode: a key of a broker with automatic approval, and one of a broker with manual approval. */
const keys = {} as Record<Mode, { auto: string; manual: string; brokerId: string }>;
/** Live services of the automatic broker, one per change (a service with an open request refuses another). */
const services = {} as Record<'read' | 'password' | 'upgrade' | 'downgrade' | 'cancel', number>;

before(async () => {
  t = await createTestApp();
  const auto = await broker(t.prisma, { approval: 'automatic' });
  const manual = await broker(t.prisma, { approval: 'manual' });
  for (const mode of ['live', 'test'] as const) {
    keys[mode] = {
      auto: (await apiKey(t.prisma, { brokerId: auto.id, mode, rateLimit: 10_000 })).key,
      manual: (await apiKey(t.prisma, { brokerId: manual.id, mode, rateLimit: 10_000 })).key,
      brokerId: auto.id,
    };
  }
  for (const [name, plan] of [['read', 'Standard VPS'], ['password', 'Standard VPS'], ['upgrade', 'Standard VPS'], ['downgrade', 'Professional VPS'], ['cancel', 'Standard VPS']] as const) {
    services[name] = (await service(t, { brokerId: auto.id, plan })).serviceNumber;
  }
  await addInvoices(t, auto.id, [{ status: 'paid', date: '2025-01-15' }]);
});
after(async () => {
  await t?.close();
});

const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
const post = (key: string, path: string, body?: object) => {
  const req = request(t.app).post(path).set('Authorization', `Bearer ${key}`);
  return body === undefined ? req : req.send(body);
};

/** `value` is a resource of this kind: `object` says so, and comes first. */
function assertKind(value: unknown, kind: string, where: string): Json {
  assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), `${where} is an object`);
  const json = value as Json;
  assert.equal(json.object, kind, `${where}.object`);
  assert.equal(Object.keys(json)[0], 'object', `${where}: object is the first field (${Object.keys(json).join(', ')})`);
  return json;
}

/** An event: `event` itself, and its object the kind its type carries. */
function assertEvent(value: unknown, where: string): Json {
  const e = assertKind(value, 'event', where);
  const kind = OBJECT_OF_EVENT[e.type as string];
  assert.ok(kind, `${where}: a known type (${String(e.type)})`);
  assertKind((e.data as Json).object, kind, `${where}.data.object (${String(e.type)})`);
  return e;
}

function answer(res: request.Response, status: number): unknown {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body.data;
}

for (const mode of ['live', 'test'] as const) {
  describe(`${mode === 'live' ? 'live' : 'sandbox'} answers: one object per resource`, () => {
    const k = () => keys[mode];
    const n = (name: keyof typeof services) => services[name];
    let reportId = '';
    let endpointId = '';
    let pingId = '';

    const rows: Array<[operation: string, call: () => Promise<request.Response>, status: number, kind: string, list?: boolean]> = [
      ['getAuthCheck', () => get(k().auto, '/api/v1/auth-check'), 200, 'auth_check'],
      ['postAuthCheck', () => post(k().auto, '/api/v1/auth-check'), 200, 'write_access'],
      ['createService, automatic approval', () => post(k().auto, '/api/v1/service-create', { plan: 'Basic VPS', hostname: `a-${mode}.example.com`, customer_email: 'a@example.com' }), 200, 'service'],
      ['createService, manual approval', () => post(k().manual, '/api/v1/service-create', { plan: 'Basic VPS', hostname: `m-${mode}.example.com`, customer_email: 'm@example.com' }), 202, 'service_request'],
      ['listServices', () => get(k().auto, '/api/v1/services'), 200, 'service', true],
      ['getService', () => get(k().auto, `/api/v1/services/${n('read')}`), 200, 'service'],
      ['updateServicePassword', () => post(k().auto, `/api/v1/services/${n('password')}/password`), 200, 'password_update'],
      ['upgradeService', () => post(k().auto, `/api/v1/services/${n('upgrade')}/upgrade`, { plan: 'Enterprise VPS' }), 202, 'service_request'],
      ['downgradeService', () => post(k().auto, `/api/v1/services/${n('downgrade')}/downgrade`, { plan: 'Basic VPS' }), 202, 'service_request'],
      ['cancelService', () => post(k().auto, `/api/v1/services/${n('cancel')}/cancel`, { reason: 'Moved', when: 'immediate' }), 202, 'service_request'],
      ['listRequests', () => get(k().auto, '/api/v1/requests'), 200, 'service_request', true],
      ['sendServicesReport', () => post(k().auto, '/api/v1/reports/services', { recipients: ['ops@broker.example'] }), 200, 'services_report'],
      ['sendInvoicesReport', async () => {
        const res = await post(k().auto, '/api/v1/reports/invoices', { recipients: ['ops@broker.example'], start_date: '2025-01-01', end_date: '2025-01-31' });
        reportId = res.body.data?.report_id as string;
        return res;
      }, 200, 'invoices_report'],
      ['getReport', () => get(k().auto, `/api/v1/reports/${reportId}`), 200, 'report'],
      ['listReports', () => get(k().auto, '/api/v1/reports'), 200, 'report', true],
      ['createWebhookEndpoint', async () => {
        const res = await post(k().auto, '/api/v1/webhook-endpoints', { url: 'https://93.184.216.34/capi' });
        endpointId = res.body.data?.id as string;
        return res;
      }, 200, 'webhook_endpoint'],
      ['listWebhookEndpoints', () => get(k().auto, '/api/v1/webhook-endpoints'), 200, 'webhook_endpoint', true],
      ['getWebhookEndpoint', () => get(k().auto, `/api/v1/webhook-endpoints/${endpointId}`), 200, 'webhook_endpoint'],
      ['updateWebhookEndpoint', () => post(k().auto, `/api/v1/webhook-endpoints/${endpointId}`, { description: 'Orders' }), 200, 'webhook_endpoint'],
      ['rotateWebhookEndpointSecret', () => post(k().auto, `/api/v1/webhook-endpoints/${endpointId}/rotate-secret`), 200, 'webhook_endpoint'],
      ['pingWebhookEndpoint', async () => {
        const res = await post(k().auto, `/api/v1/webhook-endpoints/${endpointId}/ping`);
        pingId = res.body.data?.id as string;
        return res;
      }, 200, 'event'],
      ['redeliverEvent', () => post(k().auto, `/api/v1/events/${pingId}/redeliver`, { endpoint_id: endpointId }), 200, 'event'],
      ['getEvent', () => get(k().auto, `/api/v1/events/${pingId}`), 200, 'event'],
      ['deleteWebhookEndpoint', () => post(k().auto, `/api/v1/webhook-endpoints/${endpointId}/delete`), 200, 'webhook_endpoint'],
    ];

    for (const [operation, call, status, kind, list] of rows) {
      test(`${operation}: ${status}, ${list ? 'each item' : 'its data'} with object "${kind}"`, async () => {
        const data = await answer(await call(), status);
        if (list) {
          assert.ok(Array.isArray(data) && data.length > 0, `${operation} lists something`);
          data.forEach((item, i) => assertKind(item, kind, `data[${i}]`));
        } else if (kind === 'event') assertEvent(data, 'data');
        else assertKind(data, kind, 'data');
      });
    }

    test('manageRequest: the decided request is a service_request (approving the cancellation)', async () => {
      const requests = (await answer(await get(k().auto, '/api/v1/requests?type=cancel&status=pending'), 200)) as Json[];
      const id = mode === 'live' ? requests[0]!.request_id : 'REQ-000001';
      assertKind(await answer(await post(k().auto, `/api/v1/requests/${String(id)}/manage`, { action: 'approve' }), 200), 'service_request', 'data');
    });

    test('listEvents: every event, and its object the kind its type carries; every type the operations above wrote', async () => {
      // A live report's report.completed is written once its recipient's outcome is known; the
      // sandbox's approval is of a create request, so no cancellation takes effect there.
      const wanted = ['service.created', 'service.updated', 'request.created', 'request.approved', 'report.completed', 'ping', ...(mode === 'live' ? ['service.cancelled'] : [])];
      const events = await eventually(async () => {
        const page = (await answer(await get(k().auto, '/api/v1/events?limit=100'), 200)) as Json[];
        const types = new Set(page.map((e) => e.type));
        return wanted.every((type) => types.has(type)) ? page : undefined;
      }, 30_000, `events of ${wanted.join(', ')}`);
      events.forEach((e, i) => assertEvent(e, `data[${i}]`));
    });

    test('a webhook delivery\'s body: each event as GET /events shows it, `object` first in it and in its object', async () => {
      const stored = await t.prisma.event.findMany({ where: { brokerId: k().brokerId, mode } });
      assert.ok(stored.length >= 7);
      for (const row of stored) {
        const body = eventBody(row);
        assertEvent(JSON.parse(body), `delivery of ${row.type}`);
        assert.ok(body.startsWith('{"object":"event",'), body.slice(0, 40));
      }
    });
  });
}

describe('events recorded before objects had `object`', () => {
  test('show it all the same, first, named by their type', async () => {
    const { brokerId, auto } = keys.live;
    for (const type of ['service.updated', 'request.denied', 'report.failed', 'ping'] as const) {
      const { object: _kind, ...older } = sampleObject(type);
      const id = await event(t.prisma, { brokerId, type, object: older });
      const shown = await answer(await get(auto, `/api/v1/events/${id}`), 200);
      assertEvent(shown, type);
      assert.deepEqual((shown as { data: { object: Json } }).data.object, sampleObject(type));
      const row = await t.prisma.event.findUniqueOrThrow({ where: { id } });
      assertEvent(JSON.parse(eventBody(row)), `delivery of ${type}`);
    }
  });
});
