/**
 * A sandbox approval answers and records what the live approval of the same request type does:
 * one row per request type, each made and approved through the API once with a live key and once
 * with a sandbox key of the same broker, and the two runs compared (status, request_type, the
 * answer's fields, the event types, their objects' fields and `previous_attributes` keys). The
 * sandbox's request id tells its type (last digit), and its approval names the service the
 * change was asked for.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { brokerWithKeys, type BrokerWithKeys } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';
import { sandboxRequestKind, sandboxServiceNumberOf } from '../../src/shared/ids.ts';

let t: TestApp;
let keys: BrokerWithKeys;

before(async () => {
  t = await createTestApp();
  keys = await brokerWithKeys(t.prisma);
});
after(async () => {
  await t?.close();
});

const post = (key: string, path: string, body: object) => request(t.app).post(path).set('Authorization', `Bearer ${key}`).send(body);

type Data = Record<string, unknown>;

interface Row {
  what: string;
  /** The request's path and body, for a service number (unused by a create). */
  ask: (serviceNumber: number) => { path: string; body: object };
  type: string;
  cancelWhen: string | null;
  /** Last digit of a sandbox id of this kind. */
  digits: number[];
  events: string[];
  /** `previous_attributes` keys of the service event. */
  serviceChanged: string[] | null;
}

const rows: Row[] = [
  {
    what: 'create',
    ask: () => ({ path: '/api/v1/service-create', body: { plan: 'Professional VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example' } }),
    type: 'create',
    cancelWhen: null,
    digits: [0, 1, 2, 3, 4, 5],
    events: ['request.approved', 'service.created'],
    serviceChanged: null,
  },
  {
    what: 'upgrade',
    ask: (n) => ({ path: `/api/v1/services/${n}/upgrade`, body: { plan: 'Enterprise VPS' } }),
    type: 'upgrade',
    cancelWhen: null,
    digits: [6],
    events: ['request.approved', 'service.updated'],
    serviceChanged: ['plan', 'updated_at'],
  },
  {
    what: 'downgrade',
    ask: (n) => ({ path: `/api/v1/services/${n}/downgrade`, body: { plan: 'Basic VPS' } }),
    type: 'downgrade',
    cancelWhen: null,
    digits: [7],
    events: ['request.approved', 'service.updated'],
    serviceChanged: ['plan', 'updated_at'],
  },
  {
    what: 'cancel immediate',
    ask: (n) => ({ path: `/api/v1/services/${n}/cancel`, body: { reason: 'moving on', when: 'immediate' } }),
    type: 'cancel',
    cancelWhen: 'immediate',
    digits: [8],
    events: ['request.approved', 'service.cancelled'],
    serviceChanged: ['cancelled_at', 'status', 'updated_at'],
  },
  {
    what: 'cancel at the end of the billing period',
    ask: (n) => ({ path: `/api/v1/services/${n}/cancel`, body: { reason: 'moving on', when: 'end_of_billing_period' } }),
    type: 'cancel',
    cancelWhen: 'end_of_billing_period',
    digits: [9],
    events: ['request.approved', 'service.updated'],
    serviceChanged: ['cancel_at', 'updated_at'],
  },
];

interface Run {
  asked: Data;
  status: number;
  answer: Data;
  events: Array<{ type: string; object: Data; previous: Data | undefined }>;
}

/** Asks for the change and approves the request it answered, with `key`; the events the approval wrote. */
async function askAndApprove(key: string, row: Row, serviceNumber: number): Promise<Run> {
  const { path, body } = row.ask(serviceNumber);
  const asked = await post(key, path, body);
  assert.equal(asked.status, 202, JSON.stringify(asked.body));
  const last = await t.prisma.event.findFirst({ where: { brokerId: keys.brokerId }, orderBy: { seq: 'desc' }, select: { seq: true } });
  const res = await post(key, `/api/v1/requests/${asked.body.data.request_id}/manage`, { action: 'approve' });
  const rows = await t.prisma.event.findMany({ where: { brokerId: keys.brokerId, seq: { gt: last?.seq ?? -1n } }, orderBy: { seq: 'asc' } });
  const events = rows.map((e) => {
    const data = e.data as { object: Data; previous_attributes?: Data };
    return { type: e.type, object: data.object, previous: data.previous_attributes };
  });
  return { asked: asked.body.data, status: res.status, answer: res.body.data, events };
}

