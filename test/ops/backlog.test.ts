// The backlog gauges of /metrics (src/ops/backlog.ts), each against a database holding what it
// should count and what it must not: read from the record, cached for a few seconds, and NaN
// (never stale) when the database does not answer.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import express from 'express';
import type { Redis } from 'ioredis';
import pino from 'pino';
import request from 'supertest';
import { backlogGauges, backlogRefresher } from '../../src/ops/backlog.ts';
import { registerOps } from '../../src/ops/health.ts';
import { refreshQueueDepth, registry } from '../../src/ops/metrics.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { broker } from '../helpers/factories.ts';
import { event, webhookEndpoint } from '../helpers/webhook-factories.ts';

let db: TestDatabase;
let brokerId: string;
let endpointId: string;
before(async () => {
  db = await createTestDatabase();
  brokerId = (await broker(db.prisma)).id;
  endpointId = await webhookEndpoint(db.prisma, { brokerId });
});
after(() => db?.drop());
beforeEach(async () => {
  await db.prisma.webhookDelivery.deleteMany({});
  await db.prisma.reportRun.deleteMany({});
});

const value = async (g: { get(): Promise<{ values: Array<{ value: number }> }> }) => (await g.get()).values[0]?.value;
const ago = (seconds: number) => new Date(Date.now() - seconds * 1000);
const fresh = () => backlogRefresher(db.prisma, { cacheMs: 0 });

/** `count` deliveries owed to the endpoint, each set by `set`. */
async function deliveries(count: number, set: { status?: 'pending' | 'delivered' | 'failed'; nextAttemptAt: Date | null }): Promise<void> {
  for (let i = 0; i < count; i++) {
    const eventId = await event(db.prisma, { brokerId });
    await db.prisma.webhookDelivery.updateMany({ where: { eventId, endpointId }, data: { status: set.status ?? 'pending', nextAttemptAt: set.nextAttemptAt } });
  }
}

async function run(status: 'queued' | 'building' | 'sending' | 'completed' | 'failed', createdAt: Date, recipients: Array<'pending' | 'sending' | 'sent' | 'failed'> = [], mode: 'live' | 'test' = 'live') {
  await db.prisma.reportRun.create({
    data: {
      brokerId, mode, reportType: 'invoices', startDate: new Date('2025-01-01'), endDate: new Date('2025-01-31'), status, createdAt,
      recipients: { create: recipients.map((s, i) => ({ email: `r${i}@broker.example`, status: s })) },
    },
  });
}

describe('webhook deliveries', () => {
  test('webhook_deliveries_due counts pending deliveries due now; the oldest-due age is the longest wait', async () => {
    await deliveries(2, { nextAttemptAt: ago(120) });
    await deliveries(1, { nextAttemptAt: ago(30) });
    await deliveries(2, { nextAttemptAt: new Date(Date.now() + 600_000) }); // a retry not yet due
    await deliveries(1, { status: 'delivered', nextAttemptAt: null });
    await deliveries(1, { status: 'failed', nextAttemptAt: null });
    assert.equal(await fresh()(), true);
    assert.equal(await value(backlogGauges.deliveriesDue), 3);
    const age = (await value(backlogGauges.deliveryOldestDue))!;
    assert.ok(age >= 120 && age < 180, `oldest due ${age} s`);
  });

  test('none due: both gauges read 0', async () => {
    await deliveries(1, { status: 'delivered', nextAttemptAt: null });
    assert.equal(await fresh()(), true);
    assert.equal(await value(backlogGauges.deliveriesDue), 0);
    assert.equal(await value(backlogGauges.deliveryOldestDue), 0);
  });
});

describe('report runs and e-mails', () => {
  test('report_runs_active counts queued, building and sending runs; the oldest-active age is the oldest of them', async () => {
    await run('queued', ago(400));
    await run('building', ago(60));
    await run('sending', ago(10));
    await run('completed', ago(9000));
    await run('failed', ago(9000));
    assert.equal(await fresh()(), true);
    assert.equal(await value(backlogGauges.runsActive), 3);
    const age = (await value(backlogGauges.runOldestActive))!;
    assert.ok(age >= 400 && age < 460, `oldest active ${age} s`);
  });

  test('emails_due counts pending and sending recipients of live runs that are sending, and nothing else', async () => {
    await run('sending', ago(5), ['pending', 'sending', 'sent', 'failed']);
    await run('sending', ago(5), ['pending']);
    await run('building', ago(5), ['pending', 'pending']); // no workbook yet: not due
    await run('completed', ago(5), ['sent']);
    await run('sending', ago(5), ['pending'], 'test'); // a sandbox recipient never sent
    assert.equal(await fresh()(), true);
    assert.equal(await value(backlogGauges.emailsDue), 3);
  });

  test('no run: every gauge reads 0', async () => {
    assert.equal(await fresh()(), true);
    for (const g of [backlogGauges.runsActive, backlogGauges.runOldestActive, backlogGauges.emailsDue]) assert.equal(await value(g), 0);
  });
});

