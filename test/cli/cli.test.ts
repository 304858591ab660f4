// The real CLI, spawned as `node --import tsx src/cli/index.ts …`: exact JSON on stdout, one-line
// errors on stderr with exit status 1. On the embedded default the first command opens the PGlite
// directory itself (no server running); the test then opens it as the server does, serving its
// socket, and every later command goes through that socket. With DATABASE_URL set, the commands
// run against a PostgreSQL database made for this test.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';
import { openCredentials } from '../../src/db/credentials.ts';
import { writingClient } from '../helpers/db.ts';
import { hashApiKey, KEY_PATTERN } from '../../src/auth/keys.ts';
import { runFile, type FileRun } from '../helpers/run-file.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-cli-'));
const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir };
delete env.DATABASE_URL;
delete env.CREDENTIALS_KEY;
let testDb: TestDatabase | undefined;
let server: Database | undefined;
let prisma: PrismaClient;

const cli = (...args: string[]): Promise<FileRun> => runFile(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args], { cwd: ROOT, env, timeoutMs: 90_000 });

/** Exit 0 and exactly one JSON object on stdout; returns it. */
function json(run: FileRun): Record<string, unknown> {
  assert.equal(run.code, 0, `exit ${run.code}; stderr: ${run.stderr}`);
  assert.match(run.stdout, /^\{.*\}\n$/, `stdout is one JSON line: ${JSON.stringify(run.stdout)}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/** Exit 1, nothing on stdout, one error line on stderr matching `pattern` (after the database line, once it was opened). */
function failed(run: FileRun, pattern: RegExp): void {
  assert.equal(run.code, 1, `exit ${run.code}; stdout: ${run.stdout}; stderr: ${run.stderr}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /^(database: [^\n]+\n)?error: [^\n]+\n$/, `one error line on stderr: ${JSON.stringify(run.stderr)}`);
  assert.match(run.stderr, pattern);
}

/** The database line on stderr: PostgreSQL (without its password), or the embedded one and how it was reached. */
function usedDatabase(run: FileRun, embedded: 'opened by this command' | 'through the running server'): void {
  const line = /^database: [^\n]+$/m.exec(run.stderr)?.[0];
  assert.ok(line, `a database line on stderr: ${JSON.stringify(run.stderr)}`);
  if (testDb) {
    assert.match(line, /^database: PostgreSQL postgres(ql)?:\/\/.* \(DATABASE_URL\)$/);
    const password = new URL(testDb.databaseUrl ?? "postgresql://x").password;
    if (password) assert.ok(!line.includes(password));
  } else {
    assert.ok(line.startsWith(`database: embedded PGlite in ${path.join(dataDir, 'db')}, ${embedded}`), line);
  }
}

let brokerSlug: string;

before(async () => {
  if (process.env.DATABASE_URL) {
    testDb = await createTestDatabase();
    env.DATABASE_URL = testDb.databaseUrl;
    prisma = testDb.prisma;
  }
});

