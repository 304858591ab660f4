/**
 * The live invoices report end to end: BullMQ jobs, the streamed workbook, one e-mail per recipient
 * to a real SMTP server started here, the run record, and every way a send can fail.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import ExcelJS from 'exceljs';
import type { Express } from 'express';
import { simpleParser } from 'mailparser';
import request from 'supertest';
import { XLSX_MEDIA_TYPE } from '../../src/reports/kinds/kind.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiKey } from '../helpers/factories.ts';
import { startTestSmtp, type ReceivedMail, type TestSmtp } from '../helpers/smtp.ts';
import { addInvoices, createReportTestApp, type ReportTestApp } from './harness.ts';

const PATH = '/api/v1/reports/invoices';
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const RANGE = { start_date: '2025-03-01', end_date: '2025-03-31' };

let h: ReportTestApp;
let key: string;
let brokerId: string;

before(async () => {
  h = await createReportTestApp();
  const k = await apiKey(h.t.prisma, { scopes: ['reports:generate'], rateLimit: 10_000 });
  key = k.key;
  brokerId = k.brokerId;
  const other = await apiKey(h.t.prisma, { scopes: ['admin:full'] });
  await addInvoices(h.t, brokerId, [
    // In range: 3 paid, 2 pending (boundaries included), in two currencies.
    { status: 'paid', date: '2025-03-01', amount: '100.50', currency: 'EUR', number: 'INV-A1' },
    { status: 'paid', date: '2025-03-15', amount: '0.10', currency: 'EUR' },
    { status: 'paid', date: '2025-03-31', amount: '1999.99', currency: 'USD' },
    { status: 'pending', date: '2025-03-10', amount: '20.00', currency: 'EUR' },
    { status: 'pending', date: '2025-03-31', amount: '5.25', currency: 'EUR' },
    // In range but other statuses: left out.
    { status: 'overdue', date: '2025-03-05' },
    { status: 'cancelled', date: '2025-03-06' },
    { status: 'refunded', date: '2025-03-07' },
    // Just outside the range.
    { status: 'paid', date: '2025-02-28' },
    { status: 'pending', date: '2025-04-01' },
  ]);
  // Another broker's invoices in the same range are never counted.
  await addInvoices(h.t, other.brokerId, [{ status: 'paid', date: '2025-03-02' }, { status: 'pending', date: '2025-03-03' }]);
});
after(async () => {
  await h?.close();
});

const post = (app: Express, body: unknown) =>
  request(app).post(PATH).set('Authorization', `Bearer ${key}`).send(body as object);

async function workbookOf(mail: ReceivedMail): Promise<ExcelJS.Workbook> {
  assert.equal(mail.parsed.attachments.length, 1);
  const attachment = mail.parsed.attachments[0]!;
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(attachment.content as unknown as ArrayBuffer);
  return workbook;
}

function invoiceRows(workbook: ExcelJS.Workbook): ExcelJS.Row[] {
  const sheet = workbook.getWorksheet('Invoices');
  assert.ok(sheet, 'an Invoices sheet');
  const rows: ExcelJS.Row[] = [];
  sheet.eachRow((row, n) => {
    if (n > 1) rows.push(row);
  });
  return rows;
}

async function runOf(runId?: string) {
  const run = await h.t.prisma.reportRun.findFirstOrThrow({
    where: runId ? { id: runId } : {},
    orderBy: { createdAt: 'desc' },
    include: { recipients: { orderBy: { id: 'asc' } } },
  });
  return run;
}

describe('live report to a real SMTP server', () => {
  let smtp: TestSmtp;
  let app: Express;
  before(async () => {
    smtp = await startTestSmtp();
    ({ app } = await h.withJobs({ smtpUrl: smtp.url }));
  });
  after(async () => {
    await smtp.stop();
  });

  test('counts paid and pending invoices in the inclusive range and mails each recipient once', async () => {
    const recipients = ['Finance@Broker.example', ' ceo@broker.example ', 'finance@broker.example', ''];
    const res = await post(app, { recipients, ...RANGE });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { generated_at: generatedAt, report_id: reportId, ...data } = res.body.data as Record<string, unknown>;
    assert.match(String(generatedAt), ISO_MS);
    assert.equal(reportId, (await runOf()).id, 'report_id names the recorded run');
    assert.deepEqual(data, {
      object: 'invoices_report',
      report_type: 'invoices',
      total_invoices: 5,
      paid_invoices: 3,
      unpaid_invoices: 2,
      recipients_sent: 2,
      recipients_failed: 0,
      recipients_pending: 0,
      date_range: { start: '2025-03-01', end: '2025-03-31' },
    });
    assert.equal(smtp.received.length, 2);
    for (const address of ['finance@broker.example', 'ceo@broker.example']) {
      const mails = smtp.to(address);
      assert.equal(mails.length, 1, `exactly one message to ${address}`);
      const attachment = mails[0]!.parsed.attachments[0]!;
      assert.equal(attachment.filename, 'invoices-2025-03-01-2025-03-31.xlsx');
      assert.equal(attachment.contentType, XLSX_MEDIA_TYPE);
      const rows = invoiceRows(await workbookOf(mails[0]!));
      assert.equal(rows.length, 5, 'exactly total_invoices invoice rows');
    }
    // Nothing of the file in the HTTP answer.
    assert.ok(!JSON.stringify(res.body).includes('xlsx'));
  });

  test('the workbook: typed cells, number formats, frozen header, filter, summary by status', async () => {
    smtp.received.length = 0;
    const res = await post(app, { recipients: ['typed@broker.example'], ...RANGE });
    assert.equal(res.status, 200);
    const workbook = await workbookOf(smtp.to('typed@broker.example')[0]!);
    const sheet = workbook.getWorksheet('Invoices')!;
    assert.deepEqual((sheet.getRow(1).values as unknown[]).slice(1), [
      'Invoice number',
      'Service number',
      'Date',
      'Status',
      'Amount',
      'Currency',
    ]);
    assert.equal(sheet.getRow(1).getCell(1).font?.bold, true);
    assert.equal(sheet.views[0]?.state, 'frozen');
    assert.equal((sheet.views[0] as { ySplit?: number }).ySplit, 1);
    assert.ok(sheet.autoFilter, 'an auto filter');
    const first = sheet.getRow(2);
    assert.equal(first.getCell(1).value, 'INV-A1');
    assert.equal(typeof first.getCell(2).value, 'number');
    assert.ok(first.getCell(3).value instanceof Date);
    assert.equal((first.getCell(3).value as Date).toISOString(), '2025-03-01T00:00:00.000Z');
    assert.equal(first.getCell(3).numFmt, 'yyyy-mm-dd');
    assert.equal(first.getCell(4).value, 'paid');
    assert.equal(first.getCell(5).value, 100.5);
    assert.equal(first.getCell(5).numFmt, '#,##0.00');
    assert.equal(first.getCell(6).value, 'EUR');
    // Rows come by date: the last is a 2025-03-31 invoice.
    const dates = invoiceRows(workbook).map((r) => (r.getCell(3).value as Date).toISOString().slice(0, 10));
    assert.deepEqual(dates, [...dates].sort());
    assert.ok(dates.every((d) => d >= '2025-03-01' && d <= '2025-03-31'));

    const summary = workbook.getWorksheet('Summary');
    assert.ok(summary, 'a Summary sheet');
    const lines: unknown[][] = [];
    summary.eachRow((row) => lines.push((row.values as unknown[]).slice(1)));
    const find = (...prefix: unknown[]) => lines.find((l) => prefix.every((p, i) => l[i] === p));
    assert.deepEqual(find('Paid')?.slice(0, 2), ['Paid', 3]);
    assert.deepEqual(find('Unpaid (pending)')?.slice(0, 2), ['Unpaid (pending)', 2]);
    assert.deepEqual(find('Total', 5), ['Total', 5]);
    assert.deepEqual(find('Paid', 'EUR'), ['Paid', 'EUR', 2, 100.6]);
    assert.deepEqual(find('Paid', 'USD'), ['Paid', 'USD', 1, 1999.99]);
    assert.deepEqual(find('Unpaid (pending)', 'EUR'), ['Unpaid (pending)', 'EUR', 2, 25.25]);
    assert.deepEqual(find('Total', 'EUR'), ['Total', 'EUR', 4, 125.85]);
  });

  test('each run is recorded: who asked, range, counts and per-recipient outcome', async () => {
    const k = await h.t.prisma.apiKey.findFirstOrThrow({ where: { brokerId, mode: 'live' } });
    const res = await post(app, { recipients: ['a@broker.example', 'b@broker.example'], ...RANGE });
    assert.equal(res.status, 200);
    const run = await runOf();
    assert.equal(run.brokerId, brokerId);
    assert.equal(run.apiKeyId, k.id);
    assert.equal(run.reportType, 'invoices');
    assert.equal(run.startDate?.toISOString().slice(0, 10), '2025-03-01');
    assert.equal(run.endDate?.toISOString().slice(0, 10), '2025-03-31');
    assert.equal(run.status, 'completed');
    assert.equal(run.recipientsSent, 2);
    assert.equal(run.recipientsFailed, 0);
    assert.deepEqual(run.totals, { total_invoices: 5, paid_invoices: 3, unpaid_invoices: 2 });
    assert.deepEqual(run.recipients.map((r) => [r.email, r.status, r.attempts]), [
      ['a@broker.example', 'sent', 1],
      ['b@broker.example', 'sent', 1],
    ]);
    assert.ok(run.recipients.every((r) => r.messageId && r.sentAt));
    assert.ok(run.completedAt);
  });

  test('the temporary workbook is removed once the sends are done', async () => {
    await post(app, { recipients: ['tmp@broker.example'], ...RANGE });
    const dir = path.join(h.t.dataDir, 'tmp');
    await eventually(async () => (!existsSync(dir) || readdirSync(dir).length === 0 ? true : undefined));
  });

  test('invoices added after the count are not in the workbook, so rows always equal total_invoices', async () => {
    smtp.received.length = 0;
    const res = await post(app, { recipients: ['snap@broker.example'], start_date: '2025-03-01', end_date: '2025-03-01' });
    assert.equal(res.body.data.total_invoices, 1);
    assert.equal(invoiceRows(await workbookOf(smtp.to('snap@broker.example')[0]!)).length, 1);
  });
});

describe('failed sends are counted, the answer is still 200', () => {
  test('recipients rejected by the server count as failed, permanently (no retry)', async () => {
    const smtp = await startTestSmtp({ reject: ['nobody@broker.example', 'gone@broker.example'] });
    try {
      const { app } = await h.withJobs({ smtpUrl: smtp.url, mailAttempts: 3 });
      const res = await post(app, {
        recipients: ['ok@broker.example', 'nobody@broker.example', 'gone@broker.example'],
        ...RANGE,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.recipients_sent, 1);
      assert.equal(res.body.data.recipients_failed, 2);
      assert.equal(smtp.received.length, 1);
      assert.equal(smtp.to('ok@broker.example').length, 1);
      assert.equal(smtp.rcptAttempts.get('nobody@broker.example'), 1, 'a 5xx rejection is not retried');
      const run = await runOf();
      assert.equal(run.recipientsSent, 1);
      assert.equal(run.recipientsFailed, 2);
      const nobody = run.recipients.find((r) => r.email === 'nobody@broker.example')!;
      assert.equal(nobody.status, 'failed');
      assert.match(nobody.error ?? '', /550/);
      assert.equal(nobody.attempts, 1);
    } finally {
      await smtp.stop();
    }
  });

  test('a transient 4xx failure is retried and then delivered', async () => {
    const smtp = await startTestSmtp({ tempFail: { 'busy@broker.example': 2 } });
    try {
      const { app } = await h.withJobs({ smtpUrl: smtp.url, mailAttempts: 3 });
      const res = await post(app, { recipients: ['busy@broker.example'], ...RANGE });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.recipients_sent, 1);
      assert.equal(res.body.data.recipients_failed, 0);
      assert.equal(smtp.to('busy@broker.example').length, 1);
      const run = await runOf();
      assert.equal(run.recipients[0]!.attempts, 3);
      assert.equal(run.recipients[0]!.status, 'sent');
    } finally {
      await smtp.stop();
    }
  });

  test('a transient failure that outlasts the attempts is failed after config.mailAttempts tries', async () => {
    const smtp = await startTestSmtp({ tempFail: { 'busy@broker.example': 99 } });
    try {
      const { app } = await h.withJobs({ smtpUrl: smtp.url, mailAttempts: 2 });
      const res = await post(app, { recipients: ['busy@broker.example', 'fine@broker.example'], ...RANGE });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.recipients_sent, 1);
      assert.equal(res.body.data.recipients_failed, 1);
      assert.equal(smtp.rcptAttempts.get('busy@broker.example'), 2);
      const run = await runOf();
      const busy = run.recipients.find((r) => r.email === 'busy@broker.example')!;
      assert.equal(busy.status, 'failed');
      assert.match(busy.error ?? '', /451/);
    } finally {
      await smtp.stop();
    }
  });

  test('with the SMTP server stopped every recipient is failed, the answer is still 200, within the wait', async () => {
    const smtp = await startTestSmtp();
    await smtp.stop();
    const { app } = await h.withJobs({ smtpUrl: smtp.url, mailAttempts: 3, reportWaitMs: 10_000 });
    const started = Date.now();
    const res = await post(app, { recipients: ['a@broker.example', 'b@broker.example', 'c@broker.example'], ...RANGE });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.recipients_sent, 0);
    assert.equal(res.body.data.recipients_failed, 3);
    assert.equal(res.body.data.total_invoices, 5);
    assert.ok(Date.now() - started < 10_000);
    const run = await runOf();
    assert.equal(run.status, 'completed');
    for (const r of run.recipients) {
      assert.equal(r.status, 'failed');
      assert.equal(r.attempts, 3, 'connection failures are retried');
      assert.match(r.error ?? '', /ECONNREFUSED|ECONNECTION|ESOCKET/);
    }
  });

  test('outcomes unknown when the wait ends are pending, not failed; the run record and GET report get the real outcome later', async () => {
    // An SMTP server that takes 1.5 s to accept a message (inside the SMTP timeouts), against a 400 ms wait.
    const slow = await import('smtp-server');
    const server = new slow.SMTPServer({
      secure: false,
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData(stream, _session, callback) {
        stream.resume();
        stream.on('end', () => setTimeout(() => callback(), 1500));
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.server.address() as { port: number }).port;
    try {
      const { app } = await h.withJobs({ smtpUrl: `smtp://127.0.0.1:${port}`, reportWaitMs: 400 });
      const res = await post(app, { recipients: ['late@broker.example'], ...RANGE });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.recipients_sent, 0);
      assert.equal(res.body.data.recipients_failed, 0, 'not yet known is never failed');
      assert.equal(res.body.data.recipients_pending, 1);
      const runId = (await runOf()).id;
      assert.equal(res.body.data.report_id, runId);
      const run = await eventually(async () => {
        const r = await runOf(runId);
        return r.status === 'completed' ? r : undefined;
      });
      assert.equal(run.recipientsSent, 1);
      assert.equal(run.recipients[0]!.status, 'sent');
      const later = await request(app).get(`/api/v1/reports/${runId}`).set('Authorization', `Bearer ${key}`);
      assert.equal(later.status, 200, JSON.stringify(later.body));
      assert.equal(later.body.data.status, 'completed');
      assert.deepEqual(
        [later.body.data.recipients_sent, later.body.data.recipients_failed, later.body.data.recipients_pending],
        [1, 0, 0],
      );
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('without SMTP_URL', () => {
  test('each e-mail is written to $DATA_DIR/outbox as an .eml file and counts as sent', async () => {
    const { app, config } = await h.withJobs({ smtpUrl: undefined });
    const res = await post(app, { recipients: ['x@broker.example', 'y@broker.example'], ...RANGE });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.recipients_sent, 2);
    const outbox = path.join(config.dataDir, 'outbox');
    const files = readdirSync(outbox).filter((f) => f.endsWith('.eml'));
    assert.equal(files.length, 2);
    const to = new Set<string>();
    for (const file of files) {
      const parsed = await simpleParser(readFileSync(path.join(outbox, file)));
      to.add(String((parsed.to as { text: string }).text));
      assert.equal(parsed.attachments[0]?.filename, 'invoices-2025-03-01-2025-03-31.xlsx');
      const workbook = new ExcelJS.Workbook();
      await workbook.xlsx.load(parsed.attachments[0]!.content as unknown as ArrayBuffer);
      assert.equal(invoiceRows(workbook).length, 5);
    }
    assert.deepEqual([...to].sort(), ['x@broker.example', 'y@broker.example']);
  });
});

describe('producer and worker in separate instances (API process + worker process on one Redis)', () => {
  test('the producer enqueues and waits; the worker builds and sends', async () => {
    const smtp = await startTestSmtp();
    try {
      const worker = await h.withJobs({ smtpUrl: smtp.url }, 'worker');
      const { createJobs } = await import('../../src/background.ts');
      const producer = createJobs({
        redisEndpoint: h.t.redisEndpoint,
        prisma: h.t.prisma,
        config: worker.config,
        logger: h.t.deps.logger,
        mode: 'producer',
        prefix: worker.prefix,
      });
      try {
        const { createApp } = await import('../../src/app.ts');
        const app = createApp({ ...h.t.deps, config: worker.config, jobs: producer });
        const res = await post(app, { recipients: ['split@broker.example'], ...RANGE });
        assert.equal(res.status, 200);
        assert.equal(res.body.data.recipients_sent, 1);
        assert.equal(smtp.to('split@broker.example').length, 1);
      } finally {
        await producer.close();
      }
    } finally {
      await smtp.stop();
    }
  });
});

describe('Redis down', () => {
  test('the run is recorded and answered pending: the reconciler queues it once Redis is back', async () => {
    const { app } = await h.withJobs({ smtpUrl: undefined });
    await h.t.redisEndpoint.stop();
    const res = await post(app, { recipients: ['r@broker.example'], ...RANGE });
    // The gate counts the request in this process (its insurance), and the database is the record.
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.recipients_sent, 0);
    assert.equal(res.body.data.recipients_failed, 0);
    assert.equal(res.body.data.recipients_pending, 1);
    const run = await runOf(res.body.data.report_id);
    assert.equal(run.status, 'queued');
  });
});
