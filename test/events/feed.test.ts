/**
 * The ascending event feed (`listEvents` with `order=asc`): pages oldest first after a cursor, the
 * `created_gte`/`created_lt` filters, and its promise that a poller walking it gets every event
 * exactly once, in order, while concurrent transactions write (src/events/store.ts recordEvents).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { Prisma, PrismaClient } from '../../generated/prisma/client.ts';
import request from 'supertest';
import { recordEvents, type EventMode } from '../../src/events/store.ts';
import { randomId } from '../../src/shared/ids.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { brokerWithKeys } from '../helpers/factories.ts';
import { event, sampleObject, webhookEndpoint } from '../helpers/webhook-factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => {
  await t?.close();
});

const get = (key: string, path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

const ids = (res: request.Response): string[] => res.body.data.map((e: { id: string }) => e.id);

/** The events of one broker and mode as stored, in the feed's order. */
const stored = (brokerId: string, mode: EventMode) =>
  t.prisma.event.findMany({ where: { brokerId, mode }, orderBy: { seq: 'asc' }, select: { id: true, createdAt: true } });

describe('listEvents order=asc', () => {
  test('oldest first from the oldest kept; starting_after lists what follows; has_more and next_starting_after', async () => {
    const w = await brokerWithKeys(t.prisma);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(await event(t.prisma, { brokerId: w.brokerId }));
    const first = await get(w.live.key, '/api/v1/events?order=asc&limit=2');
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(ids(first), made.slice(0, 2));
    assert.deepEqual(first.body.pagination, { limit: 2, has_more: true, next_starting_after: made[1] });
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?order=asc&limit=2&starting_after=${made[1]}`)), made.slice(2, 4));
    const last = await get(w.live.key, `/api/v1/events?order=asc&limit=2&starting_after=${made[3]}`);
    assert.deepEqual(ids(last), made.slice(4));
    assert.deepEqual(last.body.pagination, { limit: 2, has_more: false, next_starting_after: null });
    const caughtUp = await get(w.live.key, `/api/v1/events?order=asc&starting_after=${made[4]}`);
    assert.deepEqual(caughtUp.body, { success: true, data: [], pagination: { limit: 25, has_more: false, next_starting_after: null } });
  });

  test('order=desc and no order are the same newest-first pages', async () => {
    const w = await brokerWithKeys(t.prisma);
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push(await event(t.prisma, { brokerId: w.brokerId }));
    const newest = [...made].reverse();
    assert.deepEqual(ids(await get(w.live.key, '/api/v1/events?order=desc')), newest);
    assert.deepEqual(ids(await get(w.live.key, '/api/v1/events')), newest);
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?order=desc&starting_after=${made[2]}`)), newest.slice(1));
  });

  test('created_at never goes back along the feed, and each event is stamped when it takes its place', async () => {
    const w = await brokerWithKeys(t.prisma);
    for (let i = 0; i < 4; i++) await event(t.prisma, { brokerId: w.brokerId, at: new Date('2020-01-01T00:00:00Z') });
    const times = (await get(w.live.key, '/api/v1/events?order=asc')).body.data.map((e: { created_at: string }) => Date.parse(e.created_at));
    assert.equal(times.length, 4);
    for (let i = 1; i < times.length; i++) assert.ok(times[i] >= times[i - 1], `created_at went back at ${i}: ${times}`);
    assert.ok(times[0] > Date.parse('2025-01-01T00:00:00Z'), 'stamped by the feed, not by the caller');
  });

  test('created_gte and created_lt bound both orders, with and without a cursor', async () => {
    const w = await brokerWithKeys(t.prisma);
    // Dated a minute apart, in the feed's order, so the bounds fall between them (events are never re-dated: inserted so).
    const made: string[] = [];
    for (let i = 0; i < 4; i++) made.push((await naive.write(t.prisma, w.brokerId, new Date(Date.UTC(2026, 0, 1, 0, i)))).id);
    const gte = '2026-01-01T00:01:00Z';
    const lt = '2026-01-01T00:03:00.000%2B00:00';
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?order=asc&created_gte=${gte}`)), made.slice(1));
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?order=asc&created_lt=${lt}`)), made.slice(0, 3));
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?order=asc&created_gte=${gte}&created_lt=${lt}`)), made.slice(1, 3));
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?order=asc&created_gte=${gte}&starting_after=${made[1]}`)), made.slice(2));
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?created_gte=${gte}&created_lt=${lt}`)), [made[2], made[1]]);
    assert.deepEqual(ids(await get(w.live.key, `/api/v1/events?created_lt=${lt}&starting_after=${made[2]}`)), [made[1], made[0]]);
  });

  test('a sandbox key walks its test-mode events, a live key its live ones', async () => {
    const w = await brokerWithKeys(t.prisma);
    const live = await event(t.prisma, { brokerId: w.brokerId, mode: 'live' });
    const sandbox = [await event(t.prisma, { brokerId: w.brokerId, mode: 'test' }), await event(t.prisma, { brokerId: w.brokerId, mode: 'test' })];
    assert.deepEqual(ids(await get(w.sandbox.key, '/api/v1/events?order=asc')), sandbox);
    assert.deepEqual(ids(await get(w.live.key, '/api/v1/events?order=asc')), [live]);
    assertError(await get(w.live.key, `/api/v1/events?order=asc&starting_after=${sandbox[0]}`), 400, 'invalid_parameter');
  });

  test("another broker's event as starting_after: 400 invalid_parameter naming starting_after", async () => {
    const w = await brokerWithKeys(t.prisma);
    const other = await brokerWithKeys(t.prisma);
    const theirs = await event(t.prisma, { brokerId: other.brokerId });
    assert.equal(assertError(await get(w.live.key, `/api/v1/events?order=asc&starting_after=${theirs}`), 400, 'invalid_parameter').field, 'starting_after');
  });

  const bad: Array<[query: string, field: string]> = [
    ['order=ascending', 'order'],
    ['order=ASC', 'order'],
    ['order=', 'order'],
    ['created_gte=yesterday', 'created_gte'],
    ['created_gte=2026-01-01', 'created_gte'],
    ['created_lt=2026-02-30T00:00:00Z', 'created_lt'],
    ['created_lt=2026-01-01T00:00:00', 'created_lt'],
    ['created_lt=0000-01-01T00:00:00Z', 'created_lt'],
  ];
  for (const [query, field] of bad) {
    test(`${query}: 400 invalid_parameter naming ${field}`, async () => {
      const w = await brokerWithKeys(t.prisma);
      assert.equal(assertError(await get(w.live.key, `/api/v1/events?${query}`), 400, 'invalid_parameter').field, field);
    });
  }
});

/** Walks the ascending feed of one key as fast as it can until `done()` and it has caught up; every event it received, in order. */
async function poll(key: string, done: () => boolean, limit: number): Promise<Array<{ id: string; created_at: string }>> {
  const seen: Array<{ id: string; created_at: string }> = [];
  for (;;) {
    const finished = done();
    const cursor = seen.at(-1)?.id;
    const res = await get(key, `/api/v1/events?order=asc&limit=${limit}${cursor ? `&starting_after=${cursor}` : ''}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    seen.push(...res.body.data);
    // Caught up after every writer finished: nothing more can come.
    if (finished && !res.body.pagination.has_more) return seen;
  }
}

