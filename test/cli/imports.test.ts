/**
 * `services import` writes each service's `service.created` event in the import's transaction,
 * as the API's operations write theirs (src/events/store.ts): the object as the API's own answer
 * shows the service (never credentials), and the deliveries owed to the broker's endpoints. A
 * rejected file writes neither services nor events; invoices are not service changes and have none.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import type { Credentials } from '../../src/db/credentials.ts';
import { CHUNK_SIZE, importInvoices, importServices } from '../../src/cli/imports.ts';
import { serviceData } from '../../src/services/present.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker, type TestBroker } from '../helpers/factories.ts';
import { storedEvents, type StoredEvent } from '../helpers/events.ts';
import { webhookEndpoint } from '../helpers/webhook-factories.ts';

let t: TestApp;
let credentials: Credentials;

before(async () => {
  // No workers: the deliveries an import owes stay pending, as written, for the assertions.
  t = await createTestApp({}, { workers: false });
  credentials = await t.deps.credentials();
});
after(async () => {
  await t?.close();
});

let nextNumber = 300_000_000;
/** `n` rows with numbers never used before in this file, plans, statuses and optional fields varied. */
function rows(n: number, extra: (i: number) => Record<string, unknown> = () => ({})): Array<Record<string, unknown>> {
  const first = nextNumber;
  nextNumber += n;
  const plans = ['Basic VPS', 'standard vps', 'Professional VPS', 'Enterprise VPS'];
  const statuses = ['active', 'pending', 'suspended', 'cancelled'];
  return Array.from({ length: n }, (_, i) => ({
    service_number: first + i,
    plan: plans[i % 4],
    status: statuses[i % 4],
    hostname: `Vps${first + i}.Example.net`,
    username: `user${i}`,
    password: `pw-${first + i}-secret`,
    ...(i % 2 === 0 ? { created_at: '2025-06-01T12:00:00+02:00', customer_email: `c${i}@example.org`, customer_name: `Customer ${i}` } : {}),
    ...(i % 3 === 0 ? { billing_cycle: 'annually' } : {}),
    ...extra(i),
  }));
}

const eventsOf = (brokerId: string) => storedEvents(t.prisma, { brokerId });

const byNumber = (events: StoredEvent[]) => new Map(events.map((e) => [e.object.service_number as number, e]));

