/**
 * The sandbox's reports (issue 39 item 3): each is a test-mode run whose answer adds up, that
 * `getReport` and `listReports` answer alike with the sandbox key only, whose reserved test
 * recipients end failed or stay pending, and whose `report.completed` mirrors the GET. Nothing is
 * built, queued or mailed.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { claimRecipient, claimRunForBuild, runsWaitingForBuild, runsWithWorkbooksToRelease, unfinishedRuns, waitingRecipients } from '../../src/reports/runs/store.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, type TestApiKey } from '../helpers/factories.ts';

let t: TestApp;
let sandbox: TestApiKey;
let live: TestApiKey;
let otherSandbox: TestApiKey;

before(async () => {
  t = await createTestApp();
  sandbox = await apiKey(t.prisma, { mode: 'test', scopes: ['admin:full'], rateLimit: 10_000 });
  live = await apiKey(t.prisma, { brokerId: sandbox.brokerId, scopes: ['admin:full'], rateLimit: 10_000 });
  otherSandbox = await apiKey(t.prisma, { mode: 'test', scopes: ['admin:full'], rateLimit: 10_000 });
});
after(async () => t?.close());

const post = (key: TestApiKey, url: string, body: object) => request(t.app).post(url).set('Authorization', `Bearer ${key.key}`).send(body);
const get = (key: TestApiKey, url: string) => request(t.app).get(url).set('Authorization', `Bearer ${key.key}`);

const REPORTS = {
  invoices: { url: '/api/v1/reports/invoices', body: { start_date: '2025-01-01', end_date: '2025-01-31' } },
  services: { url: '/api/v1/reports/services', body: { status: 'active' } },
} as const;

type Run = { report_id: string; status: string; recipients_sent: number; recipients_failed: number; recipients_pending: number; recipients: Array<{ email: string; status: string; attempts: number; last_error: string | null }> };

/** The run's counts as its recipients' statuses give them. */
function countsOf(run: Run): [number, number, number] {
  const n = (s: string[]) => run.recipients.filter((r) => s.includes(r.status)).length;
  return [n(['sent']), n(['failed']), n(['pending', 'sending'])];
}

async function reportEvents(key: TestApiKey, reportId: string): Promise<Array<{ type: string; data: { object: unknown } }>> {
  const res = await get(key, '/api/v1/events?limit=100');
  assert.equal(res.status, 200, res.text);
  return (res.body.data as Array<{ type: string; data: { object: { report_id?: string } } }>).filter((e) => e.type.startsWith('report.') && e.data.object.report_id === reportId);
}

for (const [type, { url, body }] of Object.entries(REPORTS)) {
  describe(`sandbox ${type} report`, () => {
    test('the answer adds up, getReport answers that same run, and report.completed mirrors it', async () => {
      const res = await post(sandbox, url, { ...body, recipients: ['a@broker.example', 'B@broker.example'] });
      assert.equal(res.status, 200, res.text);
      const answer = res.body.data;
      assert.deepEqual([answer.recipients_sent, answer.recipients_failed, answer.recipients_pending], [2, 0, 0]);
      assert.equal(answer.recipient_count, answer.recipients_sent + answer.recipients_failed + answer.recipients_pending);
      assert.deepEqual([answer.mode, answer.simulated], ['test', true]);

      const run = await get(sandbox, `/api/v1/reports/${answer.report_id}`);
      assert.equal(run.status, 200, run.text);
      const data = run.body.data as Run & Record<string, unknown>;
      assert.equal(data.report_id, answer.report_id);
      assert.equal(data.report_type, type);
      assert.equal(data.status, 'completed');
      assert.deepEqual(data.recipients.map((r) => [r.email, r.status, r.attempts]), [['a@broker.example', 'sent', 1], ['b@broker.example', 'sent', 1]]);
      assert.deepEqual(countsOf(data), [data.recipients_sent, data.recipients_failed, data.recipients_pending]);
      assert.deepEqual([data.recipients_sent, data.recipients_failed, data.recipients_pending], [answer.recipients_sent, answer.recipients_failed, answer.recipients_pending]);
      if (type === 'invoices') assert.deepEqual(data.date_range, { start: '2025-01-01', end: '2025-01-31' });
      else assert.deepEqual([data.date_range, data.status_filter], [null, 'active']);
      assert.deepEqual([data.mode, data.simulated], ['test', true]);

      const events = await reportEvents(sandbox, answer.report_id);
      assert.deepEqual(events.map((e) => e.type), ['report.completed']);
      assert.deepEqual(events[0]!.data.object, data, 'the feed\'s object is the GET');
      // The mirror of previous_attributes: the last recipient was under way.
      const previous = (events[0]!.data as { previous_attributes?: Record<string, unknown> }).previous_attributes;
      assert.deepEqual([previous?.status, previous?.recipients_sent, previous?.recipients_pending], ['sending', 1, 1]);
    });

    test('a failed and a pending recipient: counted so, recorded so, the run still sending and no event yet', async () => {
      const recipients = ['ok@broker.example', 'Bounce@Failed.Test', 'slow@pending.test'];
      const res = await post(sandbox, url, { ...body, recipients });
      assert.equal(res.status, 200, res.text);
      const answer = res.body.data;
      assert.deepEqual([answer.recipients_sent, answer.recipients_failed, answer.recipients_pending, answer.recipient_count], [1, 1, 1, 3]);
      const data = (await get(sandbox, `/api/v1/reports/${answer.report_id}`)).body.data as Run;
      assert.equal(data.status, 'sending');
      assert.deepEqual(data.recipients.map((r) => [r.email, r.status]), [['ok@broker.example', 'sent'], ['bounce@failed.test', 'failed'], ['slow@pending.test', 'pending']]);
      assert.match(data.recipients[1]!.last_error!, /^550 /);
      assert.match(data.recipients[2]!.last_error!, /^451 /);
      assert.deepEqual(countsOf(data), [1, 1, 1]);
      assert.deepEqual(await reportEvents(sandbox, answer.report_id), [], 'a run not ended records no report.* event, as live');
    });

    test('only failed recipients: completed, and report.completed mirrors the GET', async () => {
      const res = await post(sandbox, url, { ...body, recipients: ['x@failed.test'] });
      const data = (await get(sandbox, `/api/v1/reports/${res.body.data.report_id}`)).body.data as Run;
      assert.deepEqual([data.status, data.recipients_sent, data.recipients_failed, data.recipients_pending], ['completed', 0, 1, 0]);
      const events = await reportEvents(sandbox, data.report_id);
      assert.deepEqual(events.map((e) => [e.type, e.data.object]), [['report.completed', data]]);
    });
  });
}

