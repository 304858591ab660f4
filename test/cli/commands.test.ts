// The CLI's domain functions against a real database (in-memory PGlite, or a fresh PostgreSQL
// database when DATABASE_URL is set).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { hashApiKey, KEY_PATTERN } from '../../src/auth/keys.ts';
import { createCredentials } from '../../src/db/credentials.ts';
import { createBroker, findBrokerBySlug } from '../../src/cli/brokers.ts';
import { createKey, listKeys, revokeKey } from '../../src/cli/keys.ts';
import { importInvoices, importServices } from '../../src/cli/imports.ts';
import { DEMO_SLUG, runDemo } from '../../src/cli/demo.ts';
import { CliError, ImportRowError } from '../../src/cli/errors.ts';

let db: TestDatabase;
let prisma: PrismaClient;
const credentials = createCredentials(randomBytes(32));

before(async () => {
  db = await createTestDatabase();
  prisma = db.prisma;
});
after(async () => {
  await db?.drop();
});

describe('brokers', () => {
  test('slug derived from the name, made unique; explicit slug must be free', async () => {
    const a = await createBroker(prisma, { name: 'Zeta Hosting', email: 'ops@zeta.example' });
    assert.deepEqual(Object.keys(a), ['id', 'slug', 'name', 'approval']);
    assert.match(a.id, /^brk_[A-Za-z0-9]{20}$/);
    assert.equal(a.slug, 'zeta-hosting');
    assert.equal(a.approval, 'manual');
    const b = await createBroker(prisma, { name: 'Zeta  Hosting!', email: 'ops@zeta.example', approval: 'automatic' });
    assert.equal(b.slug, 'zeta-hosting-2');
    assert.equal(b.approval, 'automatic');
    await assert.rejects(createBroker(prisma, { name: 'Other', email: 'o@x.example', slug: 'zeta-hosting' }), /already exists/);
    await assert.rejects(createBroker(prisma, { name: 'Other', email: 'o@x.example', slug: 'Not OK' }), /--slug/);
    await assert.rejects(createBroker(prisma, { name: 'Other', email: 'nope' }), /--email/);
    await assert.rejects(createBroker(prisma, { name: '   ', email: 'o@x.example' }), /--name/);
    await assert.rejects(createBroker(prisma, { name: '!!!', email: 'o@x.example' }), /pass --slug/);
  });
});

