/**
 * A mirror that cannot drift (issue 39): random sequences of the write operations, with a live key,
 * then a mirror built only from the ascending feed (each event's `data.object`, checked against its
 * `previous_attributes`) equals, field by field, what listServices and listRequests answer. A write
 * path that records no event leaves the mirror behind and fails it. Seed-reproducible:
 * MIRROR_SEED=<n> replays a run; the runs are few and short (a loaded 2-core machine).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import request from 'supertest';
import { applyAllDueCancellations } from '../../src/services/store.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';

let t: TestApp;

before(async () => {
  // No workers: the test's clock alone brings due cancellations forward.
  t = await createTestApp({}, { workers: false });
});
after(async () => {
  await t?.close();
});

type Json = Record<string, unknown>;

/** The writes that took place across the runs: every kind must, or the property proved little. */
const done = new Set<string>();

const PLANS = ['Basic VPS', 'Standard VPS', 'Professional VPS', 'Enterprise VPS'] as const;

/** One write; `pick` chooses among the services or requests that exist when it runs. */
type Op =
  | { op: 'create'; plan: number }
  | { op: 'upgrade' | 'downgrade'; pick: number; plan: number }
  | { op: 'cancel'; pick: number; when: 'immediate' | 'end_of_billing_period' }
  | { op: 'password'; pick: number }
  | { op: 'approve' | 'deny'; pick: number }
  | { op: 'clock'; days: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('create' as const), plan: fc.nat(3) }),
  fc.record({ op: fc.constantFrom('upgrade' as const, 'downgrade' as const), pick: fc.nat(), plan: fc.nat(3) }),
  fc.record({ op: fc.constant('cancel' as const), pick: fc.nat(), when: fc.constantFrom('immediate' as const, 'end_of_billing_period' as const) }),
  fc.record({ op: fc.constant('password' as const), pick: fc.nat() }),
  { arbitrary: fc.record({ op: fc.constantFrom('approve' as const, 'approve' as const, 'deny' as const), pick: fc.nat() }), weight: 3 },
  fc.record({ op: fc.constant('clock' as const), days: fc.integer({ min: 1, max: 400 }) }),
);

/** A success or a refusal (a plan of the wrong tier, a closed service): a refusal changes nothing; never a 5xx. */
function accepted(res: request.Response): void {
  assert.ok([200, 202, 400, 409, 422].includes(res.status), `${res.status} ${JSON.stringify(res.body)}`);
}

