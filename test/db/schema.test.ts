/**
 * The migrated database fits the generated client: every model can be written and read back,
 * migrations are idempotent and atomic, the plan catalogue is seeded and the hand-written
 * partial unique index holds. Runs on in-memory PGlite, or on PostgreSQL when DATABASE_URL is
 * set (in a database created and dropped for this run).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Prisma } from '../../generated/prisma/client.ts';
import { MIGRATIONS_DIR, applyMigrations } from '../../src/db/migrate.ts';
import { createTestDatabase, migrationTargetOf, type TestDatabase } from '../helpers/db.ts';

describe(`database schema (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDatabase;
  before(async () => {
    t = await createTestDatabase();
  });
  after(async () => {
    await t?.drop();
  });

  it('records the migrations like migrate deploy and applies nothing the second time', async () => {
    const rows = await t.prisma.$queryRaw<Array<{ migration_name: string; finished_at: Date | null; rolled_back_at: Date | null }>>`
      SELECT migration_name, finished_at, rolled_back_at FROM _prisma_migrations ORDER BY migration_name`;
    assert.ok(rows.length >= 1);
    for (const r of rows) {
      assert.ok(r.finished_at instanceof Date, `${r.migration_name} finished`);
      assert.equal(r.rolled_back_at, null);
    }
    assert.deepEqual(await applyMigrations(migrationTargetOf(t)), []);
    assert.deepEqual(await applyMigrations(migrationTargetOf(t)), []);
  });

  it('seeds the plan catalogue, lowest tier first, with decimal prices', async () => {
    const plans = await t.prisma.plan.findMany({ orderBy: { tier: 'asc' } });
    assert.deepEqual(
      plans.map((p) => [p.name, p.tier]),
      [['Basic VPS', 1], ['Standard VPS', 2], ['Professional VPS', 3], ['Enterprise VPS', 4]],
    );
    for (const p of plans) {
      assert.ok(p.monthlyPrice instanceof Prisma.Decimal, 'price is a Decimal');
      assert.ok(p.monthlyPrice.gt(0));
      assert.equal(p.currency, 'USD');
    }
  });

  it('writes and reads back every model', async () => {
    const written = new Set<string>();
    const at = new Date('2025-01-15T10:20:30.123Z');
    const basic = await t.prisma.plan.findUniqueOrThrow({ where: { name: 'Basic VPS' } });
    const pro = await t.prisma.plan.findUniqueOrThrow({ where: { name: 'Professional VPS' } });
    written.add('Plan');

    const broker = await t.prisma.broker.create({
      data: { id: 'brk_test1', slug: 'acme', name: 'Acme Hosting', email: 'ops@acme.test', approval: 'automatic', createdAt: at },
    });
    assert.deepEqual(await t.prisma.broker.findUnique({ where: { slug: 'acme' } }), broker);
    assert.equal(broker.createdAt.toISOString(), at.toISOString(), 'timestamptz(3) keeps milliseconds, UTC');
    assert.equal((await t.prisma.broker.create({ data: { id: 'brk_test2', slug: 'b2', name: 'B2', email: 'b2@x.test' } })).approval, 'manual');
    written.add('Broker');

    const key = await t.prisma.apiKey.create({
      data: {
        id: 'key_test1',
        brokerId: broker.id,
        name: 'CI key',
        mode: 'test',
        keyHash: 'a'.repeat(64),
        prefix: 'sk_test_abcd',
        last4: 'wxyz',
        scopes: ['services:read', 'services:write'],
        ipRestricted: true,
        ipWhitelist: ['203.0.113.7', '2001:db8::/32'],
        expiresAt: new Date('2030-01-01T00:00:00.000Z'),
      },
    });
    const keyBack = await t.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: 'a'.repeat(64) } });
    assert.deepEqual(keyBack, key);
    assert.deepEqual(keyBack.scopes, ['services:read', 'services:write']);
    assert.equal(keyBack.rateLimit, 120);
    assert.equal(keyBack.active, true);
    written.add('ApiKey');

    const service = await t.prisma.service.create({
      data: {
        serviceNumber: 123456789,
        brokerId: broker.id,
        planId: basic.id,
        status: 'active',
        hostname: 'web1.acme.test',
        customerEmail: 'c@acme.test',
        customerName: null,
        billingCycle: 'quarterly',
        username: 'root',
        passwordEnc: 'v1:iv:tag:ct',
      },
      include: { plan: true },
    });
    assert.equal(service.plan.name, 'Basic VPS');
    const serviceBack = await t.prisma.service.findUniqueOrThrow({ where: { serviceNumber: 123456789 } });
    assert.equal(serviceBack.billingCycle, 'quarterly');
    assert.equal(serviceBack.customerName, null);
    const before = serviceBack.updatedAt;
    await new Promise((r) => setTimeout(r, 5));
    const touched = await t.prisma.service.update({ where: { id: service.id }, data: { status: 'suspended' } });
    assert.ok(touched.updatedAt > before, '@updatedAt moves');
    written.add('Service');

    const r1 = await t.prisma.serviceRequest.create({
      data: {
        brokerId: broker.id,
        serviceId: service.id,
        type: 'upgrade',
        currentPlanId: basic.id,
        requestedPlanId: pro.id,
        apiKeyId: key.id,
      },
      include: { currentPlan: true, requestedPlan: true, service: true, apiKey: true },
    });
    assert.equal(r1.status, 'pending');
    assert.equal(r1.source, 'api');
    assert.equal(r1.requestedPlan?.name, 'Professional VPS');
    const r2 = await t.prisma.serviceRequest.create({
      data: {
        brokerId: broker.id,
        type: 'create',
        hostname: 'new.acme.test',
        customerEmail: 'n@acme.test',
        billingCycle: 'annually',
        requestedPlanId: basic.id,
        source: 'portal',
      },
    });
    assert.ok(r2.id > r1.id, 'request ids (REQ numbers) come from a sequence');
    const r3 = await t.prisma.serviceRequest.update({
      where: { id: r1.id },
      data: { status: 'denied', denialReason: 'no capacity', decidedAt: at },
    });
    assert.deepEqual(await t.prisma.serviceRequest.findUniqueOrThrow({ where: { id: r1.id } }), r3);
    written.add('ServiceRequest');

    const invoice = await t.prisma.invoice.create({
      data: {
        brokerId: broker.id,
        number: 'INV-2024-0001',
        serviceNumber: 123456789,
        amount: new Prisma.Decimal('12345678.91'),
        currency: 'EUR',
        status: 'overdue',
        date: new Date('2024-02-29'),
      },
    });
    const invoiceBack = await t.prisma.invoice.findUniqueOrThrow({
      where: { brokerId_number: { brokerId: broker.id, number: 'INV-2024-0001' } },
    });
    assert.deepEqual(invoiceBack, invoice);
    assert.equal(invoiceBack.amount.toFixed(2), '12345678.91', 'money is exact');
    assert.equal(invoiceBack.date.toISOString(), '2024-02-29T00:00:00.000Z', '@db.Date round-trips as a UTC date');
    await assert.rejects(
      t.prisma.invoice.create({
        data: { brokerId: broker.id, number: 'INV-2024-0001', serviceNumber: 1, amount: 1, currency: 'EUR', status: 'paid', date: new Date('2024-01-01') },
      }),
      (e: unknown) => (e as { code?: string }).code === 'P2002',
      'invoice number is unique per broker',
    );
    written.add('Invoice');

    const log = await t.prisma.apiLog.create({
      data: {
        apiKeyId: key.id,
        brokerId: broker.id,
        mode: 'test',
        method: 'GET',
        path: '/api/v1/services',
        status: 200,
        ip: '2001:db8::1',
        durationMs: 12,
        requestId: 'req_abc',
        at,
      },
    });
    assert.equal(typeof log.id, 'bigint');
    assert.deepEqual(await t.prisma.apiLog.findFirstOrThrow({ where: { apiKeyId: key.id }, orderBy: { at: 'desc' } }), log);
    written.add('ApiLog');
    // The insert's statement trigger keeps the hourly roll-up getRequestStats reads (migration 20261202130000_stats).
    const hour = new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000);
    assert.deepEqual(
      await t.prisma.apiLogHourCount.findMany({ where: { brokerId: broker.id } }),
      [{ brokerId: broker.id, mode: 'test', hour, statusClass: 2, operation: '', requests: 1 }],
    );
    written.add('ApiLogHourCount');
    const histogram = await t.prisma.apiLogHour.findUniqueOrThrow({ where: { brokerId_mode_hour: { brokerId: broker.id, mode: 'test', hour } } });
    assert.equal(histogram.durations.reduce((a, b) => a + b, 0), 1, 'one duration counted');
    written.add('ApiLogHour');

    const run = await t.prisma.reportRun.create({
      data: {
        brokerId: broker.id,
        apiKeyId: key.id,
        reportType: 'invoices',
        startDate: new Date('2024-01-01'),
        endDate: new Date('2024-12-31'),
        totals: { total_invoices: 12, paid_invoices: 9, unpaid_invoices: 3 },
        recipients: {
          create: [
            { email: 'a@acme.test', status: 'sent', messageId: '<m1@x>', attempts: 1, sentAt: at },
            { email: 'b@acme.test', status: 'failed', error: '550 no such user', attempts: 3 },
          ],
        },
      },
      include: { recipients: { orderBy: { email: 'asc' } } },
    });
    assert.equal(run.status, 'queued');
    assert.deepEqual(run.totals, { total_invoices: 12, paid_invoices: 9, unpaid_invoices: 3 });
    const done = await t.prisma.reportRun.update({
      where: { id: run.id },
      data: { status: 'completed', recipientsSent: 1, recipientsFailed: 1, completedAt: at, statusFilter: null },
      include: { recipients: { orderBy: { email: 'asc' } } },
    });
    assert.deepEqual(
      await t.prisma.reportRun.findUniqueOrThrow({ where: { id: run.id }, include: { recipients: { orderBy: { email: 'asc' } } } }),
      done,
    );
    assert.deepEqual(done.recipients.map((r) => [r.email, r.status, r.attempts]), [['a@acme.test', 'sent', 1], ['b@acme.test', 'failed', 3]]);
    written.add('ReportRun');
    written.add('ReportRecipient');

    // A stored workbook (chunks of one build), a recipient's link and a download through it.
    const build = '00000000-0000-4000-8000-000000000001';
    await t.prisma.reportRun.update({ where: { id: run.id }, data: { workbookBuild: build, workbookBytes: 6, workbookChunks: 2, workbookSha256: 'a'.repeat(64), delivery: 'link' } });
    await t.prisma.reportWorkbookChunk.createMany({
      data: [
        { reportRunId: run.id, build, seq: 1, data: Buffer.from('def') },
        { reportRunId: run.id, build, seq: 0, data: Buffer.from('abc') },
      ],
    });
    const chunks = await t.prisma.reportWorkbookChunk.findMany({ where: { reportRunId: run.id, build }, orderBy: { seq: 'asc' } });
    assert.equal(Buffer.concat(chunks.map((c) => Buffer.from(c.data))).toString(), 'abcdef');
    await assert.rejects(
      t.prisma.reportWorkbookChunk.create({ data: { reportRunId: run.id, build, seq: 0, data: Buffer.from('x') } }),
      'one chunk per run, build and position',
    );
    const recipientId = done.recipients[0]!.id;
    const expiresAt = new Date(at.getTime() + 3600_000);
    const link = await t.prisma.reportLink.create({ data: { tokenHash: 'b'.repeat(64), reportRunId: run.id, recipientId, expiresAt } });
    assert.deepEqual(await t.prisma.reportLink.findUniqueOrThrow({ where: { tokenHash: 'b'.repeat(64) } }), link);
    const download = await t.prisma.reportDownload.create({ data: { recipientId, tokenHash: link.tokenHash, ip: '2001:db8::1' } });
    assert.equal(typeof download.id, 'bigint');
    assert.deepEqual(await t.prisma.reportDownload.findUniqueOrThrow({ where: { id: download.id } }), download);
    written.add('ReportWorkbookChunk');
    written.add('ReportLink');
    written.add('ReportDownload');

    const idem = await t.prisma.idempotencyKey.create({
      data: { apiKeyId: key.id, key: 'retry-1', fingerprint: 'f'.repeat(64), status: 'done', owner: 'o', responseStatus: 200, responseBody: '{}' },
    });
    assert.equal(typeof idem.id, 'bigint');
    assert.deepEqual(await t.prisma.idempotencyKey.findUniqueOrThrow({ where: { apiKeyId_key: { apiKeyId: key.id, key: 'retry-1' } } }), idem);
    await assert.rejects(
      t.prisma.idempotencyKey.create({ data: { apiKeyId: key.id, key: 'retry-1', fingerprint: 'g', status: 'running', owner: 'p' } }),
      'one row per API key and Idempotency-Key',
    );
    written.add('IdempotencyKey');

    const event = await t.prisma.event.create({
      data: { id: 'evt_test1', brokerId: broker.id, mode: 'live', type: 'service.updated', data: { object: { service_number: 482913570 } }, createdAt: at },
    });
    assert.equal(typeof event.seq, 'bigint', 'events are ordered by a sequence of their own');
    assert.deepEqual(await t.prisma.event.findUniqueOrThrow({ where: { id: 'evt_test1' } }), event);
    assert.equal(event.createdAt.toISOString(), at.toISOString());
    written.add('Event');
    assert.equal(event.sequence, 1n, "stamped on insert: its broker's first live event");
    assert.deepEqual(await t.prisma.eventFeed.findUniqueOrThrow({ where: { brokerId_mode: { brokerId: broker.id, mode: 'live' } } }), { brokerId: broker.id, mode: 'live', lastSequence: 1n });
    written.add('EventFeed');

    const running = await t.prisma.processRegistry.create({
      data: { id: '00000000-0000-4000-8000-000000000001', role: 'api', hostname: 'host-1', pid: 4242, settings: { PUBLIC_BASE_URL: 'https://api.example' } },
    });
    assert.deepEqual(await t.prisma.processRegistry.findUniqueOrThrow({ where: { id: running.id } }), running);
    assert.ok(running.heartbeatAt instanceof Date, 'a heartbeat from the start');
    written.add('ProcessRegistry');

    const endpoint = await t.prisma.webhookEndpoint.create({
      data: { id: 'we_test1', brokerId: broker.id, mode: 'live', url: 'https://hooks.client.example/capi', events: ['service.updated'], secret: 'v1:sealed' },
    });
    assert.equal(endpoint.status, 'enabled', 'an endpoint starts enabled');
    assert.deepEqual(endpoint.events, ['service.updated']);
    written.add('WebhookEndpoint');
    const delivery = await t.prisma.webhookDelivery.create({ data: { eventId: event.id, endpointId: endpoint.id } });
    assert.equal(delivery.status, 'pending');
    assert.ok(delivery.nextAttemptAt, 'a new delivery is due at once');
    written.add('WebhookDelivery');
    await t.prisma.webhookAttempt.create({ data: { deliveryId: delivery.id, number: 1, attemptedAt: at, statusCode: 500, durationMs: 12 } });
    await assert.rejects(
      t.prisma.webhookAttempt.create({ data: { deliveryId: delivery.id, number: 1, attemptedAt: at, error: 'timeout', durationMs: 15000 } }),
      'an attempt is recorded under its number once',
    );
    written.add('WebhookAttempt');
    const fingerprint = await t.prisma.credentialsKeyFingerprint.upsert({ where: { id: 1 }, create: { id: 1, fingerprint: 'ab'.repeat(32) }, update: {} });
    assert.ok(fingerprint.createdAt instanceof Date);
    await assert.rejects(t.prisma.credentialsKeyFingerprint.create({ data: { id: 2, fingerprint: 'cd'.repeat(32) } }), 'one row at most');
    written.add('CredentialsKeyFingerprint');
    const session = await t.prisma.consoleSession.create({
      data: { apiKeyId: key.id, startTokenHash: 'c'.repeat(64), linkExpiresAt: at },
    });
    assert.equal(session.cookieHash, null, 'a link opens its session later');
    await assert.rejects(
      t.prisma.consoleSession.create({ data: { apiKeyId: key.id, startTokenHash: 'c'.repeat(64), linkExpiresAt: at } }),
      'one session per link token',
    );
    written.add('ConsoleSession');

    assert.deepEqual([...written].sort(), Object.values(Prisma.ModelName).sort(), 'every model of the schema is covered');

    // Deleting a broker takes its data with it; API log rows stay as written, naming the broker and
    // key they were for (the log has no foreign keys: they tripled the cost of every row).
    await t.prisma.broker.delete({ where: { id: broker.id } });
    assert.equal(await t.prisma.service.count({ where: { brokerId: broker.id } }), 0);
    assert.equal(await t.prisma.reportWorkbookChunk.count({ where: { reportRunId: run.id } }), 0, 'chunks go with their run');
    assert.equal(await t.prisma.reportDownload.count({ where: { id: download.id } }), 0, 'downloads go with their recipient');
    assert.equal(await t.prisma.idempotencyKey.count({ where: { apiKeyId: key.id } }), 0, 'a key goes with its API key');
    assert.equal(await t.prisma.consoleSession.count({ where: { id: session.id } }), 0, 'a console session goes with its API key');
    assert.equal(await t.prisma.event.count({ where: { brokerId: broker.id } }), 0, 'events go with their broker');
    assert.equal(await t.prisma.webhookEndpoint.count({ where: { brokerId: broker.id } }), 0, 'endpoints go with their broker');
    assert.equal(await t.prisma.webhookAttempt.count({ where: { deliveryId: delivery.id } }), 0, 'attempts go with their delivery');
    const kept = await t.prisma.apiLog.findUniqueOrThrow({ where: { id: log.id } });
    assert.equal(kept.brokerId, broker.id);
    assert.equal(kept.apiKeyId, key.id);
  });

  it('allows one pending request per service (partial unique index)', async () => {
    const plan = await t.prisma.plan.findUniqueOrThrow({ where: { tier: 1 } });
    const broker = await t.prisma.broker.create({ data: { id: 'brk_pending', slug: 'pending', name: 'P', email: 'p@x.test' } });
    const service = await t.prisma.service.create({
      data: { serviceNumber: 222333444, brokerId: broker.id, planId: plan.id, status: 'active', hostname: 'h', customerEmail: 'c@x.test', username: 'u', passwordEnc: 'v1:a:b:c' },
    });
    const first = await t.prisma.serviceRequest.create({ data: { brokerId: broker.id, serviceId: service.id, type: 'cancel', reason: 'moving' } });
    await assert.rejects(
      t.prisma.serviceRequest.create({ data: { brokerId: broker.id, serviceId: service.id, type: 'upgrade' } }),
      (e: unknown) => (e as { code?: string }).code === 'P2002',
    );
    // Decided requests do not count, and create requests (no service yet) are not limited.
    await t.prisma.serviceRequest.update({ where: { id: first.id }, data: { status: 'approved', decidedAt: new Date() } });
    await t.prisma.serviceRequest.create({ data: { brokerId: broker.id, serviceId: service.id, type: 'upgrade' } });
    await t.prisma.serviceRequest.create({ data: { brokerId: broker.id, type: 'create' } });
    await t.prisma.serviceRequest.create({ data: { brokerId: broker.id, type: 'create' } });
    assert.equal(await t.prisma.serviceRequest.count({ where: { brokerId: broker.id, status: 'pending' } }), 3);
  });

  it('stores timestamps in UTC whatever the session time zone', async () => {
    const [row] = await t.prisma.$queryRaw<Array<{ ok: boolean }>>`
      SELECT (now() AT TIME ZONE 'UTC') IS NOT NULL AS ok`;
    assert.equal(row?.ok, true);
    const cols = await t.prisma.$queryRaw<Array<{ table_name: string; column_name: string; data_type: string }>>`
      SELECT table_name, column_name, data_type FROM information_schema.columns
      WHERE table_schema = current_schema() AND data_type LIKE 'timestamp%' AND table_name <> '_prisma_migrations'`;
    assert.ok(cols.length > 10);
    for (const c of cols) assert.equal(c.data_type, 'timestamp with time zone', `${c.table_name}.${c.column_name}`);
    const money = await t.prisma.$queryRaw<Array<{ data_type: string }>>`
      SELECT data_type FROM information_schema.columns
      WHERE table_schema = current_schema() AND data_type IN ('real', 'double precision')`;
    assert.deepEqual(money, [], 'no floats anywhere');
  });
});

describe('a failing migration leaves nothing half-applied', () => {
  let dir: string;
  let t: TestDatabase;
  before(async () => {
    t = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'capi-migrations-'));
    await cp(MIGRATIONS_DIR, dir, { recursive: true });
    await mkdir(path.join(dir, '29991231000000_broken'));
    await writeFile(
      path.join(dir, '29991231000000_broken', 'migration.sql'),
      `-- a comment; with a semicolon\nCREATE TABLE "half_done" (id int);\nINSERT INTO "half_done" VALUES (1);\nSELECT * FROM "no_such_table";\n`,
    );
  });
  after(async () => {
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('throws and rolls the whole script back', async () => {
    await assert.rejects(applyMigrations(migrationTargetOf(t), { migrationsDir: dir }), /no_such_table/);
    const [row] = await t.prisma.$queryRaw<Array<{ n: bigint | number }>>`
      SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'half_done'`;
    assert.equal(Number(row?.n), 0);
  });
});
