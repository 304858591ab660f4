// `demo` writes the events of the changes it makes, in their transaction, as the API's operations
// write theirs (src/cli/demo-events.ts): `service.created` and `request.created` for what it
// creates, `request.denied` for each open request it closes on the example services (an
// integrator's too), `service.updated` only for an example service it actually put back. Each
// object is the record as GET shows it with the live key, without credentials.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { storedEvents, type StoredEvent } from '../helpers/events.ts';
import { webhookEndpoint } from '../helpers/webhook-factories.ts';
import type { Credentials } from '../../src/db/credentials.ts';
import { DEMO_SLUG, runDemo } from '../../src/cli/demo.ts';
import { EXAMPLE_EVENT_IDS } from '../../src/cli/demo-examples.ts';
import { formatRequestId } from '../../src/shared/ids.ts';

let t: TestApp;
let credentials: Credentials;
let liveKey: string;
let brokerId: string;
/** The contract examples' events: rewritten by every run (demo-examples.ts), not changes of the run. */
let exampleEvents: Set<string>;

before(async () => {
  // No workers: the deliveries the events owe stay pending, as written, for the assertions.
  t = await createTestApp({}, { workers: false });
  credentials = await t.deps.credentials();
});
after(async () => {
  await t?.close();
});

/** The events written by one `demo` run at `now`, in the order written. */
async function runEvents(now: Date): Promise<StoredEvent[]> {
  const last = await t.prisma.event.findFirst({ orderBy: { seq: 'desc' }, select: { seq: true } });
  liveKey = (await runDemo(t.prisma, { credentials, now })).result.live_key;
  return storedEvents(t.prisma, { seq: { gt: last?.seq ?? -1n } });
}

const live = (path: string) => request(t.app).get(path).set('Authorization', `Bearer ${liveKey}`);
const post = (path: string, body: object = {}) => request(t.app).post(path).set('Authorization', `Bearer ${liveKey}`).send(body);

/** GET /services/{n} with the live key, without its credentials. */
async function shownService(serviceNumber: unknown): Promise<Record<string, unknown>> {
  const res = await live(`/api/v1/services/${String(serviceNumber)}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const { credentials: _credentials, ...shown } = res.body.data as Record<string, unknown>;
  return shown;
}

/** The request as GET /requests finds it with the live key. */
async function shownRequest(requestId: unknown): Promise<Record<string, unknown>> {
  const res = await live(`/api/v1/requests?search=${String(requestId)}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.data.length, 1, JSON.stringify(res.body));
  return res.body.data[0] as Record<string, unknown>;
}

test('the first run writes service.created for each service and request.created for each request it creates, as GET shows them', async () => {
  const now = new Date();
  const events = await runEvents(now);
  const broker = await t.prisma.broker.findUniqueOrThrow({ where: { slug: DEMO_SLUG } });
  brokerId = broker.id;
  exampleEvents = new Set(EXAMPLE_EVENT_IDS);
  // Wished minutes before the run, but dated no earlier than the run's own events just before them: the feed never goes back.
  assert.deepEqual(events.slice(-3).map((e) => e.id), [...EXAMPLE_EVENT_IDS], 'the examples\' three events, last');
  const changes = events.filter((e) => !exampleEvents.has(e.id));
  // Stamped where the feed's order is decided (src/events/store.ts), so at the run's write, not before it.
  assert.ok(changes.every((e) => e.mode === 'live' && e.createdAt.getTime() >= now.getTime()), 'live, dated the run');
  assert.ok(!JSON.stringify(changes).includes('credentials'), 'no credentials in any event');

  const services = await t.prisma.service.findMany({ where: { brokerId }, orderBy: { id: 'asc' } });
  const created = changes.filter((e) => e.type === 'service.created');
  assert.deepEqual(created.map((e) => e.object.service_number).sort(), services.map((s) => s.serviceNumber).sort(), 'one per service');
  for (const e of created) assert.deepEqual(e.object, await shownService(e.object.service_number));

  const requests = await t.prisma.serviceRequest.findMany({ where: { brokerId }, orderBy: { id: 'asc' } });
  const requested = changes.filter((e) => e.type === 'request.created');
  assert.deepEqual(requested.map((e) => e.object.request_id).sort(), requests.map((r) => formatRequestId(r.id)).sort(), 'one per request');
  for (const e of requested) assert.deepEqual(e.object, await shownRequest(e.object.request_id));

  // The example endpoint it creates (disabled: its address reaches no one), as GET shows it.
  const endpoints = changes.filter((e) => e.type.startsWith('webhook_endpoint.'));
  assert.deepEqual(endpoints.map((e) => [e.type, e.object.id, e.object.status]), [['webhook_endpoint.created', 'we_4bK9xT2mQ7vR1nL8pZ3cY6dW', 'disabled']]);

  assert.equal(changes.length, created.length + requested.length + endpoints.length, 'nothing else');
});