async function run(ops: Op[]): Promise<void> {
  const { id: brokerId } = await broker(t.prisma, { approval: 'manual' });
  const { key } = await apiKey(t.prisma, { brokerId, scopes: ['admin:full'] });
  const get = (path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
  const post = (path: string, body: object = {}) => request(t.app).post(path).set('Authorization', `Bearer ${key}`).send(body);
  // Live services come only through approvals, so the first one is created and approved at once.
  const services: number[] = [];
  /** The pending requests, to approve or deny. */
  const requests: string[] = [];
  let clock = Date.now();
  const first = await post('/api/v1/service-create', { plan: 'Standard VPS', hostname: 'h0.example', customer_email: 'a@client.example' });
  assert.equal(first.status, 202, JSON.stringify(first.body));
  assert.equal((await post(`/api/v1/requests/${first.body.data.request_id}/manage`, { action: 'approve' })).status, 200);
  services.push((await get('/api/v1/services')).body.data[0].service_number);
  const at = <T>(list: T[], pick: number): T | undefined => (list.length === 0 ? undefined : list[pick % list.length]);
  for (const [i, o] of ops.entries()) {
    if (o.op === 'create') {
      const res = await post('/api/v1/service-create', { plan: PLANS[o.plan], hostname: `h${i + 1}.example`, customer_email: 'a@client.example' });
      accepted(res);
      if (res.status === 202) requests.push(res.body.data.request_id);
    } else if (o.op === 'upgrade' || o.op === 'downgrade') {
      const res = await post(`/api/v1/services/${at(services, o.pick)}/${o.op}`, { plan: o.op === 'upgrade' ? PLANS[3 - (o.plan % 2)] : PLANS[0] });
      accepted(res);
      if (res.status === 202) requests.push(res.body.data.request_id);
    } else if (o.op === 'cancel') {
      const res = await post(`/api/v1/services/${at(services, o.pick)}/cancel`, { reason: 'moving on', when: o.when });
      accepted(res);
      if (res.status === 202) requests.push(res.body.data.request_id);
    } else if (o.op === 'password') {
      const res = await post(`/api/v1/services/${at(services, o.pick)}/password`);
      accepted(res);
      if (res.status === 200) done.add('password');
    } else if (o.op === 'approve' || o.op === 'deny') {
      // Mostly the newest pending request, so a write asked for is often carried out.
      const id = o.pick % 3 === 0 ? at(requests, o.pick) : requests.at(-1);
      if (id === undefined) continue;
      const res = await post(`/api/v1/requests/${id}/manage`, o.op === 'approve' ? { action: 'approve' } : { action: 'deny', denial_reason: 'not now' });
      accepted(res);
      requests.splice(requests.indexOf(id), 1);
      if (res.status === 200) done.add(o.op === 'deny' ? 'deny' : `approve ${res.body.data.request_type}${res.body.data.cancel_when ? ` ${res.body.data.cancel_when}` : ''}`);
      if (res.status === 200 && res.body.data.request_type === 'create' && o.op === 'approve') services.push(res.body.data.service_number);
    } else if (o.op === 'clock') {
      // The worker's upkeep at a later time: what falls due by then is cancelled, with its event.
      clock += o.days * 86_400_000;
      if ((await applyAllDueCancellations(t.prisma, new Date(clock))) > 0) done.add('due cancellation');
    }
  }

  // The mirror: the ascending feed alone, page by page.
  const mirror = { services: new Map<unknown, Json>(), requests: new Map<unknown, Json>() };
  let after: string | null = null;
  do {
    const res = await get(`/api/v1/events?order=asc&limit=100${after ? `&starting_after=${after}` : ''}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    for (const e of res.body.data as Array<{ id: string; type: string; data: { object: Json; previous_attributes?: Json } }>) {
      const isService = e.type.startsWith('service.');
      const table = isService ? mirror.services : mirror.requests;
      const key = isService ? e.data.object.service_number : e.data.object.request_id;
      const was = table.get(key);
      if (e.type.endsWith('.created')) {
        assert.equal(was, undefined, `${e.type} ${String(key)} created twice`);
        assert.equal(e.data.previous_attributes, undefined);
      } else {
        assert.ok(was, `${e.type} ${String(key)} before its creation`);
        // What the event says changed is what the mirror held, and the rest did not change.
        const { password_changed: _p, ...previous } = e.data.previous_attributes ?? {};
        for (const [field, value] of Object.entries(previous)) assert.deepEqual(was[field], value, `${e.id} previous ${field}`);
        for (const [field, value] of Object.entries(e.data.object)) {
          if (!(field in previous)) assert.deepEqual(value, was[field], `${e.id} ${field} changed without previous_attributes`);
        }
      }
      table.set(key, e.data.object);
    }
    after = res.body.pagination.has_more ? res.body.pagination.next_starting_after : null;
  } while (after);

  // The API's answers, read at the clock the upkeep reached (a read applies what is due by now).
  const listed = async (path: string, id: string) => {
    const rows = new Map<unknown, Json>();
    for (let offset = 0; ; offset += 100) {
      const res = await get(`${path}?limit=100&offset=${offset}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      for (const row of res.body.data as Json[]) {
        const { credentials: _c, ...shown } = row;
        rows.set(row[id], shown);
      }
      if (!res.body.pagination.has_more) return rows;
    }
  };
  const shownServices = await listed('/api/v1/services', 'service_number');
  const shownRequests = await listed('/api/v1/requests', 'request_id');
  assert.deepEqual(new Map([...mirror.services].sort()), new Map([...shownServices].sort()), 'services: mirror = GET');
  assert.deepEqual(new Map([...mirror.requests].sort()), new Map([...shownRequests].sort()), 'requests: mirror = GET');
}

test('a mirror built from the ascending feed equals what the GETs answer, after any sequence of writes (live)', async () => {
  const seed = process.env.MIRROR_SEED === undefined ? 39 : Number(process.env.MIRROR_SEED);
  await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 3, maxLength: 8 }), run), { numRuns: 12, seed, endOnFailure: true, includeErrorInReport: true });
  // A downgrade is asked for and refused or denied in the runs, but rarely approved (the lead may bias it further).
  done.delete('approve downgrade');
  assert.deepEqual([...done].sort(), [
    'approve cancel end_of_billing_period', 'approve cancel immediate', 'approve create', 'approve upgrade',
    'deny', 'due cancellation', 'password',
  ], 'every write took place in some run');
});
