/**
 * src/jobs on its own: the single e-mail queue (password notices), the services report through
 * sendReport, error classification, and a producer-only instance refusing worker duties.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import ExcelJS from 'exceljs';
import { describeMailError, isTransientMailError } from '../../src/jobs/index.ts';
import { ReportNoDataError, type ServiceTotals } from '../../src/reports/types.ts';
import { sendReport } from '../../src/reports/use-cases.ts';
import { broker } from '../helpers/factories.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { createReportTestApp, type ReportTestApp } from '../reports/harness.ts';

let h: ReportTestApp;
let smtp: TestSmtp;

before(async () => {
  h = await createReportTestApp();
  smtp = await startTestSmtp({ tempFail: { 'flaky@customer.example': 1 } });
});
after(async () => {
  await h?.close();
  await smtp?.stop();
});

async function eventually<T>(check: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('sendMail', () => {
  test('enqueues and returns at once; the worker delivers, retrying a transient failure', async () => {
    const { jobs } = await h.withJobs({ smtpUrl: smtp.url, mailAttempts: 3 });
    await jobs.sendMail({ to: 'owner@customer.example', subject: 'Your new password', text: 'hello' });
    await jobs.sendMail({ to: 'flaky@customer.example', subject: 'Your new password', text: 'hello again' });
    const mail = await eventually(() => smtp.to('owner@customer.example')[0]);
    assert.equal(mail.parsed.subject, 'Your new password');
    assert.equal(mail.parsed.text?.trim(), 'hello');
    await eventually(() => smtp.to('flaky@customer.example')[0]);
    assert.equal(smtp.rcptAttempts.get('flaky@customer.example'), 2);
  });

  test('a producer-only instance cannot start workers', async () => {
    const { jobs } = await h.withJobs({}, 'producer');
    await assert.rejects(jobs.startWorkers(), /runs no workers/);
  });
});

describe('services report through sendReport', () => {
  test('builds the services workbook with a summary by status and mails it', async () => {
    const b = await broker(h.t.prisma);
    const plan = await h.t.prisma.plan.findFirstOrThrow({ orderBy: { tier: 'asc' } });
    const statuses = ['active', 'active', 'pending', 'suspended', 'cancelled'] as const;
    for (const [i, status] of statuses.entries()) {
      await h.t.prisma.service.create({
        data: {
          serviceNumber: 200000000 + i,
          brokerId: b.id,
          planId: plan.id,
          status,
          hostname: `host${i}.example`,
          customerEmail: `c${i}@customer.example`,
          customerName: i === 0 ? 'First Customer' : null,
          username: `user${i}`,
          passwordEnc: 'v1:x:y:z',
        },
      });
    }
    const { jobs, config } = await h.withJobs({ smtpUrl: smtp.url });
    const deps = { prisma: h.t.prisma, config, log: h.t.deps.logger, queues: jobs.queues };
    const result = await sendReport<ServiceTotals>(deps, {
      type: 'services',
      brokerId: b.id,
      apiKeyId: null,
      recipients: ['svc@broker.example'],
    });
    assert.equal(result.recipientsSent, 1);
    assert.equal(result.recipientsFailed, 0);
    assert.deepEqual(result.totals, {
      total_services: 5,
      services_by_status: { pending: 1, active: 2, suspended: 1, cancelled: 1 },
    });
    const mail = smtp.to('svc@broker.example')[0]!;
    const attachment = mail.parsed.attachments[0]!;
    assert.match(attachment.filename ?? '', /^services-\d{4}-\d{2}-\d{2}\.xlsx$/);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(attachment.content as unknown as ArrayBuffer);
    const sheet = workbook.getWorksheet('Services')!;
    assert.equal(sheet.rowCount, 6);
    const first = sheet.getRow(2);
    assert.equal(first.getCell(1).value, 200000000);
    assert.equal(first.getCell(2).value, plan.name);
    assert.equal(first.getCell(6).value, 'First Customer');
    assert.ok(first.getCell(8).value instanceof Date);
    assert.ok(workbook.getWorksheet('Summary'));

    const filtered = await sendReport<ServiceTotals>(deps, {
      type: 'services',
      brokerId: b.id,
      apiKeyId: null,
      recipients: ['active@broker.example'],
      statusFilter: 'active',
    });
    assert.equal(filtered.totals.total_services, 2);
    assert.deepEqual(filtered.totals.services_by_status, { pending: 0, active: 2, suspended: 0, cancelled: 0 });
  });

  test('no rows: ReportNoDataError, unless allowEmpty', async () => {
    const b = await broker(h.t.prisma);
    const { jobs, config } = await h.withJobs({ smtpUrl: smtp.url });
    const deps = { prisma: h.t.prisma, config, log: h.t.deps.logger, queues: jobs.queues };
    const spec = { type: 'services' as const, brokerId: b.id, apiKeyId: null, recipients: ['empty@broker.example'] };
    await assert.rejects(sendReport(deps, spec), ReportNoDataError);
    const result = await sendReport<ServiceTotals>(deps, { ...spec, allowEmpty: true });
    assert.equal(result.totals.total_services, 0);
    assert.equal(result.recipientsSent, 1);
  });
});

describe('mail error classification', () => {
  test('4xx replies and connection failures are transient; 5xx replies and the rest are permanent', () => {
    assert.equal(isTransientMailError({ responseCode: 451, code: 'EENVELOPE' }), true);
    assert.equal(isTransientMailError({ responseCode: 421 }), true);
    assert.equal(isTransientMailError({ code: 'ECONNECTION' }), true);
    assert.equal(isTransientMailError({ code: 'ETIMEDOUT' }), true);
    assert.equal(isTransientMailError({ code: 'ESOCKET' }), true);
    assert.equal(isTransientMailError({ responseCode: 550, code: 'EENVELOPE' }), false);
    assert.equal(isTransientMailError({ responseCode: 535, code: 'EAUTH' }), false);
    assert.equal(isTransientMailError({ code: 'EMESSAGE' }), false);
    assert.equal(isTransientMailError(new Error('boom')), false);
  });

  test('the recorded error names the SMTP reply', () => {
    assert.equal(describeMailError({ responseCode: 550, response: '550 5.1.1 <x@y.example>: user unknown' }), '550 5.1.1 <x@y.example>: user unknown');
    assert.match(describeMailError({ code: 'ECONNECTION', message: 'connect ECONNREFUSED 127.0.0.1:1' }), /^ECONNECTION: /);
  });
});