describe('sandbox runs and the pipeline', () => {
  test('no workbook, no queued job, no e-mail in the outbox', async () => {
    const res = await post(sandbox, REPORTS.invoices.url, { ...REPORTS.invoices.body, recipients: ['a@broker.example', 'p@pending.test'] });
    const run = await t.prisma.reportRun.findUniqueOrThrow({ where: { id: res.body.data.report_id }, include: { chunks: true, links: true } });
    assert.deepEqual([run.mode, run.workbookBuild, run.chunks.length, run.links.length], ['test', null, 0, 0]);
    const outbox = path.join(t.dataDir, 'outbox');
    assert.equal(existsSync(outbox) ? readdirSync(outbox).length : 0, 0);
  });

  test('the pipeline never takes a sandbox run up: no build claim, no send claim, nothing for the reconciler', async () => {
    const res = await post(sandbox, REPORTS.services.url, { recipients: ['p@pending.test'] });
    const runId: string = res.body.data.report_id;
    const [recipient] = await t.prisma.reportRecipient.findMany({ where: { reportRunId: runId } });
    const later = new Date(Date.now() + 3600_000);
    assert.equal(await claimRunForBuild(t.prisma, runId), false);
    assert.equal(await claimRecipient(t.prisma, recipient!.id), false);
    assert.ok(!(await waitingRecipients(t.prisma, later)).some((r) => r.reportRunId === runId));
    assert.ok(!(await runsWaitingForBuild(t.prisma, later)).some((r) => r.id === runId));
    assert.ok(!(await unfinishedRuns(t.prisma, later)).some((r) => r.id === runId));
    assert.ok(!(await runsWithWorkbooksToRelease(t.prisma, later)).some((r) => r.id === runId));
    const after = (await get(sandbox, `/api/v1/reports/${runId}`)).body.data as Run;
    assert.deepEqual([after.status, after.recipients[0]!.status, after.recipients[0]!.attempts], ['sending', 'pending', 1]);
  });

  test('a sandbox run does not count against the broker\'s live report bounds', async () => {
    const broker = await apiKey(t.prisma, { mode: 'test', scopes: ['reports:generate'], rateLimit: 10_000 });
    for (let i = 0; i < 3; i++) await post(broker, REPORTS.services.url, { recipients: ['p@pending.test'] });
    const running = await t.prisma.reportRun.count({ where: { brokerId: broker.brokerId, mode: 'live' } });
    assert.equal(running, 0);
  });
});

describe('isolation by mode and broker', () => {
  let testRun: string;
  let liveRun: string;
  before(async () => {
    testRun = (await post(sandbox, REPORTS.services.url, { recipients: ['a@broker.example'] })).body.data.report_id;
    liveRun = (await t.prisma.reportRun.create({ data: { brokerId: live.brokerId, reportType: 'invoices', status: 'completed' } })).id;
  });

  test('the sandbox key reads its test run; the live key of the same broker gets 404', async () => {
    assert.equal((await get(sandbox, `/api/v1/reports/${testRun}`)).status, 200);
    const res = await get(live, `/api/v1/reports/${testRun}`);
    assert.equal(res.status, 404, res.text);
    assert.equal(res.body.error.code, 'not_found');
  });

  test('the live key reads its live run; the sandbox key of the same broker gets 404', async () => {
    assert.equal((await get(live, `/api/v1/reports/${liveRun}`)).status, 200);
    assert.equal((await get(sandbox, `/api/v1/reports/${liveRun}`)).status, 404);
  });

  test('another broker\'s sandbox key gets 404; an unknown id 404', async () => {
    assert.equal((await get(otherSandbox, `/api/v1/reports/${testRun}`)).status, 404);
    assert.equal((await get(sandbox, '/api/v1/reports/5b0c8a52-31f4-4d7e-9d3c-2f7f1b6f0a11')).status, 404);
  });

  test('a sandbox run\'s events are in the test feed only', async () => {
    assert.equal((await reportEvents(sandbox, testRun)).length, 1);
    assert.equal((await reportEvents(live, testRun)).length, 0);
  });
});

describe('idempotent retries', () => {
  test('a retry under one Idempotency-Key answers the same run and records no second one', async () => {
    const send = () => post(sandbox, REPORTS.services.url, { recipients: ['a@broker.example'] }).set('Idempotency-Key', 'sandbox-report-retry');
    const first = await send();
    const again = await send();
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.data.report_id, first.body.data.report_id);
    assert.equal((await reportEvents(sandbox, first.body.data.report_id)).length, 1);
  });
});
