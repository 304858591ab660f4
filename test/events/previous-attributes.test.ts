/**
 * Every event of a change to a record that already existed carries `data.previous_attributes`: the
 * fields of `data.object` the change altered, with their values before it, and nothing else; a
 * password change says `password_changed: true`, never a value. Events of a creation carry none.
 * One row per operation that records a change (live and sandbox): the events it writes and each
 * one's previous_attributes exactly, as stored, as GET /api/v1/events/{event_id} shows it (the
 * answer is checked against openapi.yaml) and as a webhook delivery's body carries it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { parse } from 'yaml';
import { previousAttributes } from '../../src/events/previous-attributes.ts';
import { EVENT_TYPES } from '../../src/events/store.ts';
import { createRunRecords, claimRecipient, failRunRecords, recordOutcomeAndCounts, recordSendFailed, settleRunCounts } from '../../src/reports/runs/store.ts';
import { applyAllDueCancellations } from '../../src/services/store.ts';
import { formatRequestId } from '../../src/shared/ids.ts';
import { eventBody } from '../../src/webhooks/dispatcher.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { eventsWrittenBy } from '../helpers/events.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service, serviceRequest, type PlanName } from '../helpers/service-factories.ts';

/** The types that tell of a change to a record that already existed. */
const CHANGE_TYPES = ['service.updated', 'service.cancelled', 'request.approved', 'request.denied', 'report.completed', 'report.failed', 'webhook_endpoint.updated'];

let t: TestApp;

interface Broker {
  brokerId: string;
  keys: { live: string; test: string };
}

async function newBroker(approval: 'manual' | 'automatic' = 'manual'): Promise<Broker> {
  const { id } = await broker(t.prisma, { approval });
  const key = async (mode: 'live' | 'test') => (await apiKey(t.prisma, { brokerId: id, mode, scopes: ['admin:full'] })).key;
  return { brokerId: id, keys: { live: await key('live'), test: await key('test') } };
}

before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t?.close();
});

const post = (key: string, path: string, body: object = {}) => request(t.app).post(path).set('Authorization', `Bearer ${key}`).send(body);
const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

async function ok(res: request.Test, status = 200): Promise<Record<string, unknown>> {
  const r = await res;
  assert.equal(r.status, status, JSON.stringify(r.body));
  return r.body.data as Record<string, unknown>;
}

/** openapi.yaml, as far as these tests read it. */
const spec = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as {
  webhooks: Record<string, { post: { requestBody: { content: { 'application/json': { schema: { $ref: string }; examples: Record<string, { value: { data: Attrs } }> } } } } }>;
  components: { schemas: Record<string, { properties: Record<string, { properties: Record<string, { $ref?: string }> }> }> };
};
const payload = (type: string) => {
  const body = spec.webhooks[type]!.post.requestBody.content['application/json'];
  return { schema: spec.components.schemas[body.schema.$ref.split('/').at(-1)!]!, examples: Object.values(body.examples) };
};

/** The fields openapi.yaml lets an event type's previous_attributes hold (its webhook payload's schema). */
function documentedFields(type: string): string[] {
  const ref = payload(type).schema.properties.data!.properties.previous_attributes!.$ref!;
  return Object.keys(spec.components.schemas[ref.split('/').at(-1)!]!.properties);
}

/** When the records a row changes were last changed: their `updated_at` before the change. */
const EARLIER = new Date('2026-01-05T10:00:00.000Z');
const E = EARLIER.toISOString();
/** The instant a second before `at` (an ISO timestamp). */
const aSecondBefore = (at: unknown): string => new Date(Date.parse(String(at)) - 1000).toISOString();

type Attrs = Record<string, unknown>;
/** An event the change writes: its type and its previous_attributes (undefined: it has none). */
type Expected = [type: string, previous: Attrs | undefined];

/** What the written events must be (given their objects, for values known only after the change), and texts none may contain (a password). */
interface Outcome {
  events: (objects: Attrs[]) => Expected[];
  secrets?: string[];
}

interface Row {
  what: string;
  mode: 'live' | 'test';
  approval?: 'manual' | 'automatic';
  change(b: Broker): Promise<Outcome>;
}

const liveService = (b: Broker, plan: PlanName = 'Standard VPS', more: { cancelAt?: Date } = {}) =>
  service(t, { brokerId: b.brokerId, plan, createdAt: EARLIER, updatedAt: EARLIER, ...more });

