/**
 * One trace per request across the queue (src/shared/tracing.ts): an in-process OTLP/HTTP receiver
 * (http/json) records the spans; one report request is one trace holding its HTTP span, the build
 * job's span, each e-mail job's and each e-mail's SMTP answer; the webhook delivery of its
 * `report.completed` event, claimed from the database, is a trace of its own. Without the variable,
 * nothing of OpenTelemetry's SDK is loaded at all.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { flushTracing, startTracing } from '../../src/shared/tracing.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiKey } from '../helpers/factories.ts';
import { runFile } from '../helpers/run-file.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { startReceiver as startWebhookReceiver, webhookEndpoint } from '../helpers/webhooks.ts';
import { addInvoices, createReportTestApp, type ReportTestApp } from '../reports/harness.ts';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpJson = { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<Omit<ReceivedSpan, 'attributes'> & { attributes?: Array<{ key: string; value: OtlpValue }> }> }> }> };

/** An OTLP/HTTP receiver of JSON trace exports on 127.0.0.1. */
async function startReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; contentTypes: Set<string>; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      contentTypes.add(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpJson;
      for (const rs of body.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) {
        const attributes: Record<string, unknown> = {};
        for (const a of s.attributes ?? []) attributes[a.key] = a.value.stringValue ?? a.value.boolValue ?? a.value.doubleValue ?? (a.value.intValue === undefined ? undefined : Number(a.value.intValue));
        spans.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId, name: s.name, kind: s.kind, attributes });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, contentTypes, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('tracing on (OTEL_EXPORTER_OTLP_ENDPOINT, http/json)', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let h: ReportTestApp;
  let smtp: TestSmtp;
  before(async () => {
    receiver = await startReceiver();
    // The SDK reads the OTEL_* variables of the process itself.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
    assert.equal(await startTracing('all'), true);
    // Private URLs for the webhook receiver on 127.0.0.1: every worker of the app may claim its delivery.
    h = await createReportTestApp({ webhookAllowPrivateUrls: true });
    smtp = await startTestSmtp();
  });
  after(async () => {
    await h?.close();
    await smtp?.stop();
    await receiver?.close();
  });

  test('one report request is one trace: its HTTP span, the build job, each e-mail job and each SMTP answer; its webhook delivery one of its own', async () => {
    const key = await apiKey(h.t.prisma, { scopes: ['reports:generate'], rateLimit: 10_000 });
    await addInvoices(h.t, key.brokerId, [{ status: 'paid', date: '2025-05-02' }]);
    const hooks = await startWebhookReceiver();
    after(() => hooks.stop());
    const endpoint = await webhookEndpoint(h.t.prisma, await h.t.deps.credentials(), { brokerId: key.brokerId, url: hooks.url('trace') });
    const { app } = await h.withJobs({ smtpUrl: smtp.url });
    const recipients = ['trace.one@broker.example', 'trace.two@broker.example'];
    const res = await request(app)
      .post('/api/v1/reports/invoices')
      .set('Authorization', `Bearer ${key.key}`)
      .set('X-Request-Id', 'trace-me-1')
      .send({ recipients, start_date: '2025-05-01', end_date: '2025-05-31' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const runId: string = res.body.data.report_id;
    await eventually(async () => (await h.t.prisma.reportRun.findUniqueOrThrow({ where: { id: runId } })).status === 'completed' || undefined, 20_000, 'run completed');

    const requestSpan = await eventually(async () => {
      await flushTracing();
      return receiver.spans.find((s) => s.attributes['client_api.request_id'] === 'trace-me-1');
    }, 10_000, 'the request span exported');
    assert.equal(requestSpan.name, 'sendInvoicesReport');
    assert.equal(requestSpan.kind, 2 /* SERVER */);
    assert.equal(requestSpan.parentSpanId || undefined, undefined, 'the request starts its trace');
    assert.equal(requestSpan.attributes['client_api.operation_id'], 'sendInvoicesReport');
    assert.equal(requestSpan.attributes['client_api.broker_id'], key.brokerId);
    assert.equal(requestSpan.attributes['http.response.status_code'], 200);
    assert.ok(!JSON.stringify(requestSpan).includes(key.key), 'no key on the span');

    const trace = await eventually(async () => {
      await flushTracing();
      const inTrace = receiver.spans.filter((s) => s.traceId === requestSpan.traceId);
      return inTrace.filter((s) => s.name === 'e-mail send').length >= 2 ? inTrace : undefined;
    }, 10_000, 'both e-mails in the trace');
    const names = trace.map((s) => s.name);
    assert.ok(names.includes('process reports'), `the build job's span in the trace: ${names.join(', ')}`);
    assert.equal(names.filter((n) => n === 'process mail').length, 2, `each e-mail job's span: ${names.join(', ')}`);
    assert.ok(names.some((n) => n.startsWith('prisma:')), `Prisma's spans: ${names.join(', ')}`);
    const mails = trace.filter((s) => s.name === 'e-mail send');
    for (const mail of mails) assert.match(String(mail.attributes['smtp.response']), /^250\b/);
    assert.deepEqual(
      mails.map((m) => /\.(\d+)@/.exec(String(m.attributes['messaging.message.id']))?.[1]).sort(),
      (await h.t.prisma.reportRecipient.findMany({ where: { reportRunId: runId } })).map((r) => String(r.id)).sort(),
      'one e-mail span per recipient',
    );
    // Every span hangs from the request's: one tree, no orphan.
    const ids = new Set(trace.map((s) => s.spanId));
    for (const s of trace) if (s !== requestSpan) assert.ok(s.parentSpanId && ids.has(s.parentSpanId), `${s.name} has its parent in the trace`);

    // The report.completed event's delivery: claimed from the database by the dispatcher, so a trace of its own.
    const delivery = await eventually(async () => {
      await flushTracing();
      return receiver.spans.find((s) => s.name === 'webhook delivery' && s.attributes['webhook.event_type'] === 'report.completed');
    }, 20_000, 'the webhook delivery span exported');
    assert.equal(delivery.attributes['webhook.endpoint_id'], endpoint.id);
    assert.equal(delivery.attributes['http.response.status_code'], 200, JSON.stringify(delivery.attributes));
    assert.ok(!JSON.stringify(delivery).includes(hooks.url('trace')), 'never the endpoint URL');
    assert.notEqual(delivery.traceId, requestSpan.traceId);
    // The job's span ends after the attempt's, so it may come in a later export.
    const deliveryTrace = await eventually(async () => {
      await flushTracing();
      const names = receiver.spans.filter((s) => s.traceId === delivery.traceId).map((s) => s.name);
      return names.includes('process webhooks') ? names : undefined;
    }, 10_000, 'the delivery job span exported');
    assert.ok(deliveryTrace.includes('add webhooks.deliver'), deliveryTrace.join(', '));
    assert.ok([...receiver.contentTypes].every((c) => c === 'POST /v1/traces application/json'), [...receiver.contentTypes].join('; '));
  });
});

describe('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  test('a process that serves a report request loads no OpenTelemetry module', async () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const env = { ...process.env };
    for (const name of Object.keys(env)) if (name.startsWith('OTEL_')) delete env[name];
    const run = await runFile(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures', 'tracing-off.ts')], { cwd: root, env, timeoutMs: 300_000 });
    assert.equal(run.code, 0, run.stderr);
    const outcome = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { on: boolean; status: number; modules: number; loaded: string[] };
    assert.equal(outcome.on, false);
    assert.equal(outcome.status, 200, 'the request was served');
    assert.ok(outcome.modules > 100, `the module list was seen (${outcome.modules})`);
    assert.deepEqual(outcome.loaded, []);
  });
});