/** Every event received exactly once, in the feed's order, created_at never going back. */
function assertWalked(walked: Array<{ id: string; created_at: string }>, written: Set<string>, inFeed: Array<{ id: string }>) {
  const got = walked.map((e) => e.id);
  assert.equal(new Set(got).size, got.length, 'no event twice');
  assert.deepEqual(new Set(got), written, 'every event written, and only those');
  assert.deepEqual(got, inFeed.map((e) => e.id), 'in the feed order');
  for (let i = 1; i < walked.length; i++) assert.ok(walked[i]!.created_at >= walked[i - 1]!.created_at, `created_at went back at ${i}`);
}

describe('a poller walking the ascending feed while concurrent writers change things', () => {
  test('receives every event exactly once, in order (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 6 }),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 2, maxLength: 6 }),
        fc.integer({ min: 1, max: 4 }),
        async (writers, batches, limit) => {
          const w = await brokerWithKeys(t.prisma);
          const endpoints = {
            live: await webhookEndpoint(t.prisma, { brokerId: w.brokerId, mode: 'live' }),
            test: await webhookEndpoint(t.prisma, { brokerId: w.brokerId, mode: 'test' }),
          };
          const written = { live: new Set<string>(), test: new Set<string>() };
          let running = writers;
          // Each writer alternates: a ping through the API (live or sandbox key), then a change's
          // transaction of several events for both modes (the use cases' way of writing them).
          const writer = async (n: number) => {
            for (const [i, size] of batches.entries()) {
              const mode: EventMode = (n + i) % 2 === 0 ? 'live' : 'test';
              const res = await request(t.app)
                .post(`/api/v1/webhook-endpoints/${endpoints[mode]}/ping`)
                .set('Authorization', `Bearer ${mode === 'live' ? w.live.key : w.sandbox.key}`);
              assert.equal(res.status, 200, JSON.stringify(res.body));
              written[mode].add(res.body.data.id);
              const modes: EventMode[] = Array.from({ length: size }, (_, k) => ((n + k) % 2 === 0 ? 'test' : 'live'));
              const made = await t.prisma.$transaction(async (tx) => {
                await tx.broker.findUniqueOrThrow({ where: { id: w.brokerId } });
                return recordEvents(tx, modes.map((m) => ({ brokerId: w.brokerId, mode: m, type: 'service.updated' as const, object: sampleObject('service.updated') })));
              });
              made.forEach((id, k) => written[modes[k]!].add(id));
            }
            running -= 1;
          };
          const [live, sandbox] = await Promise.all([
            poll(w.live.key, () => running === 0, limit),
            poll(w.sandbox.key, () => running === 0, limit),
            ...Array.from({ length: writers }, (_, n) => writer(n)),
          ]);
          assertWalked(live!, written.live, await stored(w.brokerId, 'live'));
          assertWalked(sandbox!, written.test, await stored(w.brokerId, 'test'));
        },
      ),
      { numRuns: 8, seed: 34 },
    );
  });
});