describe('the cost of a scrape', () => {
  test('an answer is reused for the cache time, and concurrent scrapes share one read', async () => {
    let clock = 1_000_000;
    let reads = 0;
    const counted = new Proxy(db.prisma, {
      get(target, prop, receiver) {
        if (prop === '$transaction') reads += 1;
        return Reflect.get(target, prop, receiver);
      },
    });
    const refresh = backlogRefresher(counted, { cacheMs: 5000, now: () => clock });
    await deliveries(1, { nextAttemptAt: ago(1) });
    assert.deepEqual(await Promise.all([refresh(), refresh(), refresh()]), [true, true, true]);
    assert.equal(reads, 1);
    assert.equal(await value(backlogGauges.deliveriesDue), 1);
    await deliveries(1, { nextAttemptAt: ago(1) });
    clock += 4999;
    assert.equal(await refresh(), true);
    assert.equal(reads, 1, 'served from the cache');
    assert.equal(await value(backlogGauges.deliveriesDue), 1);
    clock += 1;
    assert.equal(await refresh(), true);
    assert.equal(reads, 2);
    assert.equal(await value(backlogGauges.deliveriesDue), 2);
  });

  test('a database that does not answer: the gauges read NaN, never a stale number or a 0', async () => {
    await deliveries(1, { nextAttemptAt: ago(1) });
    assert.equal(await fresh()(), true);
    assert.match(await registry.metrics(), /^webhook_deliveries_due 1$/m);
    const broken = { $transaction: () => Promise.reject(new Error('connection refused')), $executeRawUnsafe: () => undefined, $queryRaw: () => undefined } as unknown as typeof db.prisma;
    assert.equal(await backlogRefresher(broken, { cacheMs: 0 })(), false);
    const text = await registry.metrics();
    for (const name of ['webhook_deliveries_due', 'webhook_delivery_oldest_due_seconds', 'report_runs_active', 'report_run_oldest_active_seconds', 'emails_due']) {
      assert.match(text, new RegExp(`^${name} NaN$`, "im")); // prom-client writes Nan; Prometheus reads any case
    }
  });
});

describe('on /metrics, and not on /readyz', () => {
  test('a process\'s /metrics carries the gauges; its /readyz stays 200 whatever the backlog', async () => {
    await deliveries(2, { nextAttemptAt: ago(3600) }); // an hour of deliveries no worker took
    await run('queued', ago(3600));
    const app = express();
    const redis = { ping: async () => 'PONG' } as unknown as Redis;
    registerOps(app, { prisma: db.prisma, redis, logger: pino({ level: 'silent' }) });
    const metrics = await request(app).get('/metrics');
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /^webhook_deliveries_due 2$/m);
    assert.match(metrics.text, /^report_runs_active 1$/m);
    assert.match(metrics.text, /^webhook_delivery_oldest_due_seconds 36\d\d(\.\d+)?$/m);
    assert.match(metrics.text, /^# TYPE report_builds_failed_total counter$/m);
    assert.match(metrics.text, /^# TYPE process_uncaught_exceptions_total counter$/m);
    const ready = await request(app).get('/readyz');
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.deepEqual(ready.body.data.checks, { database: 'ok', redis: 'ok' });
  });
});

test('bullmq_queue_jobs reports the queue\'s backlog, not the completed and failed jobs BullMQ keeps up to a cap', async () => {
  const queue = { name: 'webhooks', getJobCounts: async () => ({ waiting: 3, active: 1, delayed: 2, completed: 1000, failed: 5000 }) };
  assert.equal(await refreshQueueDepth([queue]), true);
  const text = await registry.metrics();
  assert.match(text, /^bullmq_queue_jobs\{queue="webhooks",state="waiting"\} 3$/m);
  assert.match(text, /^bullmq_queue_jobs\{queue="webhooks",state="delayed"\} 2$/m);
  assert.doesNotMatch(text, /state="(completed|failed)"/);
});
