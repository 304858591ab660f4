/**
 * Every writeWithEvents change once, with no HTTP app: the killing test of `npm run mutate:events`
 * (bench/README.md, "Mutation: every write's event"), run once per mutant in a process that keeps
 * these modules loaded (scripts/mutate-events-runner.mjs), and by every-write.test.ts. A mirror
 * built from the feed alone (each event's object, in `seq` order, checked against its
 * `previous_attributes`) must equal every service, request and webhook endpoint as the API shows
 * them; an event removed or changed leaves it unlike a record. test/events/mirror.test.ts draws
 * random sequences through the API; this is its fixed floor.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createCredentials } from '../../src/db/credentials.ts';
import { writeWithEvents, writeWithEventsIn } from '../../src/events/writes.ts';
import { runDemo } from '../../src/cli/demo.ts';
import { EXAMPLE_EVENT_IDS } from '../../src/cli/demo-examples.ts';
import { importServices } from '../../src/cli/imports.ts';
import { createLogger } from '../../src/logger.ts';
import { approveRequest, denyRequest } from '../../src/requests/store.ts';
import { REQUEST_INCLUDE, requestData } from '../../src/services/change-requests.ts';
import { loadCatalogue } from '../../src/services/plans.ts';
import { serviceData } from '../../src/services/present.ts';
import type { ServiceReadCache } from '../../src/services/read-cache.ts';
import { applyAllDueCancellations, applyDueCancellations } from '../../src/services/store.ts';
import { liveServices } from '../../src/services/use-cases.ts';
import type { Caller } from '../../src/shared/caller.ts';
import { parseRequestId } from '../../src/shared/ids.ts';
import { NO_RECORDS } from '../../src/shared/unit-of-work.ts';
import { endpointData } from '../../src/webhooks/endpoint-data.ts';
import { createEndpoint, deleteEndpoint, rotateSecret, updateEndpoint, type EndpointScope } from '../../src/webhooks/endpoint-store.ts';
import type { TestDatabase } from '../helpers/db.ts';
import { apiKey, broker } from '../helpers/factories.ts';

let db: TestDatabase;

type Json = Record<string, unknown>;
interface Held {
  brokerId: string;
  mode: string;
  object: Json;
}

/** Delivery figures change with every attempt and no event tells of them (openapi.yaml "Endpoints' events"). */
const FIGURES = ['last_success_at', 'last_failure_at', 'failing_since', 'consecutive_failures'];
const withoutFigures = (o: Json): Json => Object.fromEntries(Object.entries(o).filter(([k]) => !FIGURES.includes(k)));
const ID_OF: Record<string, string> = { service: 'service_number', service_request: 'request_id', webhook_endpoint: 'id' };
const KIND_OF_TYPE: Record<string, string> = { service: 'service', request: 'service_request', webhook_endpoint: 'webhook_endpoint' };

/** The whole feed, every broker and mode, applied in `seq` order: each record as its events tell it. */
async function mirrorOfFeed(): Promise<Map<string, Held>> {
  const mirror = new Map<string, Held>();
  for (const e of await db.prisma.event.findMany({ orderBy: { seq: 'asc' } })) {
    const { object, previous_attributes: previous } = e.data as { object: Json; previous_attributes?: Json };
    if (e.type === 'ping') continue;
    const kind = String(object.object);
    assert.equal(KIND_OF_TYPE[e.type.split('.')[0]!], kind, `${e.id}: a ${e.type} tells of a ${kind}`);
    const key = `${kind} ${String(object[ID_OF[kind]!])}`;
    const was = mirror.get(key);
    if (e.type.endsWith('.created')) {
      assert.equal(was, undefined, `${e.type} of ${key} twice`);
      assert.equal(previous, undefined, `${e.id}: a creation has no previous_attributes`);
    } else {
      assert.ok(was, `${e.id} ${e.type} of ${key} before its creation`);
      assert.deepEqual([was.brokerId, was.mode], [e.brokerId, e.mode], `${e.id}: the feed of ${key}`);
      if (e.type.endsWith('.deleted')) {
        assert.equal(previous, undefined);
        assert.deepEqual(withoutFigures(object), withoutFigures(was.object), `${e.id}: a deletion tells the record as it was`);
        mirror.delete(key);
        continue;
      }
      // What the event says changed is what the mirror held; every other field is as it was.
      const { password_changed: _p, ...changed } = previous ?? {};
      assert.ok(Object.keys(previous ?? {}).length > 0, `${e.id} ${e.type} of ${key}: a change tells what it changed`);
      for (const [field, value] of Object.entries(changed)) if (!FIGURES.includes(field)) assert.deepEqual(was.object[field], value, `${e.id} ${e.type}: previous ${field}`);
      for (const [field, value] of Object.entries(object)) {
        if (!(field in changed) && !FIGURES.includes(field)) assert.deepEqual(value, was.object[field], `${e.id} ${e.type}: ${field} changed without previous_attributes`);
      }
    }
    mirror.set(key, { brokerId: e.brokerId, mode: e.mode, object });
  }
  return mirror;
}

