/**
 * Live reports per broker: at most REPORTS_CONCURRENT_PER_BROKER running at once and
 * REPORTS_PER_HOUR_PER_BROKER started per hour (small values here), answered 429 with Retry-After.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { fromDomainError } from '../../../src/http/errors.ts';
import { admitReportRun, RUNNING_MAX_AGE_MS } from '../../../src/reports/runs/limits.ts';
import { createTestApp, type TestApp } from '../../helpers/app.ts';
import { apiKey, broker } from '../../helpers/factories.ts';
import { addInvoices } from '../harness.ts';

const CONCURRENT = 1;
const PER_HOUR = 3;
const WAIT_MS = 7000;
const MINUTE = 60_000;

let t: TestApp;

before(async () => {
  t = await createTestApp({ reportsConcurrentPerBroker: CONCURRENT, reportsPerHourPerBroker: PER_HOUR, reportWaitMs: WAIT_MS });
});
after(async () => {
  await t?.close();
});

/** A broker with a live and a sandbox key and one paid invoice in March 2025. */
async function reportingBroker() {
  const b = await broker(t.prisma);
  const live = (await apiKey(t.prisma, { brokerId: b.id, scopes: ['reports:generate'] })).key;
  const sandbox = (await apiKey(t.prisma, { brokerId: b.id, mode: 'test', scopes: ['reports:generate'] })).key;
  await addInvoices(t, b.id, [{ status: 'paid', date: '2025-03-10' }]);
  return { brokerId: b.id, live, sandbox };
}

/** A run recorded as if by an earlier report, `ago` ms ago. */
async function pastRun(brokerId: string, status: 'queued' | 'completed' | 'failed', ago: number) {
  await t.prisma.reportRun.create({ data: { brokerId, reportType: 'invoices', status, createdAt: new Date(Date.now() - ago) } });
}

const invoices = (key: string) =>
  request(t.app)
    .post('/api/v1/reports/invoices')
    .set('Authorization', `Bearer ${key}`)
    .send({ recipients: ['finance@broker.example'], start_date: '2025-03-01', end_date: '2025-03-31' });
const services = (key: string) =>
  request(t.app).post('/api/v1/reports/services').set('Authorization', `Bearer ${key}`).send({ recipients: ['ops@broker.example'] });

const runsOf = (brokerId: string) => t.prisma.reportRun.count({ where: { brokerId } });

function assertRefused(res: request.Response, reason: string): number {
  assert.equal(res.status, 429, JSON.stringify(res.body));
  assert.equal(res.body.success, false);
  assert.equal(res.body.error.code, 'rate_limit_exceeded');
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ${res.headers['retry-after']}`);
  assert.equal(res.body.error.details.reason, reason);
  assert.equal(res.body.error.details.retry_after, retryAfter);
  return retryAfter;
}

describe('reports running at once per broker', () => {
  test('a report while the broker has one running is 429 on both operations, and creates nothing', async () => {
    const b = await reportingBroker();
    await pastRun(b.brokerId, 'queued', MINUTE);
    for (const send of [invoices, services]) {
      const res = await send(b.live);
      assert.equal(assertRefused(res, 'reports_concurrent_per_broker'), Math.ceil(WAIT_MS / 1000));
      assert.equal(res.body.error.details.limit, CONCURRENT);
      assert.match(res.body.error.message, /1 reports running at once/);
    }
    assert.equal(await runsOf(b.brokerId), 1);
  });

  test('other brokers and the broker\'s sandbox keys are not held back', async () => {
    const busy = await reportingBroker();
    await pastRun(busy.brokerId, 'queued', MINUTE);
    const other = await reportingBroker();
    assert.equal((await invoices(other.live)).status, 200);
    const simulated = await invoices(busy.sandbox);
    assert.equal(simulated.status, 200, JSON.stringify(simulated.body));
    assert.equal(simulated.body.data.simulated, true);
  });

  test('finished runs do not count as running: reports one after another all pass', async () => {
    const b = await reportingBroker();
    await pastRun(b.brokerId, 'failed', MINUTE);
    for (let i = 0; i < 2; i++) {
      const res = await invoices(b.live);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.recipients_sent, 1);
    }
    assert.equal(await runsOf(b.brokerId), 3);
  });

  test('a run left unfinished by a process that died stops counting after its maximum age', async () => {
    const b = await reportingBroker();
    await pastRun(b.brokerId, 'queued', RUNNING_MAX_AGE_MS + MINUTE);
    assert.equal((await invoices(b.live)).status, 200);
  });

  test('concurrent admissions never let more runs through than the bound', async () => {
    const { brokerId } = await reportingBroker();
    const limits = { concurrentPerBroker: 2, perHourPerBroker: 100, runningRetrySeconds: 5 };
    const attempts = await Promise.allSettled(
      Array.from({ length: 6 }, () =>
        admitReportRun(t.prisma, limits, brokerId, async (tx) => {
          const run = await tx.reportRun.create({ data: { brokerId, reportType: 'services' } });
          // Widens the window between the count and the commit.
          await new Promise((r) => setTimeout(r, 50));
          return run;
        }),
      ),
    );
    assert.equal(attempts.filter((a) => a.status === 'fulfilled').length, 2);
    for (const a of attempts) {
      if (a.status === 'rejected') {
        assert.equal(fromDomainError(a.reason)?.code, 'rate_limit_exceeded', String(a.reason));
      }
    }
    assert.equal(await runsOf(brokerId), 2);
  });
});

describe('reports per hour per broker', () => {
  test('the hourly bound counts every run of the last hour; Retry-After is when one leaves it', async () => {
    const b = await reportingBroker();
    await pastRun(b.brokerId, 'completed', 61 * MINUTE); // outside the hour: not counted
    await pastRun(b.brokerId, 'completed', 30 * MINUTE);
    await pastRun(b.brokerId, 'failed', 20 * MINUTE);
    assert.equal((await services(b.live)).status, 200); // the third of the hour
    const res = await invoices(b.live);
    const retryAfter = assertRefused(res, 'reports_per_hour_per_broker');
    assert.equal(res.body.error.details.limit, PER_HOUR);
    assert.equal(res.body.error.details.window_seconds, 3600);
    // The run of 30 minutes ago leaves the hour first.
    assert.ok(retryAfter > 29 * 60 - 30 && retryAfter <= 30 * 60, `Retry-After ${retryAfter}`);
    assert.equal(await runsOf(b.brokerId), 4);
  });
});