async function decided(b: Broker, type: 'create' | 'upgrade' | 'downgrade' | 'cancel', body: object, options: { plan?: PlanName; requestedPlan?: PlanName; cancelWhen?: 'immediate' | 'end_of_billing_period' } = {}) {
  const s = type === 'create' ? undefined : await liveService(b, options.plan);
  const r = await serviceRequest(t.prisma, {
    brokerId: b.brokerId,
    type,
    createdAt: EARLIER,
    ...(s && { service: s }),
    ...(options.requestedPlan && { requestedPlan: options.requestedPlan }),
    ...(options.cancelWhen && { cancelWhen: options.cancelWhen }),
  });
  await ok(post(b.keys.live, `/api/v1/requests/${formatRequestId(r.id)}/manage`, body));
}

const APPROVED_FROM_PENDING = { request_status: 'pending', updated_at: E, decided_at: null };
const APPROVE = { action: 'approve' };

/** A run of the broker in `status` with these recipients waiting; its id and its recipients' ids. */
async function run(b: Broker, status: 'queued' | 'sending', emails: string[]) {
  const { id } = await t.prisma.$transaction((tx) => createRunRecords(tx, { brokerId: b.brokerId, reportType: 'invoices', status, createdAt: EARLIER }, emails));
  const recipients = await t.prisma.reportRecipient.findMany({ where: { reportRunId: id }, orderBy: { id: 'asc' }, select: { id: true } });
  return { runId: id, recipientIds: recipients.map((r) => r.id) };
}

const sent = { sent: true, messageId: '<m@example.com>', linkExpiresAt: null } as const;

