/**
 * Events never change: the database itself refuses an UPDATE, DELETE or TRUNCATE of `events` from
 * any client, but for the retention purge (deleteEventsBefore) and a broker's deletion; and every
 * event carries `sequence`, 1, 2, 3… per broker and mode in the order the feed serves them, also
 * when writers commit in another order than they inserted (on PostgreSQL; PGlite runs one session).
 * Migration 20261202110000_events_sequence, src/events/store.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import type { Prisma } from '../../generated/prisma/client.ts';
import { deleteEventsBefore, recordEvents, type EventMode } from '../../src/events/store.ts';
import { randomId } from '../../src/shared/ids.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { broker, brokerWithKeys } from '../helpers/factories.ts';
import { event, sampleObject } from '../helpers/webhook-factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => {
  await t?.close();
});

const DAY = 86_400_000;
const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

/** An event inserted as any client could, with the date it is given: inserting is allowed, and the database numbers it. */
const inserted = (db: Prisma.TransactionClient | TestApp['prisma'], brokerId: string, createdAt = new Date(), mode: EventMode = 'live') =>
  db.event.create({
    data: { id: randomId('evt_', 24), brokerId, mode, type: 'service.updated', data: { object: sampleObject('service.updated') } as Prisma.InputJsonObject, createdAt },
  });

const REFUSED = /append-only/;

describe('the database refuses to change or remove an event', () => {
  test('UPDATE, DELETE and TRUNCATE, through Prisma or raw SQL, are refused and change nothing', async () => {
    const { id: brokerId } = await broker(t.prisma);
    const id = await event(t.prisma, { brokerId });
    const stored = await t.prisma.event.findUniqueOrThrow({ where: { id } });
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['re-date', () => t.prisma.event.update({ where: { id }, data: { createdAt: new Date(Date.UTC(2020, 0, 1)) } })],
      ['rewrite its data', () => t.prisma.event.updateMany({ where: { id }, data: { data: { object: {} } } })],
      ['renumber', () => t.prisma.$executeRaw`UPDATE "events" SET "sequence" = "sequence" + 100, "seq" = "seq" + 100 WHERE "id" = ${id}`],
      ['delete', () => t.prisma.event.delete({ where: { id } })],
      ['delete many', () => t.prisma.event.deleteMany({ where: { brokerId } })],
      ['raw delete', () => t.prisma.$executeRawUnsafe('DELETE FROM "events" WHERE "id" = $1', id)],
      ['truncate', () => t.prisma.$executeRawUnsafe('TRUNCATE "events" CASCADE')],
    ];
    for (const [what, attempt] of attempts) await assert.rejects(attempt(), REFUSED, what);
    assert.deepEqual(await t.prisma.event.findUniqueOrThrow({ where: { id } }), stored);
  });

  test('a delete and re-insert of a served event is refused at the delete: the id stays where it was served', async () => {
    const w = await brokerWithKeys(t.prisma);
    const first = await event(t.prisma, { brokerId: w.brokerId });
    await event(t.prisma, { brokerId: w.brokerId });
    await assert.rejects(
      t.prisma.$transaction(async (tx) => {
        const row = await tx.event.findUniqueOrThrow({ where: { id: first } });
        await tx.event.delete({ where: { id: first } });
        await tx.event.create({ data: { id: row.id, brokerId: row.brokerId, mode: row.mode, type: row.type, data: row.data as Prisma.InputJsonObject } });
      }),
      REFUSED,
    );
    const feed = await get(w.live.key, '/api/v1/events?order=asc');
    assert.deepEqual(feed.body.data.map((e: { id: string; sequence: number }) => [e.id, e.sequence]).slice(0, 1), [[first, 1]]);
  });

  test('the retention purge deletes the events past their time and nothing else; numbers are never handed out again', async () => {
    const w = await brokerWithKeys(t.prisma);
    const now = Date.now();
    const old = [await inserted(t.prisma, w.brokerId, new Date(now - 40 * DAY)), await inserted(t.prisma, w.brokerId, new Date(now - 31 * DAY))];
    const kept = await event(t.prisma, { brokerId: w.brokerId });
    assert.ok((await deleteEventsBefore(t.prisma, new Date(now - 30 * DAY))) >= 2);
    assert.equal(await t.prisma.event.count({ where: { id: { in: old.map((e) => e.id) } } }), 0, 'the old ones went');
    const list = await get(w.live.key, '/api/v1/events?order=asc');
    assert.deepEqual(list.body.data.map((e: { id: string; sequence: number }) => [e.id, e.sequence]), [[kept, 3]]);
    // Its permission ended with its own transaction.
    await assert.rejects(t.prisma.event.delete({ where: { id: kept } }), REFUSED);
    // Even a feed emptied by the purge goes on from its last number.
    assert.ok((await deleteEventsBefore(t.prisma, new Date(now + DAY))) >= 1);
    const next = await event(t.prisma, { brokerId: w.brokerId });
    assert.equal((await t.prisma.event.findUniqueOrThrow({ where: { id: next } })).sequence, 4n);
  });

  test("a broker's deletion takes its events with it", async () => {
    const { id: brokerId } = await broker(t.prisma);
    await event(t.prisma, { brokerId });
    await event(t.prisma, { brokerId, mode: 'test' });
    await t.prisma.broker.delete({ where: { id: brokerId } });
    assert.equal(await t.prisma.event.count({ where: { brokerId } }), 0);
    assert.equal(await t.prisma.eventFeed.count({ where: { brokerId } }), 0);
  });
});

