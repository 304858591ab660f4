/**
 * A report retried with its Idempotency-Key (openapi.yaml, "Idempotent retries"): the retry gets
 * the first answer and sends no e-mail; one run is recorded.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import request from 'supertest';
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
  await addInvoices(h.t, live.brokerId, [{ status: 'paid', date: '2025-05-02' }]);
});
after(async () => {
  await h?.close();
  await smtp?.stop();
});

for (const [name, path, body] of [
  ['invoices', '/api/v1/reports/invoices', { recipients: ['once.invoices@broker.example'], ...RANGE }],
  ['services', '/api/v1/reports/services', { recipients: ['once.services@broker.example'] }],
] as const) {
  test(`${name} report: the retry replays the answer, one run, one e-mail per recipient`, async () => {
    const { app } = await h.withJobs({ smtpUrl: smtp.url });
    const key = randomUUID();
    const send = () =>
      request(app).post(path).set('Authorization', `Bearer ${live.key}`).set('Idempotency-Key', key).send(body);
    const first = await send();
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.data.recipients_sent, 1);
    const retry = await send();
    assert.equal(retry.status, 200);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body);
    assert.equal(await h.t.prisma.reportRun.count({ where: { brokerId: live.brokerId, reportType: name } }), 1);
    // Give a wrongly queued second e-mail the time to arrive before counting.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(smtp.to(body.recipients[0]).length, 1);
  });
}
