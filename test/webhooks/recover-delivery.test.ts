/**
 * Recovered deliveries go through the dispatcher like any other (src/webhooks/dispatcher.ts): sent
 * again to a receiver that is back, signed, with the event's id as `webhook-id`, the failed
 * deliveries keeping their attempts; and a recovered backlog of one endpoint holds no more than its
 * share of the delivery slots, so another broker's new event still arrives.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import type { Credentials } from '../../src/db/credentials.ts';
import { recordEvents } from '../../src/events/store.ts';
import { PER_ENDPOINT_IN_FLIGHT } from '../../src/webhooks/dispatcher.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';
import { eventually } from '../helpers/eventually.ts';
import { startReceiver, verified, webhookEndpoint, type Receiver } from '../helpers/webhooks.ts';

let t: TestApp;
let receiver: Receiver;
let credentials: Credentials;

before(async () => {
  // One attempt each (no retries), so a delivery ends failed as soon as the receiver refuses it.
  t = await createTestApp({ webhookRetrySchedule: [0], webhookTimeoutMs: 2500, webhookAllowPrivateUrls: true });
  receiver = await startReceiver();
  credentials = await t.deps.credentials();
});
after(async () => {
  await t?.close();
  await receiver?.stop();
});

async function brokerWithEndpoint(path: string) {
  const key = await apiKey(t.prisma, { scopes: ['admin:full'], rateLimit: 100_000 });
  const endpoint = await webhookEndpoint(t.prisma, credentials, { brokerId: key.brokerId, url: receiver.url(path) });
  return { ...key, endpoint };
}

const happen = (brokerId: string, n: number) =>
  recordEvents(t.prisma, Array.from({ length: n }, (_, i) => ({ brokerId, mode: 'live' as const, type: 'service.updated' as const, object: { service_number: 100_000_000 + i } })));

/** Waits until every delivery to the endpoint has ended, and returns how many failed. */
const allFailed = (endpointId: string, n: number) =>
  eventually(async () => ((await t.prisma.webhookDelivery.count({ where: { endpointId, status: 'failed' } })) === n ? n : undefined), 20_000, `${n} failed deliveries`);

const recover = (key: string, endpointId: string) =>
  request(t.app).post(`/api/v1/webhook-endpoints/${endpointId}/recover`).set('Authorization', `Bearer ${key}`).send({ since: new Date(Date.now() - 3_600_000).toISOString() });

test('a receiver that was down gets every failed event again once recovered, signed, and the failed attempts stay recorded', async () => {
  const b = await brokerWithEndpoint('was-down');
  receiver.answer('was-down', () => 503);
  const ids = await happen(b.brokerId, 3);
  await allFailed(b.endpoint.id, 3);
  receiver.answer('was-down', () => 200);
  const res = await recover(b.key, b.endpoint.id);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.data.queued, 3);
  const delivered = await eventually(
    async () => ((await t.prisma.webhookDelivery.count({ where: { endpointId: b.endpoint.id, status: 'delivered' } })) === 3 ? true : undefined),
    20_000,
    'the recovered deliveries to be delivered',
  );
  assert.ok(delivered);
  const copies = receiver.to('was-down');
  assert.equal(copies.length, 6);
  assert.deepEqual(copies.slice(3).map((c) => c.headers['webhook-id']).sort(), [...ids].sort());
  for (const copy of copies.slice(3)) assert.ok(verified(b.endpoint.secret, copy));
  const failed = await t.prisma.webhookDelivery.findMany({ where: { endpointId: b.endpoint.id, status: 'failed' }, include: { attemptsMade: true } });
  assert.deepEqual(failed.map((d) => d.attemptsMade.map((a) => a.statusCode)), [[503], [503], [503]]);
});

test("a large recovered backlog to a hanging endpoint holds its endpoint's share of slots: another broker's event still arrives", async () => {
  const slow = await brokerWithEndpoint('backlog');
  receiver.answer('backlog', () => 500);
  await happen(slow.brokerId, 30);
  await allFailed(slow.endpoint.id, 30);
  receiver.answer('backlog', () => 'hang');
  assert.equal((await recover(slow.key, slow.endpoint.id)).body.data.queued, 30);
  const other = await brokerWithEndpoint('bystander');
  await happen(other.brokerId, 1);
  await eventually(() => (receiver.to('bystander').length > 0 ? true : undefined), 20_000, "the other broker's event");
  assert.ok(receiver.mostOpen('backlog') <= PER_ENDPOINT_IN_FLIGHT, `${receiver.mostOpen('backlog')} requests open at once`);
  assert.ok(receiver.mostOpen('backlog') > 0);
});