describe('services import: service.created events', () => {
  test('one event per service, the object as GET /services/{n} answers it without credentials', async () => {
    const b = await broker(t.prisma);
    const key = (await apiKey(t.prisma, { brokerId: b.id, scopes: ['admin:full'] })).key;
    const file = rows(6);
    const started = Date.now();
    assert.deepEqual(await importServices(t.prisma, b.slug, file, { credentials }), { imported: 6 });

    const events = await eventsOf(b.id);
    assert.equal(events.length, 6);
    assert.ok(events.every((e) => e.type === 'service.created' && e.mode === 'live'));
    assert.ok(events.every((e) => e.createdAt.getTime() >= started - 1000), 'dated the import');
    assert.equal(new Set(events.map((e) => e.id)).size, 6);
    const events_ = byNumber(events);
    for (const row of file) {
      const res = await request(t.app).get(`/api/v1/services/${String(row.service_number)}`).set('Authorization', `Bearer ${key}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const { credentials: shownCredentials, ...shown } = res.body.data as Record<string, unknown>;
      const event = events_.get(row.service_number as number);
      assert.ok(event, `service ${String(row.service_number)} has its event`);
      assert.deepEqual(event.object, shown);
      // The password is in the answer's credentials, and nowhere in the event.
      assert.deepEqual(shownCredentials, { username: row.username, password: row.password });
      assert.ok(!JSON.stringify(event.object).includes(row.password as string), 'no password in the event');
      assert.ok(!('credentials' in event.object));
    }
    // Through the API too: the broker's live key lists them.
    const listed = await request(t.app).get('/api/v1/events?type=service.created&limit=100').set('Authorization', `Bearer ${key}`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual((listed.body.data as Array<{ id: string }>).map((e) => e.id).sort(), events.map((e) => e.id).sort());
  });

  test('more than one chunk: every service its event, each owing a delivery to each endpoint that takes service.created', async () => {
    const b = await broker(t.prisma);
    const all = await webhookEndpoint(t.prisma, { brokerId: b.id });
    const subscribed = await webhookEndpoint(t.prisma, { brokerId: b.id, events: ['request.created', 'service.created'] });
    // None of these is owed anything: another type only, disabled, test mode, another broker.
    await webhookEndpoint(t.prisma, { brokerId: b.id, events: ['request.created'] });
    await webhookEndpoint(t.prisma, { brokerId: b.id, status: 'disabled' });
    await webhookEndpoint(t.prisma, { brokerId: b.id, mode: 'test' });
    const other = await broker(t.prisma);
    await webhookEndpoint(t.prisma, { brokerId: other.id });

    const n = CHUNK_SIZE + 3;
    assert.deepEqual(await importServices(t.prisma, b.slug, rows(n), { credentials }), { imported: n });

    const events = await eventsOf(b.id);
    assert.equal(events.length, n);
    assert.ok(events.every((e) => e.type === 'service.created' && e.mode === 'live'));
    const services = await t.prisma.service.findMany({ where: { brokerId: b.id }, include: { plan: true } });
    assert.equal(services.length, n);
    const events_ = byNumber(events);
    for (const s of services) assert.deepEqual(events_.get(s.serviceNumber)?.object, serviceData(s), `service ${s.serviceNumber}`);

    const deliveries = await t.prisma.webhookDelivery.findMany({ where: { event: { brokerId: b.id } }, select: { eventId: true, endpointId: true, status: true } });
    assert.equal(deliveries.length, 2 * n);
    assert.ok(deliveries.every((d) => d.status === 'pending'));
    for (const endpoint of [all, subscribed]) {
      const owed = new Set(deliveries.filter((d) => d.endpointId === endpoint).map((d) => d.eventId));
      assert.equal(owed.size, n, `${endpoint}: one delivery per event`);
      assert.ok(events.every((e) => owed.has(e.id)));
    }
    assert.equal(await t.prisma.event.count({ where: { brokerId: other.id } }), 0);
  });

  test('a rejected file (bad row, number taken, clash in a later chunk) writes no service and no event', async () => {
    const b = await broker(t.prisma);
    await webhookEndpoint(t.prisma, { brokerId: b.id });
    const taken = rows(1);
    const first: TestBroker = await broker(t.prisma);
    await importServices(t.prisma, first.slug, taken, { credentials });
    const eventsBefore = await t.prisma.event.count();
    const deliveriesBefore = await t.prisma.webhookDelivery.count();

    await assert.rejects(importServices(t.prisma, b.slug, rows(3, (i) => (i === 2 ? { status: 'gone' } : {})), { credentials }), /row 3, field "status"/);
    await assert.rejects(importServices(t.prisma, b.slug, [...rows(2), ...taken], { credentials }), /row 3, field "service_number": service \d+ already exists/);
    // The clash is in the second chunk: the first chunk's services and events went in, and are rolled back.
    const late = rows(CHUNK_SIZE + 1);
    late[CHUNK_SIZE] = { ...late[CHUNK_SIZE], service_number: taken[0]!.service_number };
    await assert.rejects(importServices(t.prisma, b.slug, late, { credentials }), new RegExp(`row ${CHUNK_SIZE + 1}, field "service_number"`));

    assert.equal(await t.prisma.service.count({ where: { brokerId: b.id } }), 0);
    assert.equal(await t.prisma.event.count(), eventsBefore);
    assert.equal(await t.prisma.webhookDelivery.count(), deliveriesBefore);
  });

  test('invoices import: no event (an invoice is not a service change)', async () => {
    const b = await broker(t.prisma);
    await webhookEndpoint(t.prisma, { brokerId: b.id });
    const invoice = { number: 'INV-1', service_number: 300000001, amount: '10.00', currency: 'EUR', status: 'paid', date: '2025-01-31' };
    assert.deepEqual(await importInvoices(t.prisma, b.slug, [invoice]), { imported: 1 });
    assert.equal(await t.prisma.event.count({ where: { brokerId: b.id } }), 0);
  });
});