describe('keys', () => {
  let slug: string;
  before(async () => {
    slug = (await createBroker(prisma, { name: 'Key Broker', email: 'keys@example.com' })).slug;
  });

  test('only the hash is stored; defaults: unrestricted, 120 per minute, no expiry', async () => {
    const k = await createKey(prisma, { brokerSlug: slug, mode: 'live', scopes: ['services:read', 'services:read', 'reports:generate'] });
    assert.deepEqual(Object.keys(k), ['id', 'key', 'mode', 'scopes', 'prefix']);
    assert.match(k.key, KEY_PATTERN);
    assert.ok(k.key.startsWith('sk_live_'));
    assert.equal(k.prefix, k.key.slice(0, 12));
    assert.deepEqual(k.scopes, ['services:read', 'reports:generate']);
    const row = await prisma.apiKey.findUniqueOrThrow({ where: { id: k.id } });
    assert.equal(row.keyHash, hashApiKey(k.key));
    assert.equal(row.last4, k.key.slice(-4));
    assert.ok(!JSON.stringify(row).includes(k.key), 'the clear key is nowhere in the row');
    assert.equal(row.ipRestricted, false);
    assert.deepEqual(row.ipWhitelist, []);
    assert.equal(row.rateLimit, 120);
    assert.equal(row.expiresAt, null);
    assert.equal(row.name, 'live key');
  });

  test('--restrict-ip alone: restricted with an empty whitelist; a whitelist restricts too', async () => {
    const closed = await createKey(prisma, { brokerSlug: slug, mode: 'test', scopes: ['admin:full'], restrictIp: true });
    const rowClosed = await prisma.apiKey.findUniqueOrThrow({ where: { id: closed.id } });
    assert.equal(rowClosed.ipRestricted, true);
    assert.deepEqual(rowClosed.ipWhitelist, []);
    const listed = await createKey(prisma, {
      brokerSlug: slug,
      mode: 'test',
      scopes: ['admin:full'],
      ipWhitelist: ['203.0.113.7', '2001:DB8::/32'],
      rateLimit: 30,
      expiresAt: new Date('2099-01-01T00:00:00Z'),
      name: 'CI key',
    });
    const rowListed = await prisma.apiKey.findUniqueOrThrow({ where: { id: listed.id } });
    assert.equal(rowListed.ipRestricted, true);
    assert.deepEqual(rowListed.ipWhitelist, ['203.0.113.7', '2001:db8::/32']);
    assert.equal(rowListed.rateLimit, 30);
    assert.equal(rowListed.name, 'CI key');
    assert.equal(rowListed.expiresAt?.toISOString(), '2099-01-01T00:00:00.000Z');
  });

  test('refused: unknown broker, bad scope, bad CIDR, bad rate limit, past expiry, bad mode', async () => {
    const base = { brokerSlug: slug, mode: 'test' as const, scopes: ['admin:full'] };
    await assert.rejects(createKey(prisma, { ...base, brokerSlug: 'no-such-broker' }), /unknown broker "no-such-broker"/);
    await assert.rejects(createKey(prisma, { ...base, scopes: ['admin'] }), /unknown scope "admin"/);
    await assert.rejects(createKey(prisma, { ...base, ipWhitelist: ['10.0.0.0/40'] }), /--ip-whitelist/);
    await assert.rejects(createKey(prisma, { ...base, rateLimit: 0 }), /--rate-limit/);
    await assert.rejects(createKey(prisma, { ...base, expiresAt: new Date('2020-01-01T00:00:00Z') }), /in the future/);
    await assert.rejects(createKey(prisma, { ...base, mode: 'prod' as never }), /--mode/);
  });

  test('list: every key of the broker with ISO dates or null; revoke is idempotent', async () => {
    const other = await createBroker(prisma, { name: 'Someone Else', email: 'else@example.com' });
    await createKey(prisma, { brokerSlug: other.slug, mode: 'live', scopes: ['admin:full'] });
    const k = await createKey(prisma, { brokerSlug: slug, mode: 'live', scopes: ['requests:read'], expiresAt: new Date('2098-05-06T07:08:09.123Z') });
    const used = new Date('2026-01-02T03:04:05.006Z');
    await prisma.apiKey.update({ where: { id: k.id }, data: { lastUsedAt: used } });

    const { keys } = await listKeys(prisma, slug);
    assert.ok(keys.length >= 4);
    const mine = keys.find((x) => x.id === k.id)!;
    assert.deepEqual(Object.keys(mine), [
      'id', 'name', 'mode', 'scopes', 'prefix', 'last4', 'active', 'expires_at', 'last_used_at', 'ip_restricted', 'ip_whitelist', 'rate_limit',
    ]);
    assert.equal(mine.expires_at, '2098-05-06T07:08:09.123Z');
    assert.equal(mine.last_used_at, used.toISOString());
    assert.equal(mine.active, true);
    assert.ok(keys.every((x) => x.prefix.length === 12 && x.last4.length === 4));
    assert.ok(keys.some((x) => x.expires_at === null && x.last_used_at === null));

    assert.deepEqual(await revokeKey(prisma, k.id), { id: k.id, active: false });
    const row = await prisma.apiKey.findUniqueOrThrow({ where: { id: k.id } });
    assert.equal(row.active, false);
    assert.ok(row.revokedAt);
    assert.deepEqual(await revokeKey(prisma, k.id), { id: k.id, active: false });
    assert.equal((await prisma.apiKey.findUniqueOrThrow({ where: { id: k.id } })).revokedAt?.getTime(), row.revokedAt.getTime());
    assert.equal((await listKeys(prisma, slug)).keys.find((x) => x.id === k.id)!.active, false);
    await assert.rejects(revokeKey(prisma, 'key_doesnotexist'), /unknown key/);
    await assert.rejects(listKeys(prisma, 'no-such-broker'), CliError);
  });
});

