/**
 * The process registry (src/ops/process-registry.ts) on a test database: a process that disagrees
 * with a live one on a shared setting is refused, naming the setting and the value in use; a
 * stale row does not count; `workers_alive` counts the live ones by role. Other processes are
 * rows written here as another host's (this process's own rows count as an earlier run's).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { registry } from '../../src/ops/metrics.ts';
import {
  disagreement,
  refreshWorkersAlive,
  registerProcess,
  SetupRefusedError,
  sharedSettingsOf,
  type RegisteredProcess,
} from '../../src/ops/process-registry.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const logger = createLogger('silent');
const REDIS = 'redis://redis.internal:6379/0';
const config = loadConfig({ PUBLIC_BASE_URL: 'https://api.example.com', SMTP_URL: 'smtp://u:secret@mail.internal:587' });

describe('disagreement', () => {
  const other = (role: string, settings: Record<string, string>): RegisteredProcess => ({ id: randomUUID(), role, hostname: 'h2', pid: 7, settings, ageMs: 3000 });
  const mine = sharedSettingsOf('all', config, REDIS);

  test('names the setting, both values and the live process', () => {
    const message = disagreement('api', mine, [other('worker', { ...mine, REDIS_URL: 'redis://redis.internal:6379/3' })]);
    assert.equal(
      message,
      'REDIS_URL is redis://redis.internal:6379/0 here, but the live worker process 7 on h2 (heartbeat 3 s ago) uses redis://redis.internal:6379/3: every process on one database needs the same REDIS_URL; to change it, stop every process first (docs/running-apart.md)',
    );
  });

  test('compares only the settings both processes use', () => {
    // An API sends no e-mail and a worker admits no report: their bounds may differ.
    assert.equal(disagreement('api', sharedSettingsOf('api', config, REDIS), [other('worker', { ...mine, SMTP_URL: 'file:///tmp/x', REPORTS_CONCURRENT_PER_BROKER: '9' })]), undefined);
    assert.match(disagreement('worker', sharedSettingsOf('worker', config, REDIS), [other('worker', { ...mine, SMTP_URL: 'file:///tmp/x' })]) ?? '', /^SMTP_URL is smtp:\/\/mail\.internal:587 here/);
    assert.match(disagreement('api', sharedSettingsOf('api', config, REDIS), [other('all', { ...mine, REPORTS_CONCURRENT_PER_BROKER: '9' })]) ?? '', /^REPORTS_CONCURRENT_PER_BROKER is 2 here/);
    assert.equal(disagreement('all', mine, [other('all', { ...mine })]), undefined);
  });

  test('no value holds a password', () => {
    const settings = sharedSettingsOf('all', loadConfig({ SMTP_URL: 'smtp://u:secret@mail:25' }), 'redis://r:6379/0');
    assert.ok(!JSON.stringify(settings).includes('secret'));
    assert.deepEqual(Object.keys(sharedSettingsOf('api', config, REDIS)).sort(), ['PUBLIC_BASE_URL', 'REDIS_URL', 'REPORTS_CONCURRENT_PER_BROKER', 'REPORTS_PER_HOUR_PER_BROKER', 'WEBHOOK_ALLOW_PRIVATE_URLS']);
  });
});

describe('registerProcess', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(() => db.drop());
  beforeEach(async () => {
    await db.prisma.$executeRaw`DELETE FROM process_registry`;
  });

  /** A row of a process on another host, its heartbeat `ageSeconds` old. */
  const otherProcess = (role: string, settings: Record<string, string>, ageSeconds = 0) =>
    db.prisma.$executeRaw`INSERT INTO process_registry (id, role, hostname, pid, settings, heartbeat_at)
      VALUES (${randomUUID()}::uuid, ${role}, 'another-host', 4242, ${JSON.stringify(settings)}::jsonb, now() - make_interval(secs => ${ageSeconds}::float8))`;

  test('records the process; closed, its row is gone', async () => {
    const settings = sharedSettingsOf('worker', config, REDIS);
    const registration = await registerProcess(db.prisma, { role: 'worker', settings, logger });
    const rows = await db.prisma.processRegistry.findMany();
    assert.equal(rows.length, 1);
    assert.deepEqual({ id: rows[0]!.id, role: rows[0]!.role, pid: rows[0]!.pid, settings: rows[0]!.settings }, { id: registration.id, role: 'worker', pid: process.pid, settings });
    await registration.close();
    assert.equal(await db.prisma.processRegistry.count(), 0);
  });

  test('a process that disagrees with a live one is refused and not recorded; one that agrees starts', async () => {
    const settings = sharedSettingsOf('api', config, REDIS);
    await otherProcess('worker', { ...sharedSettingsOf('worker', config, REDIS), PUBLIC_BASE_URL: 'https://other.example.com' });
    await assert.rejects(registerProcess(db.prisma, { role: 'api', settings, logger }), (err: Error) => {
      assert.ok(err instanceof SetupRefusedError);
      assert.match(err.message, /^PUBLIC_BASE_URL is https:\/\/api\.example\.com here, but the live worker process 4242 on another-host \(heartbeat \d+ s ago\) uses https:\/\/other\.example\.com/);
      return true;
    });
    assert.equal(await db.prisma.processRegistry.count(), 1);
    await db.prisma.$executeRaw`DELETE FROM process_registry`;
    await otherProcess('worker', sharedSettingsOf('worker', config, REDIS));
    const registration = await registerProcess(db.prisma, { role: 'api', settings, logger });
    assert.equal(await db.prisma.processRegistry.count(), 2);
    await registration.close();
  });

  test('a process whose heartbeat is stale is not live: it neither refuses nor counts', async () => {
    await otherProcess('worker', { REDIS_URL: 'redis://elsewhere:6379/0' }, 25);
    await otherProcess('api', { REDIS_URL: 'redis://elsewhere:6379/0' }, 2 * 24 * 3600);
    const registration = await registerProcess(db.prisma, { role: 'all', settings: sharedSettingsOf('all', config, REDIS), logger });
    // The row two days old is deleted; the stale one is kept (it may be a process that is only slow).
    assert.equal(await db.prisma.processRegistry.count(), 2);
    assert.ok(await refreshWorkersAlive(db.prisma));
    const metrics = await registry.getSingleMetricAsString('workers_alive');
    assert.match(metrics, /workers_alive\{role="api"\} 1/);
    assert.match(metrics, /workers_alive\{role="worker"\} 1/);
    await registration.close();
    await otherProcess('worker', {});
    await otherProcess('worker', {});
    assert.ok(await refreshWorkersAlive(db.prisma));
    const after = await registry.getSingleMetricAsString('workers_alive');
    assert.match(after, /workers_alive\{role="api"\} 0/);
    assert.match(after, /workers_alive\{role="worker"\} 2/);
  });
});