const SANDBOX_ONLY = ['mode', 'simulated'];
const fields = (o: Data | undefined) => Object.keys(o ?? {}).filter((k) => !SANDBOX_ONLY.includes(k)).sort();

describe('a sandbox approval answers and records what the live approval of its type does', () => {
  for (const row of rows) {
    test(row.what, async () => {
      const liveService = await service(t, { brokerId: keys.brokerId, plan: 'Standard VPS', createdAt: new Date(Date.now() - 86_400_000) });
      const live = await askAndApprove(keys.live.key, row, liveService.serviceNumber);
      // A number of its own per row: one the sandbox cancelled is refused later, as live (cancelled is final).
      const sandboxNumber = 123456789 + rows.indexOf(row);
      const sandbox = await askAndApprove(keys.sandbox.key, row, sandboxNumber);

      // The answer: same status, type and fields; the sandbox's with its markers.
      assert.equal(sandbox.status, live.status);
      assert.equal(sandbox.status, 200, JSON.stringify(sandbox.answer));
      for (const run of [live, sandbox]) {
        assert.deepEqual([run.answer.request_type, run.answer.request_status, run.answer.cancel_when], [row.type, 'approved', row.cancelWhen]);
      }
      assert.deepEqual(fields(sandbox.answer), fields(live.answer));
      assert.deepEqual([sandbox.answer.mode, sandbox.answer.simulated], ['test', true]);

      // The id told the type; the approval names the request's service, as in live.
      const id = String(sandbox.asked.request_id);
      assert.match(id, /^REQ-\d{6}$/);
      assert.ok(row.digits.includes(Number(id.at(-1))), `${id} ends in one of ${row.digits.join(', ')}`);
      assert.equal(sandbox.answer.request_id, id);
      if (row.type === 'create') {
        assert.match(String(sandbox.answer.service_number), /^\d{9}$/);
      } else {
        assert.equal(live.answer.service_number, liveService.serviceNumber);
        assert.equal(sandbox.answer.service_number, sandboxNumber);
      }

      // The events: the same types, object fields and previous_attributes keys.
      assert.deepEqual(
        sandbox.events.map((e) => e.type),
        row.events,
      );
      // Live does not yet record the scheduling of a cancellation (issue 39 item 1, branch `events`): its request.approved only.
      const liveEvents = row.cancelWhen === 'end_of_billing_period' && live.events.length === 1 ? [...live.events, undefined] : live.events;
      assert.deepEqual(
        liveEvents.map((e) => e?.type ?? 'service.updated'),
        row.events,
      );
      for (const [i, e] of sandbox.events.entries()) {
        const twin = liveEvents[i];
        assert.equal(e.object.simulated, true);
        if (twin) {
          assert.deepEqual(fields(e.object), fields(twin.object), `${e.type}: object fields`);
          assert.deepEqual(fields(e.previous), fields(twin.previous), `${e.type}: previous_attributes keys`);
        }
      }
      const [approved, changed] = sandbox.events;
      assert.deepEqual(approved?.object, { ...sandbox.answer, simulated: true }, 'request.approved carries the answer');
      assert.equal(changed?.object.service_number, sandbox.answer.service_number);
      if (row.serviceChanged) assert.deepEqual(fields(changed?.previous), row.serviceChanged);
      else assert.equal(changed?.previous, undefined);
      if (row.cancelWhen === 'end_of_billing_period') {
        assert.equal(changed?.previous?.cancel_at, null);
        assert.ok(Date.parse(String(changed?.object.cancel_at)) > Date.now(), 'cancel_at is scheduled ahead');
        assert.equal(changed?.object.status, 'active');
      }
      if (row.type === 'upgrade' || row.type === 'downgrade') {
        assert.deepEqual([changed?.previous?.plan, changed?.object.plan], [sandbox.asked.current_plan, sandbox.asked.requested_plan]);
      }
    });
  }
});