after(async () => {
  await server?.close();
  await testDb?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

test('brokers create (no server running: the CLI opens the database itself)', async () => {
  const run = await cli('brokers', 'create', '--name', 'Acme Hosting, Inc.', '--email', 'ops@acme.example', '--json');
  const out = json(run);
  usedDatabase(run, 'opened by this command');
  assert.deepEqual(Object.keys(out), ['id', 'slug', 'name', 'approval']);
  assert.equal(out.slug, 'acme-hosting-inc');
  assert.equal(out.name, 'Acme Hosting, Inc.');
  assert.equal(out.approval, 'manual');
  brokerSlug = out.slug as string;
  if (!testDb) {
    // From here on the database is open in this process, as the server holds it, and served on
    // its socket: the CLI must go through that.
    server = await openDatabase({ dataDir });
    prisma = writingClient(server.prisma);
  }
  assert.equal((await prisma.broker.findUniqueOrThrow({ where: { slug: brokerSlug } })).id, out.id);
});

test('--json is accepted before the command words too', async () => {
  const run = await cli('--json', 'brokers', 'create', '--name', 'Flag First', '--email', 'ops@flag.example');
  const out = json(run);
  usedDatabase(run, 'through the running server');
  assert.deepEqual(Object.keys(out), ['id', 'slug', 'name', 'approval']);
  assert.equal(out.slug, 'flag-first');
});

test('keys create, list (JSON and human) and revoke', async () => {
  const created = json(
    await cli(
      'keys', 'create', '--broker', brokerSlug, '--mode', 'test', '--scopes', 'services:read,requests:write',
      '--name', 'Portal', '--ip-whitelist', '203.0.113.0/24,2001:db8::1', '--rate-limit', '60',
      '--expires-at', '2099-12-31T23:59:59Z', '--json',
    ),
  );
  assert.deepEqual(Object.keys(created), ['id', 'key', 'mode', 'scopes', 'prefix']);
  assert.match(created.key as string, KEY_PATTERN);
  assert.equal(created.mode, 'test');
  assert.deepEqual(created.scopes, ['services:read', 'requests:write']);
  assert.equal(created.prefix, (created.key as string).slice(0, 12));
  const row = await prisma.apiKey.findUniqueOrThrow({ where: { id: created.id as string } });
  assert.equal(row.keyHash, hashApiKey(created.key as string));

  const listed = json(await cli('keys', 'list', '--broker', brokerSlug, '--json'));
  assert.deepEqual(Object.keys(listed), ['keys']);
  assert.deepEqual(listed.keys, [
    {
      id: created.id,
      name: 'Portal',
      mode: 'test',
      scopes: ['services:read', 'requests:write'],
      prefix: created.prefix,
      last4: (created.key as string).slice(-4),
      active: true,
      expires_at: '2099-12-31T23:59:59.000Z',
      last_used_at: null,
      ip_restricted: true,
      ip_whitelist: ['203.0.113.0/24', '2001:db8::1'],
      rate_limit: 60,
    },
  ]);

  const human = await cli('keys', 'list', '--broker', brokerSlug);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, new RegExp(`${created.id}.*${created.prefix}\\.\\.\\.${(created.key as string).slice(-4)}.*active`));
  assert.ok(!human.stdout.includes(created.key as string), 'the key is never shown again');

  const revoked = json(await cli('keys', 'revoke', created.id as string, '--json'));
  assert.deepEqual(revoked, { id: created.id, active: false });
  assert.equal((await prisma.apiKey.findUniqueOrThrow({ where: { id: created.id as string } })).active, false);
});

test('keys create refuses an unknown broker, a bad scope, a bad CIDR and a bad date', async () => {
  const base = ['keys', 'create', '--mode', 'live', '--json'];
  const [unknown, scope, cidr, date] = await Promise.all([
    cli(...base, '--broker', 'no-such-broker', '--scopes', 'admin:full'),
    cli(...base, '--broker', brokerSlug, '--scopes', 'services:read,services:delete'),
    cli(...base, '--broker', brokerSlug, '--scopes', 'admin:full', '--ip-whitelist', '10.0.0.0/33'),
    cli(...base, '--broker', brokerSlug, '--scopes', 'admin:full', '--expires-at', '2030-02-30'),
  ]);
  failed(unknown, /unknown broker "no-such-broker"/);
  failed(scope, /unknown scope "services:delete"/);
  failed(cidr, /--ip-whitelist: "10\.0\.0\.0\/33"/);
  failed(date, /--expires-at .*2030-02-30/);
  assert.equal(await prisma.apiKey.count({ where: { broker: { slug: brokerSlug } } }), 1);
});

test('invoices import: CSV all in; a malformed row rejects the whole file', async () => {
  const good = path.join(dataDir, 'invoices.csv');
  writeFileSync(
    good,
    'number,service_number,amount,currency,status,date\n' +
      'INV-1,100000001,19.99,USD,paid,2026-01-01\n' +
      '"INV-2, credit",100000001,0.10,usd,refunded,2026-02-01\n' +
      'INV-3,100000002,1000000.00,EUR,overdue,2024-02-29\n',
  );
  assert.deepEqual(json(await cli('invoices', 'import', '--broker', brokerSlug, '--file', good, '--json')), { imported: 3 });
  const amounts = (await prisma.invoice.findMany({ where: { broker: { slug: brokerSlug } }, orderBy: { number: 'asc' } })).map((i) => i.amount.toFixed(2));
  assert.deepEqual(amounts, ['19.99', '0.10', '1000000.00']);

  const bad = path.join(dataDir, 'invoices.json');
  writeFileSync(
    bad,
    JSON.stringify([
      { number: 'INV-10', service_number: 100000001, amount: '5.00', currency: 'USD', status: 'paid', date: '2026-03-01' },
      { number: 'INV-11', service_number: 100000001, amount: '5.00', currency: 'USD', status: 'paid', date: '2026-03-01' },
      { number: 'INV-12', service_number: 100000001, amount: '5.001', currency: 'USD', status: 'paid', date: '2026-03-01' },
    ]),
  );
  failed(await cli('invoices', 'import', '--broker', brokerSlug, '--file', bad, '--json'), /row 3, field "amount": has more than 2 decimals/);
  assert.equal(await prisma.invoice.count({ where: { broker: { slug: brokerSlug } } }), 3, 'nothing imported');
});

test('services import: passwords stored encrypted with the server key under $DATA_DIR', async () => {
  const file = path.join(dataDir, 'services.json');
  writeFileSync(
    file,
    JSON.stringify([
      { service_number: 300000001, plan: 'Standard VPS', status: 'active', hostname: 'a.example.com', username: 'root', password: 'correct horse', created_at: '2025-01-01T00:00:00Z' },
      { service_number: 300000002, plan: 'Enterprise VPS', status: 'cancelled', hostname: 'b.example.com', username: 'admin', password: 'battery staple', created_at: '2025-02-01' },
    ]),
  );
  assert.deepEqual(json(await cli('services', 'import', '--broker', brokerSlug, '--file', file, '--json')), { imported: 2 });
  const credentials = await openCredentials({ dataDir });
  const s = await prisma.service.findUniqueOrThrow({ where: { serviceNumber: 300000001 } });
  assert.equal(credentials.decrypt(s.passwordEnc), 'correct horse');
});

test('demo: once, then a fresh pair of keys for the same broker', async () => {
  const first = json(await cli('demo', '--json'));
  assert.deepEqual(Object.keys(first), ['broker', 'test_key', 'live_key']);
  assert.match(first.test_key as string, /^sk_test_[A-Za-z0-9]{32}$/);
  assert.match(first.live_key as string, /^sk_live_[A-Za-z0-9]{32}$/);
  const again = await cli('demo', '--json');
  const second = json(again);
  assert.equal(second.broker, first.broker);
  assert.notEqual(second.test_key, first.test_key);
  assert.match(again.stderr, /already exists/);
  assert.equal(await prisma.broker.count({ where: { slug: first.broker as string } }), 1);
  // Two pairs of keys, and the demo's one revoked example key (its request logs name it), made once.
  assert.equal(await prisma.apiKey.count({ where: { broker: { slug: first.broker as string } } }), 5);
  assert.equal(await prisma.apiKey.count({ where: { broker: { slug: first.broker as string }, revokedAt: { not: null } } }), 1);
});
