/**
 * Every event type, caused by its own operation, reaches a real HTTP receiver in this process:
 * one row per (event type, key mode). Endpoints are made through the API, so the secret each
 * delivery is verified with (the `standardwebhooks` package) is the one the API showed. Each
 * broker has a live and a test-mode endpoint: a live change reaches only the live one, a
 * sandbox simulation only the test one. Every delivery is checked the same way: signed, its
 * body the event as GET /api/v1/events/{event_id} shows it, no credential in it, and recorded
 * there as delivered at the first attempt.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import type { EventType } from '../../src/events/store.ts';
import { applyAllDueCancellations } from '../../src/services/store.ts';
import { WEBHOOK_USER_AGENT } from '../../src/webhooks/dispatcher.ts';
import { createJobs } from '../../src/background.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { eventually } from '../helpers/eventually.ts';
import { startReceiver, verified, type Received, type Receiver } from '../helpers/webhooks.ts';
import { addInvoices } from '../reports/harness.ts';

type Mode = 'live' | 'test';
type Data = Record<string, unknown>;

let t: TestApp;
let receiver: Receiver;
let smtp: TestSmtp;

before(async () => {
  smtp = await startTestSmtp();
  t = await createTestApp({ webhookRetrySchedule: [0, 1, 2], webhookTimeoutMs: 2000, webhookAllowPrivateUrls: true, smtpUrl: smtp.url });
  receiver = await startReceiver();
});
after(async () => {
  await t?.close();
  await receiver?.stop();
  await smtp?.stop();
});

const post = (key: string, path: string, body: object = {}, app: Express = t.app) => request(app).post(path).set('Authorization', `Bearer ${key}`).send(body);
const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

/** The password every factory-made service starts with: it must never reach a receiver. */
const INITIAL_PASSWORD = 'Initial-Passw0rd';
const RANGE = { start_date: '2025-05-01', end_date: '2025-05-31' };
const NEW_SERVICE = { plan: 'Professional VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example', customer_name: 'Client Ltd' };
const SANDBOX_REQUEST = 'REQ-318274';

interface Endpoint {
  id: string;
  secret: string;
  /** The receiver's path it posts to. */
  path: string;
}

interface Broker {
  brokerId: string;
  keys: Record<Mode, string>;
  endpoints: Record<Mode, Endpoint>;
}

let brokers = 0;

/** A new receiver path's endpoint, made with `key` through POST /api/v1/webhook-endpoints. */
async function endpoint(key: string, path: string, events?: EventType[]): Promise<Endpoint> {
  const res = await post(key, '/api/v1/webhook-endpoints', { url: receiver.url(path), ...(events ? { events } : {}) });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { id: res.body.data.id, secret: res.body.data.secret, path };
}

/** A broker with a live and a sandbox admin key, and an endpoint of each mode taking every type. */
async function brokerWithEndpoints(approval: 'manual' | 'automatic'): Promise<Broker> {
  const { id: brokerId } = await broker(t.prisma, { approval });
  const key = async (mode: Mode) => (await apiKey(t.prisma, { brokerId, mode, scopes: ['admin:full'], rateLimit: 100_000 })).key;
  const keys = { live: await key('live'), test: await key('test') };
  const n = ++brokers;
  return { brokerId, keys, endpoints: { live: await endpoint(keys.live, `b${n}/live`), test: await endpoint(keys.test, `b${n}/test`) } };
}

const copiesOf = (path: string, type?: string) => receiver.to(path).filter((c) => type === undefined || (JSON.parse(c.body) as Data).type === type);

/** The first copy of a `type` event the endpoint got. */
const arrived = (e: Endpoint, type: string) => eventually(() => copiesOf(e.path, type)[0], 20_000, `a ${type} delivery to ${e.path}`);