describe('sandbox request ids', () => {
  test('every id decodes to one type by its last digit, whoever made it', () => {
    const table: Array<[bigint, string]> = [
      [318_274n, 'create'],
      [42n, 'create'],
      [100_000n, 'create'],
      [123_456n, 'upgrade'],
      [123_457n, 'downgrade'],
      [123_458n, 'cancel_immediate'],
      [12_345_679n, 'cancel_end_of_billing_period'],
    ];
    for (const [id, kind] of table) assert.equal(sandboxRequestKind(id), kind, String(id));
  });

  test('an id the sandbox did not answer is approved as its digit tells, with a service number derived from it', async () => {
    for (const [id, type, event] of [
      ['REQ-000006', 'upgrade', 'service.updated'],
      ['req-777778', 'cancel', 'service.cancelled'],
      ['REQ-318274', 'create', 'service.created'],
    ] as const) {
      const last = await t.prisma.event.findFirst({ where: { brokerId: keys.brokerId }, orderBy: { seq: 'desc' }, select: { seq: true } });
      const first = await post(keys.sandbox.key, `/api/v1/requests/${id}/manage`, { action: 'approve' });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.data.request_type, type);
      const again = await post(keys.sandbox.key, `/api/v1/requests/${id}/manage`, { action: 'approve' });
      if (type === 'cancel') {
        // Cancelled is final: the second approval is refused as live refuses it, with no event.
        assert.deepEqual([again.status, again.body.error?.details], [409, { current_status: 'cancelled' }], again.text);
      } else {
        assert.equal(again.body.data.service_number, first.body.data.service_number, 'the same id names the same service');
      }
      assert.equal(first.body.data.service_number, sandboxServiceNumberOf(BigInt(id.slice(4))));
      const events = await t.prisma.event.findMany({ where: { brokerId: keys.brokerId, seq: { gt: last?.seq ?? -1n } }, orderBy: { seq: 'asc' } });
      assert.deepEqual(events.slice(0, 2).map((e) => e.type), ['request.approved', event]);
      assert.equal((events[1]?.data as { object: Data }).object.service_number, first.body.data.service_number);
    }
  });

  test('a denial answers the request its id tells, and records request.denied only', async () => {
    const asked = await post(keys.sandbox.key, '/api/v1/services/555444333/upgrade', { plan: 'Enterprise VPS' });
    const res = await post(keys.sandbox.key, `/api/v1/requests/${asked.body.data.request_id}/manage`, { action: 'deny', denial_reason: 'Not now' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      [res.body.data.request_type, res.body.data.request_status, res.body.data.denial_reason, res.body.data.service_number],
      ['upgrade', 'denied', 'Not now', 555444333],
    );
  });

  test('provider_review: an approval answers 202 with the request its id tells, and records nothing', async () => {
    const last = await t.prisma.event.findFirst({ where: { brokerId: keys.brokerId }, orderBy: { seq: 'desc' }, select: { seq: true } });
    const res = await request(t.app)
      .post('/api/v1/requests/REQ-100009/manage')
      .set('Authorization', `Bearer ${keys.sandbox.key}`)
      .set('X-Test-Scenario', 'provider_review')
      .send({ action: 'approve' });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.deepEqual([res.body.data.request_status, res.body.data.request_type, res.body.data.cancel_when], ['provider_review', 'cancel', 'end_of_billing_period']);
    assert.equal(await t.prisma.event.count({ where: { brokerId: keys.brokerId, seq: { gt: last?.seq ?? -1n } } }), 0);
  });
});
