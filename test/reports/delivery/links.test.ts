/**
 * Workbooks over REPORT_ATTACHMENT_MAX_BYTES go out as download links, one of each recipient's own
 * (openapi.yaml `downloadReport`): every link downloads the one stored workbook byte for byte;
 * unknown, expired and malformed tokens get one 404; the path is rate-limited per IP; downloads are
 * recorded and shown by GET /api/v1/reports/{report_id}; the stored workbook goes when the last link expires.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { parse } from 'yaml';
import { XLSX_MEDIA_TYPE } from '../../../src/reports/kinds/kind.ts';
import { releaseWorkbooks } from '../../../src/reports/delivery/reconcile.ts';
import type { Pipeline } from '../../../src/reports/delivery/pipeline.ts';
import { readWorkbook } from '../../../src/reports/workbook/store.ts';
import { apiKey, type TestApiKey } from '../../helpers/factories.ts';
import { startTestSmtp, type TestSmtp } from '../../helpers/smtp.ts';
import { addInvoices, createReportTestApp, type ReportTestApp } from '../harness.ts';

const RANGE = { start_date: '2025-06-01', end_date: '2025-06-30' };
const BASE = 'https://files.broker-host.example';
const LINK = /https:\/\/files\.broker-host\.example\/downloads\/reports\/([A-Za-z0-9_-]{43})\r?\n/;

let h: ReportTestApp;
let smtp: TestSmtp;
let live: TestApiKey;
let app: Express;

before(async () => {
  h = await createReportTestApp();
  smtp = await startTestSmtp();
  live = await apiKey(h.t.prisma, { scopes: ['reports:generate'], rateLimit: 10_000 });
  await addInvoices(h.t, live.brokerId, [
    { status: 'paid', date: '2025-06-02', amount: '120.50' },
    { status: 'pending', date: '2025-06-20' },
    { status: 'paid', date: '2025-06-28' },
  ]);
  // Any workbook is over 1,000 bytes: every run of this app goes out as links.
  ({ app } = await h.withJobs({ smtpUrl: smtp.url, reportAttachmentMaxBytes: 1000, publicBaseUrl: BASE, trustProxy: 'loopback' }));
});
after(async () => {
  await h?.close();
  await smtp?.stop();
});

const report = (target: Express, recipients: string[]) =>
  request(target).post('/api/v1/reports/invoices').set('Authorization', `Bearer ${live.key}`).send({ recipients, ...RANGE });

/** The body as the bytes that came (supertest would otherwise try to decode an .xlsx as text). */
const binary = (res: request.Response, done: (err: Error | null, body: Buffer) => void) => {
  const stream = res as unknown as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => done(null, Buffer.concat(chunks)));
};

const download = (token: string, ip = '203.0.113.7') =>
  request(app).get(`/downloads/reports/${token}`).set('X-Forwarded-For', ip).buffer(true).parse(binary);

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function tokenOf(address: string): string {
  const mail = smtp.to(address);
  assert.equal(mail.length, 1, `one e-mail to ${address}`);
  const match = LINK.exec(mail[0]!.parsed.text ?? '');
  assert.ok(match, mail[0]!.parsed.text);
  return match[1]!;
}

const pipelineOf = (): Pipeline => ({ prisma: h.t.prisma, log: h.t.deps.logger } as unknown as Pipeline);