/** Every service, request and endpoint of every broker, as the API shows them. */
async function records(): Promise<Map<string, Held>> {
  const held = new Map<string, Held>();
  const put = (kind: string, brokerId: string, mode: string, object: Json) => held.set(`${kind} ${String(object[ID_OF[kind]!])}`, { brokerId, mode, object });
  for (const s of await db.prisma.service.findMany({ include: { plan: true } })) put('service', s.brokerId, 'live', serviceData(s));
  for (const r of await db.prisma.serviceRequest.findMany({ include: REQUEST_INCLUDE })) put('service_request', r.brokerId, 'live', requestData(r));
  for (const w of await db.prisma.webhookEndpoint.findMany()) put('webhook_endpoint', w.brokerId, w.mode, endpointData(w));
  return held;
}

const sorted = (m: Map<string, Held>) => [...m].map(([k, v]) => [k, { ...v, object: withoutFigures(v.object) }] as const).sort(([a], [b]) => a.localeCompare(b));

async function assertMirrorEqualsRecords(when: string): Promise<void> {
  assert.deepEqual(sorted(await mirrorOfFeed()), sorted(await records()), `${when}: the feed's mirror = the records`);
}

/** The data of a record's newest event of `type`. */
async function lastEventOf(type: string, id: string): Promise<{ object: Json; previous_attributes?: Json }> {
  const events = await db.prisma.event.findMany({ where: { type }, orderBy: { seq: 'desc' } });
  const data = events.map((e) => e.data as { object: Json; previous_attributes?: Json }).find((d) => String(d.object[ID_OF[String(d.object.object)]!]) === id);
  assert.ok(data, `a ${type} of ${id}`);
  return data;
}

/** A change that fails after writing leaves nothing: its writes and its events are one transaction, its caller's when it has one. */
async function failedChange(): Promise<void> {
  const { id: brokerId } = await broker(db.prisma);
  const created = await writeWithEvents(db.prisma, async (tx) => {
    const row = await tx.webhookEndpoint.create({ data: { id: `we_${randomBytes(8).toString('hex')}`, brokerId, mode: 'live', url: 'https://a.example/h', events: [], secret: 's' } });
    return { value: row, events: [{ brokerId, mode: 'live', type: 'webhook_endpoint.created', object: endpointData(row) }] };
  });
  await assert.rejects(
    writeWithEvents(db.prisma, async (tx) => {
      await tx.webhookEndpoint.update({ where: { id: created.id }, data: { url: 'https://b.example/h' } });
      throw new Error('after the write');
    }),
    /after the write/,
  );
  // A change inside the caller's transaction is part of it: rolled back with it.
  await assert.rejects(
    db.prisma.$transaction(async (outer) => {
      await writeWithEventsIn(outer, async (tx) => {
        const row = await tx.webhookEndpoint.update({ where: { id: created.id }, data: { url: 'https://c.example/h' } });
        return { value: row, events: [{ brokerId, mode: 'live', type: 'webhook_endpoint.updated', object: endpointData(row), previousAttributes: { url: created.url } }] };
      });
      assert.equal(await outer.event.count({ where: { brokerId } }), 2, 'the change\'s event, in the caller\'s transaction');
      throw new Error('the caller fails');
    }),
    /the caller fails/,
  );
  assert.equal((await db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: created.id } })).url, 'https://a.example/h');
  assert.equal(await db.prisma.event.count({ where: { brokerId } }), 1);
}