describe('invoice import', () => {
  let slug: string;
  before(async () => {
    slug = (await createBroker(prisma, { name: 'Invoice Broker', email: 'inv@example.com' })).slug;
  });
  const count = async () => prisma.invoice.count({ where: { broker: { slug } } });
  const inv = (n: number, extra: Record<string, unknown> = {}) => ({
    number: `INV-${n}`,
    service_number: String(100000000 + n),
    amount: '1234567890.1',
    currency: 'eur',
    status: 'overdue',
    date: '2024-02-29',
    ...extra,
  });

  test('imports exact amounts and plain dates', async () => {
    assert.deepEqual(await importInvoices(prisma, slug, [inv(1), inv(2, { amount: 0.07, status: 'refunded' }), inv(3, { amount: '999999999999.99' })]), { imported: 3 });
    const rows = await prisma.invoice.findMany({ where: { broker: { slug } }, orderBy: { number: 'asc' } });
    assert.deepEqual(rows.map((r) => r.amount.toFixed(2)), ['1234567890.10', '0.07', '999999999999.99']);
    assert.deepEqual(rows.map((r) => r.currency), ['EUR', 'EUR', 'EUR']);
    assert.equal(rows[0]!.date.toISOString(), '2024-02-29T00:00:00.000Z');
    assert.equal(rows[1]!.status, 'refunded');
    assert.equal(rows[0]!.serviceNumber, 100000001);
  });

  test('a bad row rejects the whole file: row number and field, nothing imported', async () => {
    const before = await count();
    await assert.rejects(importInvoices(prisma, slug, [inv(10), inv(11), inv(12, { date: '2023-02-29' })]), (e: unknown) => {
      assert.ok(e instanceof ImportRowError);
      assert.equal(e.message, 'row 3, field "date": "2023-02-29" is not a real date');
      return true;
    });
    assert.equal(await count(), before);
  });

  test('a number the broker already has rejects the file after the insert began, nothing kept', async () => {
    const before = await count();
    const rows = Array.from({ length: 12_000 }, (_, i) => inv(1000 + i));
    rows.push(inv(2)); // imported by the first test; in the second chunk
    await assert.rejects(importInvoices(prisma, slug, rows), (e: unknown) => {
      assert.ok(e instanceof ImportRowError, String(e));
      assert.equal(e.message, 'row 12001, field "number": broker "invoice-broker" already has an invoice "INV-2"');
      return true;
    });
    assert.equal(await count(), before);
  });

  test('the same numbers are fine for another broker; unknown broker refused', async () => {
    const other = await createBroker(prisma, { name: 'Second Invoice Broker', email: 'inv2@example.com' });
    assert.deepEqual(await importInvoices(prisma, other.slug, [inv(1)]), { imported: 1 });
    assert.deepEqual(await importInvoices(prisma, other.slug, []), { imported: 0 });
    await assert.rejects(importInvoices(prisma, 'nobody', [inv(1)]), /unknown broker "nobody"/);
  });
});