/** GET /api/v1/events/{event_id} once none of its deliveries is pending. */
const settled = (key: string, eventId: string) =>
  eventually(async () => {
    const res = await get(key, `/api/v1/events/${eventId}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const detail = res.body.data as Data & { deliveries: Array<Data & { status: string; attempts: Data[] }> };
    return detail.deliveries.every((d) => d.status !== 'pending') ? detail : undefined;
  }, 20_000, `the deliveries of ${eventId} to be final`);

/** The types of a change to a record that already existed. */
const CHANGES = new Set(['service.updated', 'service.cancelled', 'request.approved', 'request.denied', 'report.completed', 'report.failed', 'webhook_endpoint.updated']);

interface Expected {
  key: string;
  endpoint: Endpoint;
  type: string;
  mode: Mode;
  simulated: boolean;
  /** Texts that must not appear in the body: keys, secrets, passwords. */
  secrets: string[];
}

/** What every delivery must be; the event's object. */
async function assertDelivery(copy: Received, x: Expected): Promise<Data> {
  const payload = verified(x.endpoint.secret, copy);
  const body = JSON.parse(copy.body) as Data & { data: { object: Data } };
  assert.deepEqual(payload, body, 'the verified payload is the body');
  assert.equal(copy.headers['webhook-id'], body.id, 'webhook-id is the event id');
  assert.match(String(body.id), /^evt_[A-Za-z0-9]{24}$/);
  assert.equal(copy.headers['content-type'], 'application/json');
  assert.equal(copy.headers['user-agent'], WEBHOOK_USER_AGENT);
  assert.match(String(copy.headers['user-agent']), /client-api-v1/, 'the user agent names the server');
  assert.deepEqual(Object.keys(body), ['object', 'id', 'sequence', 'type', 'created_at', 'mode', 'data'], 'the event, `object` first');
  assert.equal(body.object, 'event');
  // What a change altered rides with it (test/events/previous-attributes.test.ts); a creation or a ping has none.
  assert.deepEqual(Object.keys(body.data), CHANGES.has(x.type) ? ['object', 'previous_attributes'] : ['object']);
  assert.equal(Object.keys(body.data.object)[0], 'object', 'the event\'s object names its kind first');
  assert.deepEqual([body.type, body.mode, body.data.object.simulated], [x.type, x.mode, x.simulated ? true : undefined]);
  assert.doesNotMatch(copy.body, /"(password|credentials)"\s*:/, 'no credential field');
  for (const secret of x.secrets) assert.equal(copy.body.includes(secret), false, 'no key, secret or password in the body');

  const { deliveries, ...shown } = await settled(x.key, String(body.id));
  assert.deepEqual(body, shown, 'the body is the event as GET /api/v1/events/{event_id} shows it');
  assert.deepEqual(
    deliveries.map((d) => [d.endpoint_id, d.status, d.attempt_count, d.attempts.map((a) => [a.number, a.status_code, a.error])]),
    [[x.endpoint.id, 'delivered', 1, [[1, 200, null]]]],
    'delivered to this endpoint only, at the first attempt',
  );
  return body.data.object;
}

interface Row {
  type: EventType;
  mode: Mode;
  how: string;
  approval?: 'manual' | 'automatic';
  /** Makes the event happen; more texts the body must not contain (a password shown in an answer). */
  cause(b: Broker): Promise<string[] | void>;
  /** What the event's object says, beyond the common checks. */
  object?(object: Data, b: Broker): Promise<void> | void;
  /** Events of the type the broker had before (its endpoints' creation). */
  already?: number;
}

/** An endpoint's events, in each mode: told to the mode's other endpoints (the broker's own), not simulated in the sandbox. */
const endpointRows = (mode: Mode): Row[] => {
  const made = async (b: Broker) => endpoint(b.keys[mode], `b-${b.brokerId}/${mode}/made`, ['service.created']);
  const asShown = async (o: Data, b: Broker) => assert.deepEqual(o, await ok(get(b.keys[mode], `/api/v1/webhook-endpoints/${String(o.id)}`)), 'the endpoint as GET shows it');
  return [
    {
      type: 'webhook_endpoint.created',
      mode,
      how: 'createWebhookEndpoint',
      already: 1,
      async cause(b) {
        return [(await made(b)).secret];
      },
      object: asShown,
    },
    {
      type: 'webhook_endpoint.updated',
      mode,
      how: 'a secret rotated',
      async cause(b) {
        const e = await made(b);
        const rotated = await ok(post(b.keys[mode], `/api/v1/webhook-endpoints/${e.id}/rotate-secret`));
        return [e.secret, String(rotated.secret)];
      },
      async object(o, b) {
        assert.notEqual(o.previous_secret_expires_at, null);
        await asShown(o, b);
      },
    },
    {
      type: 'webhook_endpoint.deleted',
      mode,
      how: 'deleteWebhookEndpoint',
      async cause(b) {
        const e = await made(b);
        await ok(post(b.keys[mode], `/api/v1/webhook-endpoints/${e.id}/delete`));
        return [e.secret];
      },
      async object(o, b) {
        assert.deepEqual([o.object, o.url], ['webhook_endpoint', receiver.url(`b-${b.brokerId}/${mode}/made`)]);
        assert.equal((await get(b.keys[mode], `/api/v1/webhook-endpoints/${String(o.id)}`)).status, 404);
      },
    },
  ];
};

async function ok(res: request.Response | Promise<request.Response>, status = 200): Promise<Data> {
  const r = await res;
  assert.equal(r.status, status, JSON.stringify(r.body));
  return r.body.data as Data;
}

/** A live request asked for through the API with the broker's live key; its id. */
async function asked(b: Broker, path: string, body: object): Promise<string> {
  return String((await ok(post(b.keys.live, path, body), 202)).request_id);
}

const decide = (b: Broker, requestId: string, body: object = { action: 'approve' }) => ok(post(b.keys.live, `/api/v1/requests/${requestId}/manage`, body));

/** A live run whose builds cannot reach the database: its builds fail and the run ends failed. */
async function failingReport(b: Broker): Promise<void> {
  const jobs = createJobs({
    redisEndpoint: t.redisEndpoint,
    prisma: t.prisma,
    // Port 1 on this host: nothing listens, every build's connection is refused.
    database: { kind: 'postgres', databaseUrl: 'postgresql://postgres@127.0.0.1:1/postgres' },
    config: t.deps.config,
    logger: t.deps.logger,
    mode: 'both',
    prefix: 'failingbuilds',
    closeTimeoutMs: 2000,
  });
  try {
    await jobs.startWorkers();
    const app = createApp({ ...t.deps, jobs });
    const res = await post(b.keys.live, '/api/v1/reports/invoices', { recipients: ['never@broker.example'], ...RANGE }, app);
    assert.equal(res.status, 500, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'server_error');
  } finally {
    await jobs.close();
  }
}

const rows: Row[] = [
  // ---- live ----
  {
    type: 'service.created',
    mode: 'live',
    how: 'service-create with automatic approval',
    approval: 'automatic',
    async cause(b) {
      const data = await ok(post(b.keys.live, '/api/v1/service-create', NEW_SERVICE));
      // The new service's password, as a GET with credentials shows it: it must reach no receiver.
      const shown = await ok(get(b.keys.live, `/api/v1/services/${String(data.service_number)}`));
      const { password } = shown.credentials as { password: string };
      assert.ok(password.length > 0);
      return [password];
    },
    object: (o) => assert.deepEqual([o.hostname, o.plan, o.status], [NEW_SERVICE.hostname, NEW_SERVICE.plan, 'active']),
  },
  {
    type: 'service.created',
    mode: 'live',
    how: 'a create request approved',
    async cause(b) {
      await decide(b, await asked(b, '/api/v1/service-create', NEW_SERVICE));
    },
    object: (o) => assert.deepEqual([o.hostname, o.plan], [NEW_SERVICE.hostname, NEW_SERVICE.plan]),
  },
  {
    type: 'service.updated',
    mode: 'live',
    how: 'a new password',
    async cause(b) {
      const s = await service(t, { brokerId: b.brokerId });
      const data = await ok(post(b.keys.live, `/api/v1/services/${s.serviceNumber}/password`));
      return [String(data.password)];
    },
  },
  {
    type: 'service.updated',
    mode: 'live',
    how: 'an upgrade approved',
    async cause(b) {
      const s = await service(t, { brokerId: b.brokerId, plan: 'Basic VPS' });
      await decide(b, await asked(b, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Professional VPS' }));
    },
    object: (o) => assert.equal(o.plan, 'Professional VPS'),
  },
  {
    type: 'service.cancelled',
    mode: 'live',
    how: 'an immediate cancellation approved',
    async cause(b) {
      const s = await service(t, { brokerId: b.brokerId });
      await decide(b, await asked(b, `/api/v1/services/${s.serviceNumber}/cancel`, { reason: 'moving on', when: 'immediate' }));
    },
    object: (o) => assert.equal(o.status, 'cancelled'),
  },
  {
    type: 'service.cancelled',
    mode: 'live',
    how: 'an end-of-period cancellation falling due, applied by the worker\'s housekeeping (unread)',
    async cause(b) {
      const s = await service(t, { brokerId: b.brokerId });
      await decide(b, await asked(b, `/api/v1/services/${s.serviceNumber}/cancel`, { reason: 'moving on', when: 'end_of_billing_period' }));
      assert.equal((await t.prisma.service.findUniqueOrThrow({ where: { id: s.id } })).status, 'active', 'not cancelled before its moment');
      // The end of the billing period passes; the worker's sweep (not a read) applies it.
      await t.prisma.service.update({ where: { id: s.id }, data: { cancelAt: new Date(Date.now() - 1000) } });
      await applyAllDueCancellations(t.prisma);
    },
    object: (o) => assert.equal(o.status, 'cancelled'),
  },
  {
    type: 'request.created',
    mode: 'live',
    how: 'service-create with manual approval',
    async cause(b) {
      await asked(b, '/api/v1/service-create', NEW_SERVICE);
    },
    object: (o) => assert.deepEqual([o.request_type, o.request_status], ['create', 'pending']),
  },
  {
    type: 'request.approved',
    mode: 'live',
    how: 'an upgrade approved',
    async cause(b) {
      const s = await service(t, { brokerId: b.brokerId, plan: 'Basic VPS' });
      await decide(b, await asked(b, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Professional VPS' }));
    },
    object: (o) => assert.deepEqual([o.request_type, o.request_status], ['upgrade', 'approved']),
  },
  {
    type: 'request.denied',
    mode: 'live',
    how: 'an upgrade denied',
    async cause(b) {
      const s = await service(t, { brokerId: b.brokerId, plan: 'Basic VPS' });
      await decide(b, await asked(b, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Professional VPS' }), { action: 'deny', denial_reason: 'not now' });
    },
    object: (o) => assert.deepEqual([o.request_status, o.denial_reason], ['denied', 'not now']),
  },
  {
    type: 'report.completed',
    mode: 'live',
    how: 'an invoices report e-mailed through SMTP',
    async cause(b) {
      await addInvoices(t, b.brokerId, [{ status: 'paid', date: '2025-05-02' }]);
      const data = await ok(post(b.keys.live, '/api/v1/reports/invoices', { recipients: [`r-${b.brokerId}@broker.example`], ...RANGE }));
      assert.deepEqual([data.recipients_sent, data.recipients_failed], [1, 0]);
      assert.equal(smtp.to(`r-${b.brokerId}@broker.example`).length, 1);
    },
    async object(o, b) {
      assert.deepEqual([o.status, o.recipients_sent, o.recipients_pending], ['completed', 1, 0]);
      assert.deepEqual(o, await ok(get(b.keys.live, `/api/v1/reports/${String(o.report_id)}`)), 'the run as GET /reports/{report_id} shows it');
    },
  },
  {
    type: 'report.failed',
    mode: 'live',
    how: 'an invoices report whose workbook cannot be built',
    async cause(b) {
      await addInvoices(t, b.brokerId, [{ status: 'paid', date: '2025-05-02' }]);
      await failingReport(b);
    },
    async object(o, b) {
      assert.deepEqual([o.status, o.recipients_sent, o.recipients_failed], ['failed', 0, 1]);
      assert.match(String(o.error), /could not be generated/);
      assert.deepEqual(o, await ok(get(b.keys.live, `/api/v1/reports/${String(o.report_id)}`)), 'the run as GET /reports/{report_id} shows it');
    },
  },
  {
    type: 'ping',
    mode: 'live',
    how: 'POST /webhook-endpoints/{endpoint_id}/ping',
    async cause(b) {
      await ok(post(b.keys.live, `/api/v1/webhook-endpoints/${b.endpoints.live.id}/ping`));
    },
    object: (o, b) => assert.deepEqual(o, { object: 'ping', endpoint_id: b.endpoints.live.id }),
  },
  // ---- sandbox: simulated changes, delivered to test-mode endpoints only ----
  {
    type: 'service.created',
    mode: 'test',
    how: 'service-create with automatic approval',
    approval: 'automatic',
    async cause(b) {
      const data = await ok(post(b.keys.test, '/api/v1/service-create', NEW_SERVICE));
      const password = (data.credentials as Data | undefined)?.password;
      return typeof password === 'string' ? [password] : [];
    },
    object: (o) => assert.equal(o.hostname, NEW_SERVICE.hostname),
  },
  {
    type: 'service.created',
    mode: 'test',
    how: 'a request approved',
    async cause(b) {
      await ok(post(b.keys.test, `/api/v1/requests/${SANDBOX_REQUEST}/manage`, { action: 'approve' }));
    },
  },
  {
    type: 'service.updated',
    mode: 'test',
    how: 'a new password',
    async cause(b) {
      const data = await ok(post(b.keys.test, '/api/v1/services/123456789/password'));
      return [String(data.password)];
    },
    object: (o) => assert.equal(o.service_number, 123456789),
  },
  {
    type: 'request.created',
    mode: 'test',
    how: 'an upgrade asked for',
    async cause(b) {
      await ok(post(b.keys.test, '/api/v1/services/123456789/upgrade', { plan: 'Enterprise VPS' }), 202);
    },
    object: (o) => assert.deepEqual([o.request_type, o.service_number], ['upgrade', 123456789]),
  },
  {
    type: 'request.created',
    mode: 'test',
    how: 'a cancellation asked for',
    async cause(b) {
      await ok(post(b.keys.test, '/api/v1/services/123456789/cancel', { reason: 'moving on', when: 'immediate' }), 202);
    },
    object: (o) => assert.equal(o.request_type, 'cancel'),
  },
  {
    type: 'request.approved',
    mode: 'test',
    how: 'a request approved',
    async cause(b) {
      await ok(post(b.keys.test, `/api/v1/requests/${SANDBOX_REQUEST}/manage`, { action: 'approve' }));
    },
    object: (o) => assert.deepEqual([o.request_id, o.request_status], [SANDBOX_REQUEST, 'approved']),
  },
  {
    type: 'request.denied',
    mode: 'test',
    how: 'a request denied',
    async cause(b) {
      await ok(post(b.keys.test, `/api/v1/requests/${SANDBOX_REQUEST}/manage`, { action: 'deny', denial_reason: 'not now' }));
    },
    object: (o) => assert.deepEqual([o.request_id, o.request_status], [SANDBOX_REQUEST, 'denied']),
  },
  {
    type: 'report.completed',
    mode: 'test',
    how: 'an invoices report',
    async cause(b) {
      await ok(post(b.keys.test, '/api/v1/reports/invoices', { recipients: ['a@broker.example'], ...RANGE }));
    },
    object: (o) => assert.deepEqual([o.status, o.recipients_sent], ['completed', 1]),
  },
  {
    type: 'ping',
    mode: 'test',
    how: 'POST /webhook-endpoints/{endpoint_id}/ping',
    async cause(b) {
      await ok(post(b.keys.test, `/api/v1/webhook-endpoints/${b.endpoints.test.id}/ping`));
    },
    object: (o, b) => assert.deepEqual(o, { object: 'ping', endpoint_id: b.endpoints.test.id }),
  },
  ...endpointRows('live'),
  ...endpointRows('test'),
];

const other = (mode: Mode): Mode => (mode === 'live' ? 'test' : 'live');

describe('each event type reaches a receiver, signed, from its operation', () => {
  for (const row of rows) {
    test(`${row.type} (${row.mode === 'live' ? 'live' : 'sandbox'}) ← ${row.how}`, async () => {
      const b = await brokerWithEndpoints(row.approval ?? 'manual');
      const shown = (await row.cause(b)) ?? [];
      const own = b.endpoints[row.mode];
      const copy = await arrived(own, row.type);
      const object = await assertDelivery(copy, {
        key: b.keys[row.mode],
        endpoint: own,
        type: row.type,
        mode: row.mode,
        // A ping is no simulated change: it is sent to the test endpoint for real.
        simulated: row.mode === 'test' && !row.type.startsWith('webhook_endpoint.') && row.type !== 'ping',
        secrets: [...shown, INITIAL_PASSWORD, b.keys.live, b.keys.test, b.endpoints.live.secret, b.endpoints.test.secret],
      });
      await row.object?.(object, b);
      const sameType = await ok(get(b.keys[row.mode], `/api/v1/events?type=${row.type}`));
      const ids = (sameType as unknown as Data[]).map((e) => e.id);
      assert.deepEqual([ids.length, ids[0]], [1 + (row.already ?? 0), copy.headers['webhook-id']], 'the operation wrote one event of the type');
      assert.equal(copiesOf(own.path, row.type).length, 1, 'delivered once');
      // The other mode has no event of this broker but its endpoint's creation (owed to no one), so its endpoint is owed nothing.
      assert.deepEqual((await ok(get(b.keys[other(row.mode)], '/api/v1/events')) as unknown as Data[]).map((e) => e.type), ['webhook_endpoint.created']);
      assert.deepEqual(receiver.to(b.endpoints[other(row.mode)].path), [], `the ${other(row.mode)} endpoint received nothing`);
    });
  }
});

describe('redelivery and subscriptions', () => {
  for (const mode of ['live', 'test'] as const) {
    test(`redelivery (${mode === 'live' ? 'live' : 'sandbox'}): the receiver gets the same event id a second time, signed`, async () => {
      const b = await brokerWithEndpoints('manual');
      const own = b.endpoints[mode];
      const s = await service(t, { brokerId: b.brokerId });
      await ok(post(b.keys[mode], `/api/v1/services/${s.serviceNumber}/password`));
      const first = await arrived(own, 'service.updated');
      const eventId = String(first.headers['webhook-id']);
      await settled(b.keys[mode], eventId);
      const res = await ok(post(b.keys[mode], `/api/v1/events/${eventId}/redeliver`, {}));
      assert.equal(res.id, eventId);
      const second = await eventually(() => receiver.to(own.path)[1], 20_000, 'the redelivery');
      assert.equal(second.headers['webhook-id'], eventId);
      assert.deepEqual(verified(own.secret, second), verified(own.secret, first), 'the same event');
      const { deliveries } = await settled(b.keys[mode], eventId);
      assert.deepEqual(
        deliveries.map((d) => [d.endpoint_id, d.status, d.attempt_count]),
        [[own.id, 'delivered', 1], [own.id, 'delivered', 1]],
      );
      assert.equal(receiver.to(own.path).length, 2);
      assert.deepEqual(receiver.to(b.endpoints[other(mode)].path), []);
    });
  }

  test('an endpoint subscribed to some types receives only those; one subscribed to all receives every one', async () => {
    const b = await brokerWithEndpoints('automatic');
    const some = await endpoint(b.keys.live, `b${b.brokerId}/some`, ['service.updated', 'request.denied']);
    const created = await ok(post(b.keys.live, '/api/v1/service-create', NEW_SERVICE));
    await ok(post(b.keys.live, `/api/v1/services/${String(created.service_number)}/password`));
    const all = await eventually(() => (receiver.to(b.endpoints.live.path).length >= 4 ? receiver.to(b.endpoints.live.path) : undefined), 20_000, 'four deliveries');
    const types = (copies: Received[]) => copies.map((c) => (JSON.parse(c.body) as Data).type).sort();
    assert.deepEqual(types(all), ['request.created', 'service.created', 'service.updated', 'webhook_endpoint.created'], 'the new endpoint\'s creation too');
    const [updated] = await eventually(() => (receiver.to(some.path).length > 0 ? receiver.to(some.path) : undefined), 20_000, 'the subscribed delivery');
    verified(some.secret, updated!);
    for (const copy of all) {
      const { deliveries } = await settled(b.keys.live, String(copy.headers['webhook-id']));
      const to = deliveries.map((d) => d.endpoint_id).sort();
      const takes = (JSON.parse(copy.body) as Data).type === 'service.updated';
      assert.deepEqual(to, (takes ? [b.endpoints.live.id, some.id] : [b.endpoints.live.id]).sort(), 'owed only to the endpoints taking its type');
    }
    assert.deepEqual(types(receiver.to(some.path)), ['service.updated']);
  });
});