/** Every change of a service, request or endpoint once, the CLI's import and the demo run twice. */
async function everyChange(): Promise<void> {
  const credentials = createCredentials(randomBytes(32));
  const catalogue = loadCatalogue(db.prisma);
  const services = liveServices({
    prisma: db.prisma,
    logger: createLogger('silent'),
    catalogue: () => catalogue,
    credentials: async () => credentials,
    serviceReads: { changed: async () => undefined } as unknown as ServiceReadCache,
    sendMail: async () => undefined,
  });
  const now = new Date();
  const later = (days: number) => new Date(now.getTime() + days * 86_400_000);
  const work = NO_RECORDS;

  // The worker's upkeep with nothing due: a change with no event.
  assert.equal(await applyAllDueCancellations(db.prisma, now), 0);
  // The demo's first run: the examples' events with their fixed ids, then the sample data's.
  await runDemo(db.prisma, { credentials });
  const examples = await db.prisma.event.findMany({ where: { id: { in: [...EXAMPLE_EVENT_IDS] } }, select: { id: true, type: true } });
  assert.deepEqual(examples.map((e) => e.type).sort(), ['ping', 'request.created', 'service.created'], 'the examples\' events, with their fixed ids');
  await assertMirrorEqualsRecords('after the demo');

  const { id: brokerId, slug } = await broker(db.prisma, { approval: 'manual' });
  const { id: apiKeyId } = await apiKey(db.prisma, { brokerId });
  const caller = (approval: Caller['approval']): Caller => ({ brokerId, apiKeyId, approval, mayReadCredentials: true, providerReview: false, simulatedFailure: undefined, unitOfWork: work });
  const manual = caller('manual');
  const requestId = (r: { request_id: string }) => parseRequestId(r.request_id)!;
  const approve = (r: { request_id: string }) => approveRequest(db.prisma, credentials, brokerId, requestId(r), work);

  // A create request, approved: the service of its approval.
  const asked = await services.createService(manual, { plan: 'Standard VPS', hostname: 'a.example', customerEmail: 'a@client.example', customerName: 'A', billingCycle: 'monthly' });
  assert.ok('requested' in asked);
  const first = (await approve(asked.requested)).service!.serviceNumber;
  // Automatic approval: service and approved request together.
  const auto = await services.createService(caller('automatic'), { plan: 'Basic VPS', hostname: 'b.example', customerEmail: 'b@client.example', customerName: null, billingCycle: 'quarterly' });
  assert.ok('created' in auto);
  const second = auto.created.service_number;

  await services.changePassword(manual, first, undefined);
  assert.equal((await lastEventOf('service.updated', String(first))).previous_attributes?.password_changed, true, 'a new password: password_changed');
  await approve(await services.requestPlanChange(manual, first, 'upgrade', 'Enterprise VPS'));
  await denyRequest(db.prisma, brokerId, requestId(await services.requestPlanChange(manual, first, 'downgrade', 'Basic VPS')), 'not now', work);
  await approve(await services.requestPlanChange(manual, first, 'downgrade', 'Basic VPS'));
  await approve(await services.requestCancellation(manual, second, 'moving', 'end_of_billing_period'));
  assert.equal(await applyDueCancellations(db.prisma, brokerId, later(400)), 1, 'the scheduled cancellation falls due');
  await approve(await services.requestCancellation(manual, first, 'moving', 'immediate'));

  // The admin CLI's services import: a service.created each.
  const numbers = [700_000_001, 700_000_002];
  assert.deepEqual(await importServices(db.prisma, slug, numbers.map((n, i) => ({ service_number: n, plan: 'Basic VPS', status: ['active', 'suspended'][i], hostname: `i${n}.example`, username: `u${i}`, password: `pw-${n}` })), { credentials }), { imported: 2 });

  // Endpoints: created, each field changed, disabled and enabled, its secret rotated, deleted.
  const scope: EndpointScope = { brokerId, mode: 'live' };
  const kept = await createEndpoint(db.prisma, scope, { url: 'https://hooks.example/1', events: [], description: null, secret: 'enc1' }, work, now, 10);
  const gone = await createEndpoint(db.prisma, { brokerId, mode: 'test' }, { url: 'https://hooks.example/2', events: ['service.updated'], description: 'two', secret: 'enc2' }, work, now, 10);
  for (const change of [{ url: 'https://hooks.example/3' }, { events: ['request.created'] }, { description: 'one' }, { status: 'disabled' as const }, { status: 'enabled' as const }]) {
    await updateEndpoint(db.prisma, scope, kept.id, change, work, new Date());
  }
  await rotateSecret(db.prisma, scope, kept.id, 'enc3', work, new Date());
  await deleteEndpoint(db.prisma, { brokerId, mode: 'test' }, gone.id, work, new Date());
  await assertMirrorEqualsRecords('after every change');

  // A live call changes an example (482913570's password, so its updated_at); the demo's second run puts it back, with its event.
  const demo = await db.prisma.broker.findUniqueOrThrow({ where: { slug: 'demo' } });
  const { id: demoKey } = await apiKey(db.prisma, { brokerId: demo.id });
  await services.changePassword({ ...manual, brokerId: demo.id, apiKeyId: demoKey }, 482913570, undefined);
  const seq = (await db.prisma.event.aggregate({ _max: { seq: true } }))._max.seq!;
  await runDemo(db.prisma, { credentials });
  assert.deepEqual((await db.prisma.event.findMany({ where: { brokerId: demo.id, seq: { gt: seq } } })).map((e) => e.type), ['service.updated'], 'the second run puts the example back');
  await assertMirrorEqualsRecords('after the demo\'s second run');
}

/**
 * Both on `database` (a fresh one: the demo makes its broker, with fixed ids); throws on the first
 * difference. The mutation runner (scripts/mutate-events-runner.mjs) calls it once per mutant.
 */
export async function everyWriteOnce(database: TestDatabase): Promise<void> {
  db = database;
  await failedChange();
  await everyChange();
}
