/**
 * The reserved test recipients with live keys (issue 39 item 3): on a server whose mail goes to the
 * local outbox, `…@failed.test` ends failed at once and `…@pending.test` stays pending through its
 * retries (then fails on the last); with a real SMTP server they are sent as any address is.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { outboxTestFailure, testRecipientOutcome } from '../../src/reports/delivery/test-recipients.ts';
import { apiKey, type TestApiKey } from '../helpers/factories.ts';
import { startTestSmtp } from '../helpers/smtp.ts';
import { eventually } from '../helpers/eventually.ts';
import { createReportTestApp, type ReportTestApp } from './harness.ts';

let h: ReportTestApp;
let live: TestApiKey;

before(async () => {
  h = await createReportTestApp();
  live = await apiKey(h.t.prisma, { scopes: ['admin:full'], rateLimit: 10_000 });
});
after(async () => h?.close());

const report = (app: Express, recipients: string[]) =>
  request(app).post('/api/v1/reports/services').set('Authorization', `Bearer ${live.key}`).send({ recipients });
const getReport = (app: Express, id: string) => request(app).get(`/api/v1/reports/${id}`).set('Authorization', `Bearer ${live.key}`);

type Run = { status: string; recipients_sent: number; recipients_failed: number; recipients_pending: number; recipients: Array<{ email: string; status: string; attempts: number; last_error: string | null }> };


const outboxFiles = (dir: string) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.eml')) : []);

describe('which addresses are reserved', () => {
  test('only the domains failed.test and pending.test, whatever the case; never with SMTP_URL', () => {
    assert.equal(testRecipientOutcome('a@failed.test'), 'failed');
    assert.equal(testRecipientOutcome('a@PENDING.test'), 'pending');
    for (const other of ['failed.test@broker.example', 'a@sub.failed.test', 'a@failed.test.example', 'a@example.test']) assert.equal(testRecipientOutcome(other), undefined, other);
    assert.equal(outboxTestFailure({ smtpUrl: 'smtp://127.0.0.1:2525' }, 'a@failed.test', false), undefined);
    assert.deepEqual(outboxTestFailure({ smtpUrl: undefined }, 'a@pending.test', false)?.final, false);
    assert.deepEqual(outboxTestFailure({ smtpUrl: undefined }, 'a@pending.test', true)?.final, true);
  });
});

describe('live keys, mail to the local outbox', () => {
  test('a failed and a pending recipient: the answer counts them so, the run keeps the pending one and later ends it failed', async () => {
    // A retry only after a minute: the answer (and getReport for a while) sees the pending recipient.
    const { app, config } = await h.withJobs({ reportWaitMs: 2000, mailRetryDelayMs: 60_000, mailAttempts: 2 });
    const outbox = path.join(config.dataDir, 'outbox');
    const before = outboxFiles(outbox).length;
    const res = await report(app, ['ok@broker.example', 'no@failed.test', 'later@pending.test']);
    assert.equal(res.status, 200, res.text);
    const answer = res.body.data;
    // What was known when the wait ended; the pending.test recipient cannot be final before its retry.
    assert.equal(answer.recipients_sent + answer.recipients_failed + answer.recipients_pending, 3);
    assert.ok(answer.recipients_pending >= 1 && answer.recipients_sent <= 1 && answer.recipients_failed <= 1, res.text);
    const run = await eventually(async () => {
      const r = (await getReport(app, answer.report_id)).body.data as Run;
      return r.recipients_sent + r.recipients_failed === 2 ? r : undefined;
    }, 20_000, 'the ordinary and the failed recipient to be counted');
    assert.deepEqual([run.status, run.recipients_sent, run.recipients_failed, run.recipients_pending], ['sending', 1, 1, 1]);
    assert.deepEqual(run.recipients.map((r) => [r.email, r.status, r.attempts]), [['ok@broker.example', 'sent', 1], ['no@failed.test', 'failed', 1], ['later@pending.test', 'pending', 1]]);
    assert.match(run.recipients[1]!.last_error!, /^550 /);
    assert.match(run.recipients[2]!.last_error!, /^451 /);
    const written = outboxFiles(outbox).slice(before);
    assert.equal(written.length, 1, 'only the ordinary address was written to the outbox');
    assert.match(readFileSync(path.join(outbox, written[0]!), 'utf8'), /To: ok@broker\.example/);
    await h.closeJobs();

    // Its last attempt: a worker that retries at once; the deferral of the last attempt is final.
    const { app: next } = await h.withJobs({ mailRetryDelayMs: 10, mailAttempts: 2, reportReconcileMs: 200 }, 'worker');
    const ended = await eventually(async () => {
      const r = (await getReport(next, answer.report_id)).body.data as Run;
      return r.status === 'completed' ? r : undefined;
    }, 20_000, 'the run to complete');
    assert.deepEqual([ended.recipients_sent, ended.recipients_failed, ended.recipients_pending], [1, 2, 0]);
    assert.deepEqual(ended.recipients.map((r) => [r.status, r.attempts]), [['sent', 1], ['failed', 1], ['failed', 2]]);
    await h.closeJobs();
  });
});

describe('live keys, a real SMTP server', () => {
  test('the reserved addresses are sent like any other: never swallowed', async () => {
    const smtp = await startTestSmtp();
    try {
      const { app } = await h.withJobs({ smtpUrl: smtp.url });
      const res = await report(app, ['no@failed.test', 'later@pending.test']);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual([res.body.data.recipients_sent, res.body.data.recipients_failed, res.body.data.recipients_pending], [2, 0, 0]);
      assert.equal(smtp.to('no@failed.test').length, 1);
      assert.equal(smtp.to('later@pending.test').length, 1);
    } finally {
      await h.closeJobs();
      await smtp.stop();
    }
  });
});
