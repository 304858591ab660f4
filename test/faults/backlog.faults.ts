/**
 * Work not being done shows in /metrics (issue 47): a split deployment on a private PostgreSQL
 * cluster and redis-server, the only worker SIGKILLed, then events written that owe webhook
 * deliveries. An API's /metrics counts them in `webhook_deliveries_due`, the oldest's age rises
 * while nobody delivers, and the API stays ready; a worker started again drains them and both
 * gauges fall back to 0.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createCredentials } from '../../src/db/credentials.ts';
import { recordEvents } from '../../src/events/store.ts';
import { broker } from '../helpers/factories.ts';
import { inTurn, startReceiver, webhookEndpoint, type Receiver } from '../helpers/webhooks.ts';
import { waitUntil } from '../ops/helpers.ts';
import { faultsAvailable, startSplitDeployment, withDatabaseAt, type SplitDeployment } from './harness.ts';
import { writingClient } from '../helpers/db.ts';

const skip = faultsAvailable();
const KEY = randomBytes(32).toString('hex');
const credentials = createCredentials(Buffer.from(KEY, 'hex'));
const EVENTS = 12;

let receiver: Receiver;
let split: SplitDeployment;

before(async () => {
  if (skip) return;
  receiver = await startReceiver();
  split = await startSplitDeployment('capi-faults-backlog-', { CREDENTIALS_KEY: KEY, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
});

after(async () => {
  await split?.stop();
  await receiver?.stop();
});

/** The API's backlog gauges, as a scrape reads them. */
async function gauges(): Promise<{ due: number; oldest: number }> {
  const text = await (await fetch(`${split.api.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  return { due: read('webhook_deliveries_due'), oldest: read('webhook_delivery_oldest_due_seconds') };
}

describe('backlog in /metrics with no worker', { skip }, () => {
  test('the only worker SIGKILLed: deliveries due counted and ageing on the API; a new worker drains them', async (ctx) => {
    const path = 'backlog';
    receiver.answer(path, inTurn(200));
    const brokerId = await withDatabaseAt(split.cluster.url, split.dataDir, async (db) => {
      const { id } = await broker(writingClient(db.prisma));
      await webhookEndpoint(writingClient(db.prisma), credentials, { brokerId: id, url: receiver.url(path) });
      return id;
    });
    await waitUntil(async () => (await gauges()).due === 0, 30_000, 'no backlog at first');
    assert.equal((await gauges()).oldest, 0);

    await split.worker.kill('SIGKILL');
    await withDatabaseAt(split.cluster.url, split.dataDir, (db) =>
      recordEvents(db.prisma, Array.from({ length: EVENTS }, (_, i) => ({ brokerId, type: 'service.updated' as const, mode: 'live' as const, object: { object: 'service', n: i } }))));

    // Read anew at most every 5 s (the cache): the count comes, then the age grows while nobody delivers.
    await waitUntil(async () => (await gauges()).due === EVENTS, 30_000, `webhook_deliveries_due to reach ${EVENTS}`);
    const first = await gauges();
    await waitUntil(async () => (await gauges()).oldest > first.oldest + 5, 60_000, 'the oldest-due age to rise');
    const later = await gauges();
    assert.equal(later.due, EVENTS);
    ctx.diagnostic(`no worker: ${later.due} due, oldest ${later.oldest.toFixed(1)} s (first seen ${first.oldest.toFixed(1)} s)`);
    assert.equal((await fetch(`${split.api.url}/readyz`)).status, 200, 'the API stays ready without a worker');
    assert.equal(receiver.to(path).length, 0, 'nothing delivered meanwhile');

    await split.start('worker');
    await waitUntil(async () => {
      const g = await gauges();
      return g.due === 0 && g.oldest === 0;
    }, 90_000, 'the gauges to fall back to 0');
    assert.equal(new Set(receiver.to(path).map((c) => String(c.headers['webhook-id']))).size, EVENTS, 'every event delivered');
  });
});
