/**
 * A broker's console with a known history, for the console's browser tests and its screenshots
 * (scripts/console-screenshots.ts): hours of request logs with an error spike three hours ago, an
 * endpoint whose deliveries failed in that hour (some recovered since), another whose description is
 * the contract's longest unbroken one, a refused call with a request id of its own, a service, a
 * pending request and a report run.
 */
import assert from 'node:assert/strict';
import request from 'supertest';
import { recordEvents } from '../../src/events/store.ts';
import { apiKey, broker, requestLog, type TestApiKey } from '../helpers/factories.ts';
import { sampleObject } from '../helpers/webhook-factories.ts';
import type { Receiver } from '../helpers/webhooks.ts';
import type { ConsoleServer } from './harness.ts';

const HOUR = 3_600_000;
/** The hour of the spikes: three whole UTC hours before the current one. */
const spikeHour = (now = Date.now()) => (Math.floor(now / HOUR) - 3) * HOUR;
/** The refused call's own request id (X-Request-Id), which a shared link names. */
export const REFUSED_ID = 'order-sync-2026-upgrade-0001';
/** 200 characters without a space: the longest description the contract takes. */
export const LONG_DESCRIPTION = `Order-system-receiver-${'x'.repeat(178)}`;

export interface Seeded {
  live: TestApiKey;
  sandbox: TestApiKey;
  /** The endpoint with the failure spike, and the one with the long description. */
  endpoint: string;
  longEndpoint: string;
  refused: { message: string; details: Record<string, unknown> };
  /** The spike hour's start (ms), its failed and succeeded deliveries and how many of the failed a later delivery recovered. */
  spike: { at: number; failed: number; succeeded: number; recovered: number };
}

export async function seedConsole(server: ConsoleServer, receiver: Receiver): Promise<Seeded> {
  const { prisma } = server.t;
  const b = await broker(prisma, { approval: 'manual', name: 'Northwind Hosting' });
  const live = await apiKey(prisma, { brokerId: b.id, mode: 'live', rateLimit: 100_000, name: 'Order system' });
  const sandbox = await apiKey(prisma, { brokerId: b.id, mode: 'test', rateLimit: 100_000, name: 'Staging' });
  const as = (key: TestApiKey) => ({
    post: (url: string, body: object, headers: Record<string, string> = {}) =>
      request(server.t.app).post(url).set('Authorization', `Bearer ${key.key}`).set(headers).send(body),
  });

  // Hours of requests, quiet but for the spike hour, where most answers were 5xx.
  const h = spikeHour();
  for (let hour = -3; hour <= 2; hour++) {
    for (let i = 0; i < 6; i++) await requestLog(prisma, live, { at: new Date(h + hour * HOUR + i * 300_000), status: 200, durationMs: 8 + i });
  }
  for (let i = 0; i < 9; i++) {
    await requestLog(prisma, live, {
      at: new Date(h + 1_800_000 + i * 60_000), method: 'POST', path: '/api/v1/service-create', operation: 'createService', status: 503,
      errorCode: 'service_unavailable', errorMessage: 'The database is not answering; retry after the time in Retry-After', durationMs: 2000,
    });
  }

  // The events of the seeded deliveries, recorded while the broker has no endpoint (so they owe none).
  const events = await recordEvents(prisma, Array.from({ length: 14 }, () => ({ brokerId: b.id, type: 'service.updated' as const, mode: 'live' as const, object: sampleObject('service.updated') })));

  const hook = await as(live).post('/api/v1/webhook-endpoints', { url: receiver.url('orders'), description: 'Order system' });
  assert.equal(hook.status, 200, JSON.stringify(hook.body));
  const long = await as(live).post('/api/v1/webhook-endpoints', { url: receiver.url('long'), description: LONG_DESCRIPTION, events: ['report.completed'] });
  assert.equal(long.status, 200, JSON.stringify(long.body));
  const endpoint = hook.body.data.id as string;

  // Deliveries written as the dispatcher leaves them: 4 delivered two hours before the spike, 9 failed
  // and 1 delivered in the spike hour, and 3 of the failed events delivered again two hours later.
  const delivery = async (eventId: string, at: number, ok: boolean, attempts: number, durationMs: number) => {
    const row = await prisma.webhookDelivery.create({
      data: { eventId, endpointId: endpoint, status: ok ? 'delivered' : 'failed', attempts, nextAttemptAt: null, createdAt: new Date(at), completedAt: new Date(at + 60_000) },
    });
    await prisma.webhookAttempt.createMany({
      data: Array.from({ length: attempts }, (_, i) => ({ deliveryId: row.id, number: i + 1, attemptedAt: new Date(at + i * 1000), statusCode: ok && i === attempts - 1 ? 200 : 503, durationMs })),
    });
  };
  for (let i = 0; i < 4; i++) await delivery(events[i]!, h - 2 * HOUR + i * 60_000, true, 1, 40);
  for (let i = 4; i < 13; i++) await delivery(events[i]!, h + 600_000 + i * 60_000, false, 3, 1500);
  await delivery(events[13]!, h + 1_200_000, true, 1, 60);
  for (let i = 4; i < 7; i++) await delivery(events[i]!, h + 2 * HOUR + i * 60_000, true, 1, 80);

  // Calls through the API: a service, a pending request, a refused upgrade (with details) and a report run.
  const order = await as(live).post('/api/v1/service-create', { plan: 'Standard VPS', hostname: 'shop.example.com', customer_email: 'jane@example.com' });
  assert.equal(order.status, 202, JSON.stringify(order.body));
  const approved = await as(live).post(`/api/v1/requests/${order.body.data.request_id}/manage`, { action: 'approve' });
  assert.equal(approved.status, 200, JSON.stringify(approved.body));
  const pending = await as(live).post('/api/v1/service-create', { plan: 'Standard VPS', hostname: 'blog.example.com', customer_email: 'sam@example.com' });
  assert.equal(pending.status, 202, JSON.stringify(pending.body));
  const refused = await as(live).post(`/api/v1/services/${approved.body.data.service_number}/upgrade`, { plan: 'No Such Plan' }, { 'X-Request-Id': REFUSED_ID });
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  const report = await as(sandbox).post('/api/v1/reports/services', { recipients: ['ops@example.com', 'bounce@failed.test'] });
  assert.equal(report.status, 200, JSON.stringify(report.body));
  await server.t.flushApiLog();
  return {
    live, sandbox, endpoint, longEndpoint: long.body.data.id as string,
    refused: { message: refused.body.error.message, details: refused.body.error.details },
    spike: { at: h, failed: 9, succeeded: 1, recovered: 3 },
  };
}