const rows: Row[] = [
  // ---- live ----
  {
    what: 'a generated password',
    mode: 'live',
    async change(b) {
      const s = await liveService(b);
      const data = await ok(post(b.keys.live, `/api/v1/services/${s.serviceNumber}/password`));
      return { events: () => [['service.updated', { updated_at: E, password_changed: true }]], secrets: [String(data.password), 'Initial-Passw0rd'] };
    },
  },
  {
    what: 'a chosen password',
    mode: 'live',
    async change(b) {
      const s = await liveService(b);
      await ok(post(b.keys.live, `/api/v1/services/${s.serviceNumber}/password`, { password: 'correct-Horse-battery-9' }));
      return { events: () => [['service.updated', { updated_at: E, password_changed: true }]], secrets: ['correct-Horse-battery-9', 'Initial-Passw0rd'] };
    },
  },
  {
    what: 'an upgrade approved',
    mode: 'live',
    async change(b) {
      await decided(b, 'upgrade', APPROVE, { plan: 'Basic VPS', requestedPlan: 'Professional VPS' });
      return { events: () => [['request.approved', APPROVED_FROM_PENDING], ['service.updated', { plan: 'Basic VPS', updated_at: E }]] };
    },
  },
  {
    what: 'a downgrade approved',
    mode: 'live',
    async change(b) {
      await decided(b, 'downgrade', APPROVE, { plan: 'Professional VPS', requestedPlan: 'Basic VPS' });
      return { events: () => [['request.approved', APPROVED_FROM_PENDING], ['service.updated', { plan: 'Professional VPS', updated_at: E }]] };
    },
  },
  {
    what: 'an immediate cancellation approved',
    mode: 'live',
    async change(b) {
      await decided(b, 'cancel', APPROVE, { cancelWhen: 'immediate' });
      return { events: () => [['request.approved', APPROVED_FROM_PENDING], ['service.cancelled', { status: 'active', updated_at: E, cancelled_at: null }]] };
    },
  },
  {
    what: 'a cancellation at the end of the billing period approved (scheduled: cancel_at set, service.updated)',
    mode: 'live',
    async change(b) {
      await decided(b, 'cancel', APPROVE, { cancelWhen: 'end_of_billing_period' });
      return { events: () => [['request.approved', APPROVED_FROM_PENDING], ['service.updated', { cancel_at: null, updated_at: E }]] };
    },
  },
  {
    what: 'a create request approved (the new service: a creation)',
    mode: 'live',
    async change(b) {
      await decided(b, 'create', APPROVE, { requestedPlan: 'Standard VPS' });
      return { events: () => [['request.approved', { request_status: 'pending', service_number: null, updated_at: E, decided_at: null }], ['service.created', undefined]] };
    },
  },
  {
    what: 'a request denied',
    mode: 'live',
    async change(b) {
      await decided(b, 'upgrade', { action: 'deny', denial_reason: 'not now' }, { plan: 'Basic VPS', requestedPlan: 'Professional VPS' });
      return { events: () => [['request.denied', { request_status: 'pending', denial_reason: null, updated_at: E, decided_at: null }]] };
    },
  },
  {
    what: 'a scheduled cancellation falling due, on a read',
    mode: 'live',
    async change(b) {
      const s = await liveService(b, 'Standard VPS', { cancelAt: new Date(Date.now() - 1000) });
      await ok(get(b.keys.live, `/api/v1/services/${s.serviceNumber}`));
      return { events: () => [['service.cancelled', { status: 'active', updated_at: E, cancelled_at: null }]] };
    },
  },
  {
    what: 'a scheduled cancellation falling due, in the worker\'s sweep',
    mode: 'live',
    async change(b) {
      await liveService(b, 'Standard VPS', { cancelAt: new Date(Date.now() - 1000) });
      assert.ok((await applyAllDueCancellations(t.prisma)) >= 1);
      return { events: () => [['service.cancelled', { status: 'active', updated_at: E, cancelled_at: null }]] };
    },
  },
  {
    what: 'service-create with automatic approval (creations)',
    mode: 'live',
    approval: 'automatic',
    async change(b) {
      await ok(post(b.keys.live, '/api/v1/service-create', { plan: 'Basic VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example' }));
      return { events: () => [['service.created', undefined], ['request.created', undefined]] };
    },
  },
  {
    what: 'an upgrade asked for (a creation)',
    mode: 'live',
    async change(b) {
      const s = await liveService(b, 'Basic VPS');
      await ok(post(b.keys.live, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Professional VPS' }), 202);
      return { events: () => [['request.created', undefined]] };
    },
  },
  {
    what: 'a report whose last recipient\'s e-mail is accepted (that outcome and the run\'s end, one commit)',
    mode: 'live',
    async change(b) {
      const { runId, recipientIds: [first, last] } = await run(b, 'sending', ['a@broker.example', 'b@broker.example']);
      assert.equal((await recordOutcomeAndCounts(t.prisma, runId, first!, sent)).completed, false);
      assert.ok(await claimRecipient(t.prisma, last!));
      assert.equal((await recordOutcomeAndCounts(t.prisma, runId, last!, sent)).completed, true);
      return {
        events: ([o]) => {
        const recipients = o!.recipients as Attrs[];
        const wasSending = { ...recipients[1], status: 'sending', sent_at: null };
        return [['report.completed', { status: 'sending', recipients_sent: 1, recipients_pending: 1, finished_at: null, recipients: [recipients[0], wasSending] }]];
        },
      };
    },
  },
  {
    what: 'a report completed by the reconciler (every outcome recorded before)',
    mode: 'live',
    async change(b) {
      const { runId, recipientIds: [only] } = await run(b, 'sending', ['a@broker.example']);
      await recordSendFailed(t.prisma, only!, 'mailbox unavailable', true);
      assert.equal((await settleRunCounts(t.prisma, runId)).completed, true);
      return { events: () => [['report.completed', { status: 'sending', finished_at: null }]] };
    },
  },
  {
    what: 'a report whose workbook cannot be built',
    mode: 'live',
    async change(b) {
      const { runId } = await run(b, 'queued', ['a@broker.example']);
      await failRunRecords(t.prisma, runId, 'the workbook could not be built', ['queued', 'building']);
      return {
        events: ([o]) => {
        const [recipient] = o!.recipients as Attrs[];
        const waiting = { ...recipient, status: 'pending', last_error: null };
        return [['report.failed', { status: 'queued', recipients_failed: 0, recipients_pending: 1, finished_at: null, error: null, recipients: [waiting] }]];
        },
      };
    },
  },
  // ---- sandbox: a generated service is made at the moment of the call, so its updated_at does not change ----
  {
    what: 'a new password',
    mode: 'test',
    async change(b) {
      const data = await ok(post(b.keys.test, '/api/v1/services/123456789/password'));
      return { events: () => [['service.updated', { password_changed: true }]], secrets: [String(data.password)] };
    },
  },
  {
    what: 'a request approved',
    mode: 'test',
    async change(b) {
      await ok(post(b.keys.test, '/api/v1/requests/REQ-318274/manage', APPROVE));
      // The sandbox's generated pending request is dated a second before its decision, as a live one is dated before it.
      return { events: ([r]) => [['request.approved', { request_status: 'pending', service_number: null, updated_at: aSecondBefore(r!.updated_at), decided_at: null }], ['service.created', undefined]] };
    },
  },
  {
    what: 'a request denied',
    mode: 'test',
    async change(b) {
      await ok(post(b.keys.test, '/api/v1/requests/REQ-318274/manage', { action: 'deny', denial_reason: 'not now' }));
      return { events: ([r]) => [['request.denied', { request_status: 'pending', denial_reason: null, updated_at: aSecondBefore(r!.updated_at), decided_at: null }]] };
    },
  },
  {
    what: 'an invoices report (completed at once: as a live run before its last e-mail is accepted)',
    mode: 'test',
    async change(b) {
      await ok(post(b.keys.test, '/api/v1/reports/invoices', { recipients: ['a@broker.example', 'b@broker.example'], start_date: '2025-05-01', end_date: '2025-05-31' }));
      return {
        events: ([o]) => {
        const recipients = o!.recipients as Attrs[];
        return [['report.completed', { status: 'sending', recipients_sent: 1, recipients_pending: 1, finished_at: null, recipients: [recipients[0], { ...recipients[1], status: 'sending', sent_at: null }] }]];
        },
      };
    },
  },
  ...(['live', 'test'] as const).map((mode): Row => ({
    what: 'an endpoint created, its URL and events changed, disabled, enabled, rotated, deleted (no secret in any event)',
    mode,
    async change(b) {
      const made = await ok(post(b.keys[mode], '/api/v1/webhook-endpoints', { url: 'https://hooks.broker.example/a' }));
      const id = String(made.id);
      await ok(post(b.keys[mode], `/api/v1/webhook-endpoints/${id}`, { url: 'https://hooks.broker.example/b', events: ['service.created'] }));
      await ok(post(b.keys[mode], `/api/v1/webhook-endpoints/${id}`, { status: 'disabled' }));
      await ok(post(b.keys[mode], `/api/v1/webhook-endpoints/${id}`, { status: 'enabled' }));
      const rotated = await ok(post(b.keys[mode], `/api/v1/webhook-endpoints/${id}/rotate-secret`));
      await ok(post(b.keys[mode], `/api/v1/webhook-endpoints/${id}/delete`));
      return {
        secrets: [String(made.secret), String(rotated.secret)],
        events: ([created, changed, disabled, enabled]) => [
          ['webhook_endpoint.created', undefined],
          ['webhook_endpoint.updated', { url: 'https://hooks.broker.example/a', events: [], updated_at: created!.updated_at }],
          ['webhook_endpoint.updated', { status: 'enabled', disabled_reason: null, updated_at: changed!.updated_at }],
          ['webhook_endpoint.updated', { status: 'disabled', disabled_reason: 'disabled by the broker', updated_at: disabled!.updated_at }],
          ['webhook_endpoint.updated', { previous_secret_expires_at: null, updated_at: enabled!.updated_at }],
          ['webhook_endpoint.deleted', undefined],
        ],
      };
    },
  })),
  {
    what: 'service-create with automatic approval (creations)',
    mode: 'test',
    approval: 'automatic',
    async change(b) {
      await ok(post(b.keys.test, '/api/v1/service-create', { plan: 'Basic VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example' }));
      return { events: () => [['service.created', undefined], ['request.created', undefined]] };
    },
  },
];

describe('previous_attributes of each event a change writes', () => {
  /** The change types the live rows wrote, with their previous_attributes checked. */
  const covered = new Set<string>();
  for (const row of rows) {
    test(`${row.mode}: ${row.what}`, async () => {
      const b = await newBroker(row.approval);
      const { result: outcome, events } = await eventsWrittenBy(t.prisma, b.brokerId, () => row.change(b));
      const stored = await t.prisma.event.findMany({ where: { id: { in: events.map((e) => e.id) } } });
      const byId = new Map(stored.map((e) => [e.id, e]));
      const expected = outcome.events(events.map((e) => e.object));
      assert.deepEqual(events.map((e) => e.type), expected.map(([type]) => type));
      assert.ok(events.every((e) => e.mode === row.mode));
      for (const [i, e] of events.entries()) {
        const [type, previous] = expected[i]!;
        const data = byId.get(e.id)!.data as { object: Attrs; previous_attributes?: Attrs };
        assert.deepEqual(data.previous_attributes, previous, `${type}: previous_attributes as stored`);
        assert.equal('previous_attributes' in data, previous !== undefined, `${type}: a creation has no previous_attributes key`);
        // Each named field is one of the object's, in its format, and its value differs from the object's now.
        for (const [field, was] of Object.entries(previous ?? {})) {
          assert.ok(documentedFields(type).includes(field), `${field} is documented in openapi.yaml for ${type}`);
          if (field === 'password_changed') continue;
          assert.ok(field in data.object, `${field} is a field of the object`);
          assert.notDeepEqual(data.object[field], was, `${field} changed`);
        }
        const shown = await ok(get(b.keys[row.mode], `/api/v1/events/${e.id}`));
        assert.deepEqual(shown.data, data, 'GET /api/v1/events/{event_id} shows the same data');
        const delivered = JSON.parse(eventBody(byId.get(e.id)!)) as { data: unknown };
        assert.deepEqual(delivered.data, data, 'a webhook delivery carries the same data');
        const text = JSON.stringify(data);
        assert.doesNotMatch(text, /"(password|credentials|username)"\s*:/, 'no credential field');
        for (const secret of outcome.secrets ?? []) assert.equal(text.includes(secret), false, 'no password in the event');
        if (row.mode === 'live' && previous !== undefined) covered.add(type);
      }
    });
  }

  test('every type of change has a live row (run after the rows)', () => {
    assert.deepEqual([...covered].sort(), [...CHANGE_TYPES].sort());
  });
});

describe('previousAttributes (src/events/previous-attributes.ts)', () => {
  const cases: Array<{ what: string; before: Attrs; after: Attrs; hidden?: { passwordChanged?: boolean }; expect: Attrs }> = [
    { what: 'only the changed fields, with their former values', before: { a: 1, b: 'x', c: null }, after: { a: 2, b: 'x', c: null }, expect: { a: 1 } },
    { what: 'null to a value and back', before: { a: null, b: '2025-01-01' }, after: { a: '2025-01-01', b: null }, expect: { a: null, b: '2025-01-01' } },
    { what: 'an array that changed, whole, as it was', before: { r: [{ s: 'pending' }, { s: 'sent' }] }, after: { r: [{ s: 'sent' }, { s: 'sent' }] }, expect: { r: [{ s: 'pending' }, { s: 'sent' }] } },
    { what: 'an equal array (compared by value): absent', before: { r: [{ s: 'sent' }] }, after: { r: [{ s: 'sent' }] }, expect: {} },
    { what: 'credentials never, even when they changed', before: { credentials: { password: 'old' }, password: 'old', username: 'a' }, after: { credentials: { password: 'new' }, password: 'new', username: 'b' }, expect: {} },
    { what: 'a password change as a flag', before: { u: 1 }, after: { u: 2 }, hidden: { passwordChanged: true }, expect: { u: 1, password_changed: true } },
    { what: 'a field the object did not have before: absent', before: {}, after: { a: 1 }, expect: {} },
  ];
  for (const c of cases) test(c.what, () => assert.deepEqual(previousAttributes(c.before, c.after, c.hidden), c.expect));
});

describe('openapi.yaml: previous_attributes in every event schema', () => {
  for (const type of EVENT_TYPES) {
    const change = CHANGE_TYPES.includes(type);
    test(`${type}: ${change ? 'its payload schema and example carry' : 'no'} previous_attributes`, () => {
      const { schema, examples } = payload(type);
      assert.equal('previous_attributes' in schema.properties.data!.properties, change);
      for (const e of examples) assert.equal('previous_attributes' in e.value.data, change);
    });
  }
  test('listEvents and getEvent show it (Event and EventDetail)', () => {
    for (const name of ['Event', 'EventDetail']) {
      assert.equal(spec.components.schemas[name]!.properties.data!.properties.previous_attributes!.$ref, '#/components/schemas/EventPreviousAttributes');
    }
  });
});