describe('service import', () => {
  let slug: string;
  before(async () => {
    slug = (await createBroker(prisma, { name: 'Service Broker', email: 'svc@example.com' })).slug;
  });
  const svc = (n: number, extra: Record<string, unknown> = {}) => ({
    service_number: 200000000 + n,
    plan: 'Professional VPS',
    status: 'suspended',
    hostname: `vps${n}.example.net`,
    username: `user${n}`,
    password: `pw-${n}-secret`,
    created_at: '2025-06-01T12:00:00+02:00',
    ...extra,
  });

  test('imports with encrypted passwords; customer e-mail defaults to the broker', async () => {
    const start = Date.now();
    assert.deepEqual(
      await importServices(prisma, slug, [svc(1), svc(2, { plan: 'basic vps', customer_email: 'c@example.org', customer_name: 'C', billing_cycle: 'quarterly', created_at: null })], { credentials }),
      { imported: 2 },
    );
    const rows = await prisma.service.findMany({ where: { broker: { slug } }, include: { plan: true }, orderBy: { serviceNumber: 'asc' } });
    assert.equal(rows.length, 2);
    const [a, b] = rows as [(typeof rows)[0], (typeof rows)[0]];
    assert.equal(a.serviceNumber, 200000001);
    assert.equal(a.plan.name, 'Professional VPS');
    assert.equal(a.status, 'suspended');
    assert.equal(a.customerEmail, 'svc@example.com');
    assert.equal(a.customerName, null);
    assert.equal(a.billingCycle, 'monthly');
    assert.equal(a.createdAt.toISOString(), '2025-06-01T10:00:00.000Z');
    assert.ok(a.updatedAt.getTime() >= start - 1000, 'updated_at is the import time');
    assert.notEqual(a.passwordEnc, 'pw-1-secret');
    assert.equal(credentials.decrypt(a.passwordEnc), 'pw-1-secret');
    assert.equal(b.plan.name, 'Basic VPS');
    assert.equal(b.customerEmail, 'c@example.org');
    assert.equal(b.customerName, 'C');
    assert.equal(b.billingCycle, 'quarterly');
    assert.ok(b.createdAt.getTime() >= start - 1000);
    assert.equal(credentials.decrypt(b.passwordEnc), 'pw-2-secret');
  });

  test('bad plan or a service number taken (by any broker): row named, nothing imported', async () => {
    const before = await prisma.service.count();
    await assert.rejects(importServices(prisma, slug, [svc(10), svc(11, { plan: 'Gold' })], { credentials }), /row 2, field "plan": must be a catalogue plan/);
    const other = await createBroker(prisma, { name: 'Other Service Broker', email: 'svc2@example.com' });
    await assert.rejects(importServices(prisma, other.slug, [svc(20), svc(1)], { credentials }), /row 2, field "service_number": service 200000001 already exists/);
    assert.equal(await prisma.service.count(), before);
  });
});

describe('demo', () => {
  test('first run creates the broker and sample data; later runs only issue new keys', async () => {
    const first = await runDemo(prisma, { credentials });
    assert.equal(first.created, true);
    assert.deepEqual(Object.keys(first.result), ['broker', 'test_key', 'live_key']);
    assert.equal(first.result.broker, DEMO_SLUG);
    assert.match(first.result.test_key, /^sk_test_/);
    assert.match(first.result.live_key, /^sk_live_/);

    const broker = await findBrokerBySlug(prisma, DEMO_SLUG);
    assert.equal(broker.approval, 'automatic');
    const services = await prisma.service.findMany({ where: { brokerId: broker.id }, include: { plan: true } });
    assert.ok(services.length >= 4);
    assert.ok(new Set(services.map((s) => s.status)).size >= 3, 'services across statuses');
    assert.ok(new Set(services.map((s) => s.plan.name)).size >= 3, 'services across plans');
    assert.ok(services.every((s) => s.serviceNumber >= 100000000 && s.serviceNumber <= 999999999));
    assert.ok(services.every((s) => credentials.decrypt(s.passwordEnc).length >= 12));
    // Its own two, and the contract examples' REQ-000044 (demo-examples.test.ts).
    const pending = await prisma.serviceRequest.count({ where: { brokerId: broker.id, status: 'pending' } });
    assert.equal(pending, 3);
    const invoices = await prisma.invoice.findMany({ where: { brokerId: broker.id } });
    assert.ok(new Set(invoices.map((i) => i.status)).size >= 4, 'invoices across statuses');
    assert.ok(new Set(invoices.map((i) => i.date.toISOString().slice(0, 7))).size >= 3, 'invoices across months');
    // Its two working keys, and one revoked example key with no scopes (the request logs' examples name it).
    const keys = await prisma.apiKey.findMany({ where: { brokerId: broker.id, revokedAt: null } });
    assert.deepEqual(keys.map((k) => k.scopes), [['admin:full'], ['admin:full']]);
    assert.equal(await prisma.apiKey.count({ where: { brokerId: broker.id, revokedAt: { not: null } } }), 1);
    assert.ok(keys.some((k) => k.keyHash === hashApiKey(first.result.test_key)));

    const second = await runDemo(prisma, { credentials });
    assert.equal(second.created, false);
    assert.notEqual(second.result.test_key, first.result.test_key);
    assert.equal(await prisma.broker.count({ where: { slug: DEMO_SLUG } }), 1);
    assert.equal(await prisma.service.count({ where: { brokerId: broker.id } }), services.length);
    assert.equal(await prisma.apiKey.count({ where: { brokerId: broker.id } }), 5);
  });
});