test("a later run denies an integrator's open request with request.denied, and writes service.updated only for the example services it changed back", async () => {
  // An integrator's calls with the live key: an upgrade left open on 482913570, REQ-000044 approved
  // (731845206 moves to Professional VPS), a new password for 615204387; 508716294 is left alone.
  const upgrade = await post('/api/v1/services/482913570/upgrade', { plan: 'Professional VPS' });
  assert.equal(upgrade.status, 202, JSON.stringify(upgrade.body));
  assert.equal((await post('/api/v1/requests/REQ-000044/manage', { action: 'approve' })).status, 200);
  assert.equal((await post('/api/v1/services/615204387/password')).status, 200);
  const receiver = await webhookEndpoint(t.prisma, { brokerId });

  const now = new Date();
  const changes = (await runEvents(now)).filter((e) => !exampleEvents.has(e.id));
  assert.deepEqual(
    changes.map((e) => [e.type, e.type.startsWith('service.') ? e.object.service_number : e.object.request_id]),
    [
      ['service.updated', 731845206],
      ['service.updated', 615204387],
      ['request.denied', upgrade.body.data.request_id],
    ],
  );
  assert.ok(changes.every((e) => e.mode === 'live' && e.createdAt.getTime() >= now.getTime()));
  for (const e of changes.filter((x) => x.type === 'service.updated')) assert.deepEqual(e.object, await shownService(e.object.service_number));
  const denied = changes.find((e) => e.type === 'request.denied')!;
  assert.deepEqual(denied.object, await shownRequest(denied.object.request_id));
  assert.equal(denied.object.request_status, 'denied');
  assert.equal(denied.object.decided_at, now.toISOString());
  assert.equal((await shownService(731845206)).plan, 'Standard VPS', 'put back as the examples show it');

  // The integrator's receiver is owed each of them; the examples' host (disabled by the run) none.
  const owed = await t.prisma.webhookDelivery.findMany({ where: { eventId: { in: changes.map((e) => e.id) } }, select: { endpointId: true } });
  assert.deepEqual(owed.map((d) => d.endpointId), changes.map(() => receiver));
});

test('a run that changes nothing writes no event', async () => {
  const changes = (await runEvents(new Date())).filter((e) => !exampleEvents.has(e.id));
  assert.deepEqual(changes, []);
});

test('after demo runs twice the feed never goes back: ascending by seq, created_at never decreases', async () => {
  await runEvents(new Date());
  await runEvents(new Date());
  const feed = await storedEvents(t.prisma, { brokerId, mode: 'live' });
  assert.ok(feed.length > exampleEvents.size);
  for (let i = 1; i < feed.length; i += 1) {
    assert.ok(feed[i]!.createdAt >= feed[i - 1]!.createdAt, `${feed[i]!.id} (${feed[i]!.createdAt.toISOString()}) after ${feed[i - 1]!.id} (${feed[i - 1]!.createdAt.toISOString()})`);
  }
  // The API's own answer agrees: order=asc never goes back, order=desc lists the newest first.
  const asc = await live('/api/v1/events?order=asc&limit=100');
  assert.equal(asc.status, 200, JSON.stringify(asc.body));
  const dates = (asc.body.data as Array<{ created_at: string }>).map((e) => e.created_at);
  assert.deepEqual(dates, [...dates].sort());
});