describe('sequence', () => {
  test('1, 2, 3… per broker and mode, whatever a writer gives, shown by listEvents and getEvent', async () => {
    const w = await brokerWithKeys(t.prisma);
    const other = await brokerWithKeys(t.prisma);
    const live = [await event(t.prisma, { brokerId: w.brokerId }), await event(t.prisma, { brokerId: w.brokerId })];
    const sandbox = [await event(t.prisma, { brokerId: w.brokerId, mode: 'test' })];
    await event(t.prisma, { brokerId: other.brokerId });
    const given = await t.prisma.event.create({
      data: { id: randomId('evt_', 24), brokerId: w.brokerId, mode: 'live', type: 'ping', data: { object: sampleObject('ping') } as Prisma.InputJsonObject, sequence: 1n, seq: 1n },
    });
    live.push(given.id);
    assert.equal(given.sequence, 3n, 'a given sequence is overridden');
    const shown = async (key: string) => (await get(key, '/api/v1/events?order=asc')).body.data.map((e: { id: string; sequence: number }) => [e.id, e.sequence]);
    assert.deepEqual(await shown(w.live.key), live.map((id, i) => [id, i + 1]));
    assert.deepEqual(await shown(w.sandbox.key), sandbox.map((id, i) => [id, i + 1]));
    assert.deepEqual(await shown(other.live.key), [[(await t.prisma.event.findFirstOrThrow({ where: { brokerId: other.brokerId } })).id, 1]]);
    assert.equal((await get(w.live.key, `/api/v1/events/${live[1]}`)).body.data.sequence, 2);
  });

  test('concurrent writers committing out of order: a poller walking the feed gets every event once, in order, sequence 1, 2, 3… with no gap', async () => {
    const w = await brokerWithKeys(t.prisma);
    const onPostgres = t.database.kind === 'postgres';
    const pause = () => new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 25)));
    let running = 0;
    // Half the transactions write through recordEvents (which takes the feed's lock), half insert as a
    // careless client would; each waits a moment after writing before it commits.
    const writer = async (n: number) => {
      for (let i = 0; i < 6; i++) {
        await t.prisma.$transaction(
          async (tx) => {
            if ((n + i) % 2 === 0) await recordEvents(tx, [{ brokerId: w.brokerId, mode: 'live', type: 'service.updated', object: sampleObject('service.updated') }]);
            else await inserted(tx, w.brokerId);
            await pause();
          },
          { maxWait: 30_000, timeout: 30_000 },
        );
      }
      running -= 1;
    };
    const seen: Array<{ id: string; sequence: number }> = [];
    const poll = async () => {
      for (;;) {
        const finished = running === 0;
        const cursor = seen.at(-1)?.id;
        const res = await get(w.live.key, `/api/v1/events?order=asc&limit=3${cursor ? `&starting_after=${cursor}` : ''}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        seen.push(...res.body.data.map((e: { id: string; sequence: number }) => ({ id: e.id, sequence: e.sequence })));
        if (finished && !res.body.pagination.has_more) return;
      }
    };
    const writers = onPostgres ? 6 : 3;
    running = writers;
    await Promise.all([poll(), ...Array.from({ length: writers }, (_, n) => writer(n))]);
    const stored = await t.prisma.event.findMany({ where: { brokerId: w.brokerId, mode: 'live' }, orderBy: { seq: 'asc' }, select: { id: true, sequence: true } });
    assert.equal(stored.length, writers * 6);
    assert.deepEqual(stored.map((e) => Number(e.sequence)), stored.map((_, i) => i + 1), 'in the order the feed serves them, 1, 2, 3…');
    assert.deepEqual(seen, stored.map((e) => ({ id: e.id, sequence: Number(e.sequence) })), 'the poller got each once, in order, no number skipped');
  });

  test('on PostgreSQL, a writer that takes no lock of its own still waits for the one before it to commit: its sequence and seq come after', { skip: !process.env.DATABASE_URL && 'PostgreSQL only (PGlite runs one session)' }, async () => {
    const w = await brokerWithKeys(t.prisma);
    let commitFirst!: () => void;
    const firstMayCommit = new Promise<void>((resolve) => (commitFirst = resolve));
    let firstInserted!: () => void;
    const insertedFirst = new Promise<void>((resolve) => (firstInserted = resolve));
    const first = t.prisma.$transaction(async (tx) => {
      const e = await inserted(tx, w.brokerId);
      firstInserted();
      await firstMayCommit;
      return e;
    }, { timeout: 30_000 });
    await insertedFirst;
    const second = t.prisma.$transaction((tx) => inserted(tx, w.brokerId), { timeout: 30_000 });
    // The second insert queues on the feed's counter row until the first commits.
    const deadline = Date.now() + 30_000;
    while ((await t.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted`)[0]!.n === 0n) {
      assert.ok(Date.now() < deadline, 'the second insert never waited');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual((await get(w.live.key, '/api/v1/events?order=asc')).body.data, [], 'neither is served before it commits');
    commitFirst();
    const [a, b] = await Promise.all([first, second]);
    assert.ok(a.sequence < b.sequence && a.seq < b.seq, `${a.sequence}/${a.seq} then ${b.sequence}/${b.seq}`);
  });
});