describe('a workbook over REPORT_ATTACHMENT_MAX_BYTES goes out as links', () => {
  const recipients = ['links.one@broker.example', 'links.two@broker.example', 'links.three@broker.example'];
  let runId: string;
  let stored: Buffer;

  before(async () => {
    const res = await report(app, recipients);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.data.recipients_sent, res.body.data.recipients_failed, res.body.data.recipients_pending], [3, 0, 0]);
    runId = res.body.data.report_id;
    const run = await h.t.prisma.reportRun.findUniqueOrThrow({ where: { id: runId } });
    stored = await buffer(readWorkbook(h.t.deps.readChunk, { runId, build: run.workbookBuild!, chunks: run.workbookChunks! }));
    assert.equal(run.delivery, 'link');
    assert.equal(stored.length, run.workbookBytes);
    assert.equal(sha256(stored), run.workbookSha256);
  });

  test('each recipient gets the totals and a link of their own, no attachment', () => {
    const tokens = recipients.map(tokenOf);
    assert.equal(new Set(tokens).size, 3, 'three distinct links');
    for (const address of recipients) {
      const mail = smtp.to(address)[0]!.parsed;
      assert.equal(mail.attachments.length, 0);
      assert.match(mail.text ?? '', /too large to attach/);
      assert.match(mail.text ?? '', /Invoices: 3 \(paid: 2, unpaid\/pending: 1\)/);
      assert.match(mail.text ?? '', /valid until \d{4}-\d\d-\d\dT/);
    }
  });

  test('every link downloads the stored workbook byte for byte, named as the attachment would be', async () => {
    for (const address of recipients) {
      const res = await download(tokenOf(address));
      assert.equal(res.status, 200);
      assert.ok(Buffer.isBuffer(res.body));
      assert.ok((res.body as Buffer).equals(stored), `${address}: the same bytes`);
      assert.equal(res.headers['content-type'], XLSX_MEDIA_TYPE);
      assert.equal(res.headers['content-disposition'], 'attachment; filename="invoices-2025-06-01-2025-06-30.xlsx"');
      assert.equal(res.headers['content-length'], String(stored.length));
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers['referrer-policy'], 'no-referrer');
      assert.equal(res.headers['x-frame-options'], 'DENY');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.match(String(res.headers['content-security-policy']), /default-src 'none'/);
      assert.ok(res.headers['x-request-id']);
    }
  });

  test('HEAD answers the headers only and is no download', async () => {
    const token = tokenOf(recipients[2]!);
    const before = await h.t.prisma.reportDownload.count();
    const res = await request(app).head(`/downloads/reports/${token}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-length'], String(stored.length));
    assert.equal(res.headers['content-type'], XLSX_MEDIA_TYPE);
    assert.equal(await h.t.prisma.reportDownload.count(), before);
  });

  test('downloads are recorded and shown per recipient, with the delivery kind and link expiry', async () => {
    const token = tokenOf(recipients[0]!);
    await download(token, '198.51.100.23');
    const res = await request(app).get(`/api/v1/reports/${runId}`).set('Authorization', `Bearer ${live.key}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const [one, two, three] = res.body.data.recipients as Array<Record<string, unknown>>;
    for (const r of [one, two, three]) {
      assert.equal(r!.delivery, 'link');
      const expires = Date.parse(String(r!.link_expires_at));
      assert.ok(Math.abs(expires - (Date.parse(String(r!.sent_at)) + 168 * 3600_000)) < 60_000, String(r!.link_expires_at));
    }
    assert.equal(one!.download_count, 2);
    assert.deepEqual((one!.downloads as Array<{ ip: string }>).map((d) => d.ip), ['198.51.100.23', '203.0.113.7'], 'newest first');
    assert.equal(two!.download_count, 1);
    assert.deepEqual((two!.downloads as Array<{ ip: string }>).map((d) => d.ip), ['203.0.113.7']);
    assert.ok(Date.parse(String((two!.downloads as Array<{ downloaded_at: string }>)[0]!.downloaded_at)) <= Date.now());
  });

  test('unknown, expired and malformed tokens get the identical 404 envelope', async () => {
    const expired = tokenOf(recipients[1]!);
    await h.t.prisma.reportLink.updateMany({ where: { recipientId: (await recipientId(recipients[1]!)) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const answers = await Promise.all([expired, randomBytes(32).toString('base64url'), 'not-a-token', 'x'.repeat(500)].map((t) => download(t, '192.0.2.99')));
    for (const res of answers) {
      assert.equal(res.status, 404);
      assert.equal(res.headers['cache-control'], 'no-store');
      const body = JSON.parse((res.body as Buffer).toString('utf8')) as { success: boolean; error: { code: string; message: string; request_id: string } };
      assert.equal(body.success, false);
      assert.equal(body.error.code, 'not_found');
      assert.equal(body.error.request_id, res.headers['x-request-id']);
      assert.deepEqual({ ...body.error, request_id: '' }, { code: 'not_found', message: 'This download link is unknown or has expired', request_id: '' });
    }
  });

  test('the stored workbook is deleted once its last link has expired, and its links then answer 404', async () => {
    await releaseWorkbooks(pipelineOf());
    assert.ok((await h.t.prisma.reportWorkbookChunk.count({ where: { reportRunId: runId } })) > 0, 'kept while links are valid');
    await h.t.prisma.reportLink.updateMany({ where: { reportRunId: runId }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await releaseWorkbooks(pipelineOf());
    assert.equal(await h.t.prisma.reportWorkbookChunk.count({ where: { reportRunId: runId } }), 0);
    const run = await h.t.prisma.reportRun.findUniqueOrThrow({ where: { id: runId } });
    assert.ok(run.workbookDeletedAt);
    await h.t.prisma.reportLink.updateMany({ where: { reportRunId: runId }, data: { expiresAt: new Date(Date.now() + 3600_000) } });
    const res = await download(tokenOf(recipients[2]!), '192.0.2.98');
    assert.equal(res.status, 404, 'a link whose workbook is gone downloads nothing');
  });
});

async function recipientId(address: string): Promise<number> {
  return (await h.t.prisma.reportRecipient.findFirstOrThrow({ where: { email: address }, orderBy: { id: 'desc' } })).id;
}

describe('a second copy of an e-mail does not kill the first copy\'s link', () => {
  test('two links of one recipient both download', async () => {
    const address = 'links.twice@broker.example';
    const res = await report(app, [address]);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const first = tokenOf(address);
    // A resend (a worker died after the server accepted): the recipient is released and sent again.
    const id = await recipientId(address);
    await h.t.prisma.reportRecipient.update({ where: { id }, data: { status: 'pending' } });
    await h.t.prisma.reportRun.update({ where: { id: res.body.data.report_id }, data: { status: 'sending' } });
    const { processReportSend } = await import('../../../src/reports/delivery/pipeline.ts');
    const config = { ...h.t.deps.config, smtpUrl: smtp.url, reportAttachmentMaxBytes: 1000, publicBaseUrl: BASE };
    const { createMailer } = await import('../../../src/jobs/mailer.ts');
    const mailer = createMailer(config);
    const p = { prisma: h.t.prisma, config, log: h.t.deps.logger, mailer: () => mailer, mailOutcomes: { sent() {}, failed() {} } } as unknown as Pipeline;
    await processReportSend(p, { id: 'resend', data: { recipientId: id }, attemptsMade: 0 } as never);
    mailer.close();
    const copies = smtp.to(address);
    assert.equal(copies.length, 2);
    const second = LINK.exec(copies[1]!.parsed.text ?? '')![1]!;
    assert.notEqual(first, second);
    for (const token of [first, second]) assert.equal((await download(token, '192.0.2.50')).status, 200);
  });
});

describe('requests to download links are rate-limited per IP', () => {
  test('past the bound, 429 rate_limit_exceeded with Retry-After; an IPv6 caller counts by its /64', async () => {
    const { app: limited } = await h.withJobs({ smtpUrl: smtp.url, reportDownloadsPerIpPerMinute: 3, trustProxy: 'loopback' });
    const token = randomBytes(32).toString('base64url');
    const get = (ip: string) => request(limited).get(`/downloads/reports/${token}`).set('X-Forwarded-For', ip);
    for (const ip of ['2001:db8:77:1::1', '2001:db8:77:1::2', '2001:db8:77:1:ffff::9']) assert.equal((await get(ip)).status, 404);
    const refused = await get('2001:db8:77:1::abcd');
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'rate_limit_exceeded');
    assert.equal(refused.body.error.details.reason, 'report_downloads_per_ip');
    assert.equal(refused.body.error.details.limit, 3);
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal(String(refused.body.error.details.retry_after), refused.headers['retry-after']);
    assert.equal((await get('2001:db8:77:2::1')).status, 404, 'another /64 is another caller');
  });
});

describe('the contract\'s download samples run against a real link', () => {
  test('curl and TypeScript samples of downloadReport save the workbook', async () => {
    const address = 'links.sample@broker.example';
    const server: Server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const res = await report(app, [address]);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const link = `http://127.0.0.1:${(server.address() as AddressInfo).port}/downloads/reports/${tokenOf(address)}`;
      const document = parse(readFileSync(new URL('../../../openapi.yaml', import.meta.url), 'utf8')) as {
        paths: Record<string, { get: { 'x-codeSamples': Array<{ lang: string; source: string }> } }>;
      };
      const samples = document.paths['/downloads/reports/{token}']!.get['x-codeSamples'];
      const cwd = h.t.dataDir;
      const run = (file: string, args: string[]) =>
        new Promise<number>((resolve) =>
          execFile(file, args, { cwd, env: { ...process.env, REPORT_LINK: link } }, (err, stdout, stderr) => {
            if (err) console.error(stdout, stderr);
            resolve(err ? 1 : 0);
          }),
        );
      const curl = samples.find((s) => s.lang === 'Shell')!.source;
      assert.equal(await run('bash', ['-c', curl]), 0);
      const workbook = readFileSync(`${cwd}/report.xlsx`);
      assert.equal(workbook.subarray(0, 2).toString(), 'PK', 'a zip (xlsx) file');
      const ts = samples.find((s) => s.lang === 'TypeScript')!.source;
      const file = `${cwd}/sample.mts`;
      (await import('node:fs')).writeFileSync(file, ts);
      assert.equal(await run(process.execPath, ['--import', import.meta.resolve('tsx'), file]), 0);
      assert.ok(readFileSync(`${cwd}/report.xlsx`).equals(workbook));
    } finally {
      server.close();
    }
  });
});
