/**
 * The request stats' roll-up on a database that already holds request logs (migration
 * 20261202130000_stats): the entries before the trigger are rolled up once by the migration, those
 * after by the trigger, and running the migration again counts nothing twice. The database is made
 * as it was before that migration (no trigger, empty roll-up), then the migration is applied again
 * under a later name, as an operator upgrading from 1.5.0 would run it.
 */
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { MIGRATIONS_DIR, applyMigrations } from '../../src/db/migrate.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { migrationTargetOf } from '../helpers/db.ts';
import { brokerWithKeys, requestLog } from '../helpers/factories.ts';

const STATS_MIGRATION = '20261202130000_stats';
const HOUR = 3_600_000;

let t: TestApp;
let dir: string;

before(async () => {
  t = await createTestApp({}, { workers: false });
  dir = await mkdtemp(path.join(os.tmpdir(), 'capi-stats-backfill-'));
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
});
after(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The stats migration once more, under a name after every other, so it is applied again. */
async function applyStatsMigrationAs(name: string): Promise<void> {
  const sql = await readFile(path.join(MIGRATIONS_DIR, STATS_MIGRATION, 'migration.sql'), 'utf8');
  await mkdir(path.join(dir, name));
  await writeFile(path.join(dir, name, 'migration.sql'), sql);
  assert.deepEqual(await applyMigrations(migrationTargetOf(t.database), { migrationsDir: dir }), [name]);
}

/** The roll-up's rows of one broker, and the same figures counted from its entries directly. */
async function rollUpAndEntries(brokerId: string) {
  const rolled = await t.prisma.$queryRaw<Array<{ hour: Date; status_class: number; operation: string; requests: number }>>`
    SELECT "hour", "status_class", "operation", "requests" FROM "api_log_hour_counts" WHERE "broker_id" = ${brokerId}
     ORDER BY 1, 2, 3`;
  const counted = await t.prisma.$queryRaw<Array<{ hour: Date; status_class: number; operation: string; requests: number }>>`
    SELECT date_bin('1 hour', "at", TIMESTAMPTZ '1970-01-01 00:00:00+00') AS "hour", "status" / 100 AS "status_class",
           COALESCE("operation", '') AS "operation", count(*)::int AS "requests"
      FROM "api_logs" WHERE "broker_id" = ${brokerId} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`;
  const histogram = await t.prisma.$queryRaw<Array<{ n: number }>>`
    SELECT COALESCE(sum(d), 0)::int AS "n" FROM "api_log_hours", unnest("durations") AS d WHERE "broker_id" = ${brokerId}`;
  return { rolled, counted, inHistogram: histogram[0]!.n };
}

describe('request stats on a database that already has request logs', () => {
  test('the migration rolls up the entries before it once; the trigger counts the later ones; a second run counts nothing twice', async () => {
    const w = await brokerWithKeys(t.prisma);
    const base = new Date((Math.floor(Date.now() / HOUR) - 30) * HOUR);
    const at = (hour: number, minute: number) => new Date(base.getTime() + hour * HOUR + minute * 60_000);

    // The database as before the migration: no trigger, no roll-up.
    await t.prisma.$executeRawUnsafe('DROP TRIGGER "api_logs_roll_up" ON "api_logs"');
    await t.prisma.$executeRawUnsafe('DELETE FROM "api_log_hour_counts"');
    await t.prisma.$executeRawUnsafe('DELETE FROM "api_log_hours"');
    await requestLog(t.prisma, w.live, { at: at(0, 5), status: 200, operation: 'listServices', durationMs: 12 });
    await requestLog(t.prisma, w.live, { at: at(0, 6), status: 404, operation: 'getService', durationMs: 30 });
    await requestLog(t.prisma, w.live, { at: at(2, 0), status: 503, operation: null, durationMs: 2000 });
    await requestLog(t.prisma, w.sandbox, { at: at(1, 0), status: 200, operation: 'listServices' });
    const before = await rollUpAndEntries(w.live.brokerId);
    assert.deepEqual(before.rolled, [], 'nothing rolled up before the migration');

    await applyStatsMigrationAs('29991231000000_stats_again');
    const migrated = await rollUpAndEntries(w.live.brokerId);
    assert.deepEqual(migrated.rolled, migrated.counted, 'the entries before the trigger, rolled up by the migration');
    assert.equal(migrated.inHistogram, 4, 'every entry in the duration histogram once');
    const [comment] = await t.prisma.$queryRaw<Array<{ description: string }>>`
      SELECT d.description FROM pg_description d JOIN pg_trigger g ON d.objoid = g.oid WHERE g.tgname = 'api_logs_roll_up'`;
    assert.doesNotMatch(comment!.description, /backfill up to id/, 'the backfill is marked done');

    // After the migration, the trigger counts each new entry; the same hour's row grows.
    await requestLog(t.prisma, w.live, { at: at(0, 7), status: 200, operation: 'listServices', durationMs: 14 });
    const later = await rollUpAndEntries(w.live.brokerId);
    assert.deepEqual(later.rolled, later.counted);
    assert.equal(later.inHistogram, 5);

    // Run again (a failed upgrade retried): the trigger and the done backfill stay as they are.
    await applyStatsMigrationAs('29991231000001_stats_once_more');
    const again = await rollUpAndEntries(w.live.brokerId);
    assert.deepEqual(again.rolled, later.counted, 'nothing counted twice');
    assert.equal(again.inHistogram, 5);

    // And the operation reads the migrated roll-up: the first hour's three entries.
    const res = await request(t.app)
      .get(`/api/v1/request-stats?interval=hour&created_gte=${at(0, 0).toISOString()}&created_lt=${at(1, 0).toISOString()}`)
      .set('Authorization', `Bearer ${w.live.key}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.buckets[0].requests, 3);
    assert.equal(res.body.data.buckets[0].status_classes['2xx'], 2);
  });
});
