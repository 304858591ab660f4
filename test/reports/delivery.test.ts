/**
 * Report delivery that stays true under faults (the pipeline in src/reports), and the run as
 * GET /api/v1/reports/{report_id} shows it: the records are the truth, Redis only the work queue.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Express } from 'express';
import { Redis } from 'ioredis';
import request from 'supertest';
import { loadConfig } from '../../src/config.ts';
import { createApp } from '../../src/app.ts';
import { reportMessageId } from '../../src/reports/delivery/pipeline.ts';
import { createJobs } from '../../src/background.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiKey, type TestApiKey } from '../helpers/factories.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { addInvoices, createReportTestApp, type ReportTestApp } from './harness.ts';

const RANGE = { start_date: '2025-05-01', end_date: '2025-05-31' };

let h: ReportTestApp;
let smtp: TestSmtp;
let live: TestApiKey;

before(async () => {
  h = await createReportTestApp();
  smtp = await startTestSmtp();
  live = await apiKey(h.t.prisma, { scopes: ['reports:generate'], rateLimit: 10_000 });
  await addInvoices(h.t, live.brokerId, [
    { status: 'paid', date: '2025-05-02' },
    { status: 'pending', date: '2025-05-20' },
  ]);
});
// A test's workers stop with it: their reconcilers (other queue prefixes) would resume the next test's sends.
afterEach(async () => {
  await h?.closeJobs();
});
after(async () => {
  await h?.close();
  await smtp?.stop();
});

const report = (app: Express, key: string, recipients: string[]) =>
  request(app).post('/api/v1/reports/invoices').set('Authorization', `Bearer ${key}`).send({ recipients, ...RANGE });

const getReport = (app: Express, key: string, id: string) =>
  request(app).get(`/api/v1/reports/${id}`).set('Authorization', `Bearer ${key}`);

const completed = (runId: string) =>
  eventually(async () => {
    const run = await h.t.prisma.reportRun.findUniqueOrThrow({ where: { id: runId }, include: { recipients: { orderBy: { id: 'asc' } } } });
    return run.status === 'completed' ? run : undefined;
  }, 20_000, `run ${runId} completed`);

describe('GET /api/v1/reports/{report_id}', () => {
  let app: Express;
  let runId: string;
  before(async () => {
    ({ app } = await h.withJobs({ smtpUrl: smtp.url }));
    const res = await report(app, live.key, ['get.one@broker.example', 'get.two@broker.example']);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    runId = res.body.data.report_id;
  });

  test('the broker own run: type, range, status, times, counts and every recipient', async () => {
    await completed(runId);
    const res = await getReport(app, live.key, runId);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const data = res.body.data;
    assert.equal(data.report_id, runId);
    assert.equal(data.report_type, 'invoices');
    assert.equal(data.status, 'completed');
    assert.deepEqual(data.date_range, { start: '2025-05-01', end: '2025-05-31' });
    assert.equal(data.status_filter, null);
    assert.deepEqual([data.recipients_sent, data.recipients_failed, data.recipients_pending], [2, 0, 0]);
    assert.ok(Date.parse(data.finished_at) >= Date.parse(data.created_at));
    assert.deepEqual(
      data.recipients.map((r: { email: string; status: string; attempts: number; last_error: unknown }) => [r.email, r.status, r.attempts, r.last_error]),
      [
        ['get.one@broker.example', 'sent', 1, null],
        ['get.two@broker.example', 'sent', 1, null],
      ],
    );
    for (const r of data.recipients) assert.ok(r.sent_at);
  });

  test("another broker's run is 404 not_found, as is an id that is not one", async () => {
    const other = await apiKey(h.t.prisma, { scopes: ['admin:full'] });
    for (const [key, id] of [[other.key, runId], [live.key, 'not-a-run'], [live.key, '00000000-0000-4000-8000-000000000000']] as const) {
      const res = await getReport(app, key, id);
      assert.equal(res.status, 404, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'not_found');
    }
  });

  test('scopes: reports:generate or admin:full', async () => {
    const reader = await apiKey(h.t.prisma, { brokerId: live.brokerId, scopes: ['services:read'] });
    const res = await getReport(app, reader.key, runId);
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'insufficient_permissions');
  });

  test('sandbox: its own test-mode runs only; a live run is 404 to a sandbox key of its broker', async () => {
    const sandbox = await apiKey(h.t.prisma, { brokerId: live.brokerId, mode: 'test', scopes: ['reports:generate'] });
    const res = await getReport(app, sandbox.key, runId);
    assert.equal(res.status, 404, JSON.stringify(res.body));
    const made = await report(app, sandbox.key, ['recipient@example.com']);
    const own = await getReport(app, sandbox.key, made.body.data.report_id);
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.deepEqual([own.body.data.mode, own.body.data.simulated, own.body.data.recipients[0].email], ['test', true, 'recipient@example.com']);
    const scenario = await getReport(app, sandbox.key, runId).set('X-Test-Scenario', 'validation_error');
    assert.equal(scenario.status, 400);
    assert.equal(scenario.body.error.code, 'invalid_parameter');
  });
});

describe('every copy of a recipient e-mail carries one Message-ID', () => {
  test('<report.RUN.RECIPIENT@domain of MAIL_FROM>', async () => {
    const { app, config } = await h.withJobs({ smtpUrl: smtp.url, mailFrom: 'Reports <reports@broker-host.example>' });
    const res = await report(app, live.key, ['mid@broker.example']);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const run = await completed(res.body.data.report_id);
    const mail = smtp.to('mid@broker.example');
    assert.equal(mail.length, 1);
    const expected = reportMessageId(config, run.id, run.recipients[0]!.id);
    assert.match(expected, /^<report\.[0-9a-f-]+\.\d+@broker-host\.example>$/);
    assert.equal(mail[0]!.parsed.messageId, expected);
    assert.equal(run.recipients[0]!.messageId, expected);
  });
});

describe('Redis loses everything: the worker finishes the run from the records', () => {
  test('a run queued in a Redis that is then flushed is delivered, exactly once per recipient', async () => {
    // A producer only: the run is recorded and queued, nobody works the queue, and the wait ends.
    const producer = await h.withJobs({ smtpUrl: smtp.url, reportWaitMs: 300 }, 'producer');
    const recipients = ['lost.one@broker.example', 'lost.two@broker.example'];
    const res = await report(producer.app, live.key, recipients);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.data.recipients_sent, res.body.data.recipients_failed, res.body.data.recipients_pending], [0, 0, 2]);
    const redis = new Redis(h.t.redisEndpoint.options);
    await redis.flushall();
    redis.disconnect();
    // A worker that never saw the job: its reconciler finds the run in the database.
    await h.withJobs({ smtpUrl: smtp.url, reportReconcileMs: 200 }, 'worker');
    const run = await completed(res.body.data.report_id);
    assert.deepEqual(run.recipients.map((r) => r.status), ['sent', 'sent']);
    for (const address of recipients) assert.equal(smtp.to(address).length, 1, `one e-mail to ${address}`);
    assert.equal(run.recipientsSent, 2);
  });
});

describe('recording an accepted e-mail fails for a while', () => {
  test('the record is retried, the e-mail is not sent again', async () => {
    // The database refuses the "sent" record four times, as during an outage: the record's retries
    // (0.1 + 0.2 + 0.4 + 0.8 s) outlast a claim's staleness (1 s here), so the claim must be kept alive.
    let refusals = 4;
    const refusing = (model: object) =>
      new Proxy(model, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (prop !== 'update' || typeof value !== 'function') return value;
          return (args: { data: { status?: string } }) => {
            if (args.data.status === 'sent' && refusals > 0) {
              refusals--;
              return Promise.reject(new Error('database is unavailable'));
            }
            return (value as (a: unknown) => Promise<unknown>).call(target, args);
          };
        },
      });
    // The recipient's record is written in a transaction (with its run's counts): the transaction's client refuses it too.
    const flakyClient = <T extends object>(client: T): T =>
      new Proxy(client, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (prop === 'reportRecipient') return refusing(value as object);
          if (prop !== '$transaction' || typeof value !== 'function') return value;
          return (arg: unknown, ...rest: unknown[]) =>
            typeof arg === 'function'
              ? (value as (...a: unknown[]) => Promise<unknown>).call(target, (tx: object) => (arg as (t: object) => unknown)(flakyClient(tx)), ...rest)
              : (value as (...a: unknown[]) => Promise<unknown>).call(target, arg, ...rest);
        },
      });
    const flaky = flakyClient(h.t.prisma);
    const config = { ...h.t.deps.config, smtpUrl: smtp.url, reportReconcileMs: 200 };
    const jobs = createJobs({ redisEndpoint: h.t.redisEndpoint, prisma: flaky, config, logger: h.t.deps.logger, mode: 'both', prefix: 'flakyrecord', closeTimeoutMs: 2000 });
    try {
      await jobs.startWorkers();
      const app = createApp({ ...h.t.deps, config, jobs });
      const res = await report(app, live.key, ['record.later@broker.example']);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const run = await completed(res.body.data.report_id);
      assert.equal(refusals, 0, 'the record failed four times');
      assert.equal(run.recipients[0]!.status, 'sent');
      assert.equal(run.recipients[0]!.attempts, 1);
      assert.equal(smtp.to('record.later@broker.example').length, 1, 'sent once');
    } finally {
      await jobs.close();
    }
  });
});

describe('SMTP timeouts are settings of their own (RFC 5321 minutes by default)', () => {
  test('defaults and overrides', () => {
    const defaults = loadConfig({});
    assert.deepEqual(
      [defaults.smtpConnectionTimeoutMs, defaults.smtpGreetingTimeoutMs, defaults.smtpSocketTimeoutMs, defaults.reportWaitMs],
      [120_000, 300_000, 600_000, 20_000],
    );
    const set = loadConfig({ SMTP_SOCKET_TIMEOUT_MS: '1234', REPORT_WAIT_MS: '500', MAIL_RETRY_DELAY_MS: '75', REPORT_RECONCILE_MS: '900' });
    assert.deepEqual([set.smtpSocketTimeoutMs, set.reportWaitMs, set.mailRetryDelayMs, set.reportReconcileMs], [1234, 500, 75, 900]);
    assert.throws(() => loadConfig({ SMTP_GREETING_TIMEOUT_MS: 'soon' }), /SMTP_GREETING_TIMEOUT_MS/);
  });
});

describe('one workbook, every host: the workbook is stored in the database, not on a disk', () => {
  test('a send job on a worker whose DATA_DIR is empty sends the stored workbook without building it again', async () => {
    const recipients = ['host.one@broker.example', 'host.two@broker.example'];
    // Host A's mail server defers every first attempt; its retry would come only after a minute.
    const deferring = await startTestSmtp({ tempFail: Object.fromEntries(recipients.map((r) => [r, 1])) });
    const hostA = await h.withJobs({ smtpUrl: deferring.url, reportWaitMs: 300, mailRetryDelayMs: 60_000, mailAttempts: 3 });
    const res = await report(hostA.app, live.key, recipients);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const runId: string = res.body.data.report_id;
    const built = await eventually(async () => {
      const run = await h.t.prisma.reportRun.findUniqueOrThrow({ where: { id: runId }, include: { recipients: true } });
      return run.status === 'sending' && run.recipients.every((r) => r.status === 'pending' && r.attempts === 1) ? run : undefined;
    }, 20_000, 'the run built, its sends deferred');
    assert.ok(built.workbookBuild);
    await hostA.jobs.close();
    await deferring.stop();

    // Host B: another data directory (empty), other queues; its reconciler finds the waiting sends.
    const emptyDataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-host-b-'));
    try {
      await h.withJobs({ smtpUrl: smtp.url, dataDir: emptyDataDir, reportReconcileMs: 200 }, 'worker');
      const run = await completed(runId);
      assert.deepEqual(run.recipients.map((r) => r.status), ['sent', 'sent']);
      assert.equal(run.workbookBuild, built.workbookBuild, 'the run kept the workbook built on host A');
      for (const address of recipients) {
        const mail = smtp.to(address);
        assert.equal(mail.length, 1, `one e-mail to ${address}`);
        const attachment = mail[0]!.parsed.attachments[0]!;
        assert.equal(createHash('sha256').update(attachment.content).digest('hex'), built.workbookSha256, 'the stored workbook, byte for byte');
      }
      assert.deepEqual(readdirSync(emptyDataDir), [], 'host B wrote nothing to its data directory');
    } finally {
      rmSync(emptyDataDir, { recursive: true, force: true });
    }
  });
});