/** A feed as it was before: each event stamped by its caller, read by `created_at > cursor`. */
const naive = {
  write: (tx: Prisma.TransactionClient | PrismaClient, brokerId: string, at: Date) =>
    tx.event.create({ data: { id: randomId('evt_', 24), brokerId, mode: 'live', type: 'service.updated', data: { object: sampleObject('service.updated') } as Prisma.InputJsonObject, createdAt: at } }),
  async after(brokerId: string, cursor: Date) {
    return t.prisma.event.findMany({ where: { brokerId, mode: 'live', createdAt: { gt: cursor } }, orderBy: { createdAt: 'asc' }, select: { id: true, createdAt: true } });
  },
};

describe('a naive feed loses events that the real one keeps', () => {
  test('created_at stamped before the transaction, read by created_at > cursor: the first-stamped event, committed last, is a gap', async () => {
    const w = await brokerWithKeys(t.prisma);
    const stampedFirst = new Date();
    const stampedLast = new Date(stampedFirst.getTime() + 5);
    // The later-stamped change commits first; the poller reads; then the first-stamped one commits.
    const late = await t.prisma.$transaction((tx) => naive.write(tx, w.brokerId, stampedLast));
    const page = await naive.after(w.brokerId, new Date(0));
    assert.deepEqual(page.map((e) => e.id), [late.id]);
    const early = await t.prisma.$transaction((tx) => naive.write(tx, w.brokerId, stampedFirst));
    const next = await naive.after(w.brokerId, page.at(-1)!.createdAt);
    assert.deepEqual(next, [], 'the naive poller never sees it');
    const everything = await t.prisma.event.findMany({ where: { brokerId: w.brokerId } });
    assert.ok(everything.some((e) => e.id === early.id), 'a gap: written but never received');

    // The same two changes through recordEvents: the event committed last sorts last, so the walk gets both.
    const other = await brokerWithKeys(t.prisma);
    const first = await recordEvents(t.prisma, [{ brokerId: other.brokerId, mode: 'live' as const, type: 'service.updated', object: sampleObject('service.updated') }], stampedLast);
    const walked = ids(await get(other.live.key, '/api/v1/events?order=asc'));
    const second = await recordEvents(t.prisma, [{ brokerId: other.brokerId, mode: 'live' as const, type: 'service.updated', object: sampleObject('service.updated') }], stampedFirst);
    assert.deepEqual(walked, first);
    assert.deepEqual(ids(await get(other.live.key, `/api/v1/events?order=asc&starting_after=${walked.at(-1)}`)), second);
  });

  test('two open transactions: the second waits for the first to commit, through recordEvents (the feed lock) or not (the insert trigger), so seq > cursor skips none', async () => {
    const w = await brokerWithKeys(t.prisma);
    const onPostgres = t.database.kind === 'postgres';
    const log: string[] = [];
    const gate = () => {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      return { open, opened };
    };

    if (onPostgres) {
      // Naive: no lock of its own. T1 inserts first and holds; T2's insert still cannot take its
      // place before T1 commits: the database's insert trigger orders them (test/events/append-only.test.ts).
      const t1Inserted = gate();
      const t1Commit = gate();
      const t1 = t.prisma.$transaction(async (tx) => {
        const e = await naive.write(tx, w.brokerId, new Date());
        t1Inserted.open();
        await t1Commit.opened;
        log.push('naive t1 commits');
        return e;
      });
      await t1Inserted.opened;
      const t2 = t.prisma.$transaction(async (tx) => {
        const e = await naive.write(tx, w.brokerId, new Date());
        log.push('naive t2 inserted');
        return e;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      t1Commit.open();
      const [e1, e2] = await Promise.all([t1, t2]);
      assert.deepEqual(log.splice(0), ['naive t1 commits', 'naive t2 inserted']);
      assert.ok(e1.seq < e2.seq && e1.sequence < e2.sequence, 'no gap: the one committed first sorts first');
    }

    // The real feed: T2's recordEvents cannot take its place until T1 (holding the lock) has committed.
    const other = await brokerWithKeys(t.prisma);
    const t1Recorded = gate();
    const t1Commit = gate();
    const t1 = t.prisma.$transaction(async (tx) => {
      const made = await recordEvents(tx, [{ brokerId: other.brokerId, mode: 'live' as const, type: 'service.updated', object: sampleObject('service.updated') }]);
      t1Recorded.open();
      await t1Commit.opened;
      log.push('t1 commits');
      return made;
    });
    await t1Recorded.opened;
    const t2 = t.prisma.$transaction(async (tx) => {
      const made = await recordEvents(tx, [{ brokerId: other.brokerId, mode: 'live' as const, type: 'service.updated', object: sampleObject('service.updated') }]);
      log.push('t2 recorded');
      return made;
    });
    if (onPostgres) {
      // Wait (with a deadline) until T2 is queued on the feed's advisory lock.
      const deadline = Date.now() + 30_000;
      while ((await t.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)[0]!.n === 0n) {
        assert.ok(Date.now() < deadline, 'T2 never waited on the lock');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    t1Commit.open();
    const [first, second] = await Promise.all([t1, t2]);
    assert.deepEqual(log, ['t1 commits', 't2 recorded']);
    assert.deepEqual(ids(await get(other.live.key, '/api/v1/events?order=asc')), [...first, ...second]);
  });
});
