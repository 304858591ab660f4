// `demo` writes the events of the changes it makes, in their transaction, as the API's operations
// write theirs (src/cli/demo-events.ts): `service.created` and `request.created` for what it
// creates, `request.denied` for each open request it closes on the example services (an
// integrator's too), `service.updated` only for an example service it actually put back,
// `request.created` for an example request it puts back to pending. Each object is the record as
// GET shows it with the live key, without credentials. It never rewrites an event: run again, it
// only appends.
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
/** The live feed as the API served it after the first run, oldest first. */
let firstWalk: Served[];

interface Served {
  id: string;
  sequence: number;
  created_at: string;
}

/** The whole live feed through the API, oldest first, a page at a time. */
async function walk(): Promise<Served[]> {
  const served: Served[] = [];
  for (;;) {
    const cursor = served.at(-1)?.id;
    const res = await live(`/api/v1/events?order=asc&limit=100${cursor ? `&starting_after=${cursor}` : ''}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    served.push(...(res.body.data as Served[]).map(({ id, sequence, created_at }) => ({ id, sequence, created_at })));
    if (!res.body.pagination.has_more) return served;
  }
}

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
  // The examples' events are the events of their records' creation in this run, in the order written.
  assert.deepEqual(events.filter((e) => exampleEvents.has(e.id)).map((e) => e.id), [...EXAMPLE_EVENT_IDS]);
  assert.equal(events.find((e) => e.type === 'ping')?.id, EXAMPLE_EVENT_IDS.at(-1), 'the one ping: the example');
  const changes = events.filter((e) => e.type !== 'ping');
  assert.ok(events.every((e) => e.mode === 'live' && e.createdAt.getTime() <= Date.now()), 'live, none dated in the future');
  assert.ok(!JSON.stringify(changes).includes('credentials'), 'no credentials in any event');
  firstWalk = await walk();
  assert.deepEqual(firstWalk.map((e) => e.id), events.map((e) => e.id), 'the feed serves them in the order written');

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
      ['request.created', 'REQ-000044'],
    ],
  );
  // REQ-000044, approved above, is pending again: told, so a mirror kept from the events agrees with GET.
  const reopened = changes.find((e) => e.type === 'request.created')!;
  assert.equal(reopened.object.request_status, 'pending');
  assert.deepEqual(reopened.object, await shownRequest('REQ-000044'));
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
  // The examples' events stay as they were: no run writes them again.
  assert.deepEqual(changes.filter((e) => exampleEvents.has(e.id)), []);
});

test('a run that changes nothing writes no event', async () => {
  const changes = (await runEvents(new Date())).filter((e) => !exampleEvents.has(e.id));
  assert.deepEqual(changes, []);
});

test('after demo runs twice the first walk is unchanged: same ids, order, created_at and sequence, and later events only follow it', async () => {
  await runEvents(new Date());
  assert.equal((await post('/api/v1/services/615204387/password')).status, 200);
  await runEvents(new Date());
  const now = Date.now();
  const feed = await walk();
  assert.ok(feed.length > firstWalk.length, 'the later runs appended');
  assert.deepEqual(feed.slice(0, firstWalk.length), firstWalk, 'what was served is never moved, re-dated or rewritten');
  feed.forEach((e, i) => assert.equal(e.sequence, i + 1, `${e.id}: sequence ${e.sequence} at place ${i + 1} (1, 2, 3… in feed order)`));
  for (let i = 1; i < feed.length; i += 1) assert.ok(feed[i]!.created_at >= feed[i - 1]!.created_at, `${feed[i]!.id} dated before ${feed[i - 1]!.id}`);
  assert.ok(feed.every((e) => Date.parse(e.created_at) <= now), 'no event dated in the future');
  // Nor anything else the demo wrote about them: the example delivery lies wholly before the run.
  const deliveries = await t.prisma.webhookDelivery.findMany({ where: { event: { brokerId } }, include: { attemptsMade: true } });
  const dates = deliveries.flatMap((d) => [d.createdAt, d.completedAt, ...d.attemptsMade.map((a) => a.attemptedAt)]).filter((d) => d !== null);
  assert.ok(dates.length > 0 && dates.every((d) => d.getTime() <= now), 'no delivery or attempt dated in the future');
  // The newest-first list agrees.
  const desc = await live('/api/v1/events?limit=100');
  assert.deepEqual((desc.body.data as Served[]).map((e) => e.sequence), feed.slice(-100).map((e) => e.sequence).reverse());
});
