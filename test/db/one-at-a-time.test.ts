/**
 * One query at a time on a node-postgres connection (src/db/one-at-a-time.ts): the generic helper,
 * and the client the servers' pools and the build thread use, against the test database (PostgreSQL,
 * or PGlite through its socket).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { oneAtATime, OneQueryAtATimeClient } from '../../src/db/one-at-a-time.ts';
import { connectionOf, createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const tick = () => new Promise((r) => setTimeout(r, 5));

describe('oneAtATime (src/db/one-at-a-time.ts)', () => {
  test('work handed over at once runs one piece at a time, in order', async () => {
    const inTurn = oneAtATime();
    const seen: string[] = [];
    const piece = (name: string) => async () => {
      seen.push(`${name} starts`);
      await tick();
      seen.push(`${name} ends`);
      return name;
    };
    const results = await Promise.all([inTurn(piece('a')), inTurn(piece('b')), inTurn(piece('c'))]);
    assert.deepEqual(results, ['a', 'b', 'c']);
    assert.deepEqual(seen, ['a starts', 'a ends', 'b starts', 'b ends', 'c starts', 'c ends']);
  });

  test('a piece that fails: its caller gets the error, and the next piece still runs', async () => {
    const inTurn = oneAtATime();
    const failing = inTurn(async () => {
      await tick();
      throw new Error('refused');
    });
    const next = inTurn(async () => 'ran');
    await assert.rejects(failing, /refused/);
    assert.equal(await next, 'ran');
  });
});

describe('OneQueryAtATimeClient (src/db/one-at-a-time.ts)', () => {
  let db: TestDatabase;
  let connection: Awaited<ReturnType<typeof connectionOf>>;
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.message);

  before(async () => {
    db = await createTestDatabase();
    connection = await connectionOf(db);
    process.on('warning', onWarning);
  });
  after(async () => {
    process.off('warning', onWarning);
    await connection?.close();
    await db?.drop();
  });

  /** Three queries sent at once on one connection of `Client`'s kind; what each saw. */
  async function threeAtOnce(Client: typeof pg.Client) {
    const client = new Client({ connectionString: connection.url });
    await client.connect();
    try {
      const answers = await Promise.all([
        client.query<{ n: number }>('SELECT $1::int AS n, pg_sleep(0.02)', [1]),
        client.query<{ n: number }>('SELECT $1::int AS n', ['not a number']).catch((e: Error) => e),
        client.query<{ n: number }>('SELECT $1::int AS n', [3]),
      ]);
      return answers.map((a) => (a instanceof Error ? 'error' : a.rows[0]!.n));
    } finally {
      await client.end();
    }
  }

  const deprecation = (w: string) => w.includes('already executing a query');

  // In this order: node-postgres warns once per process, so the plain client's run comes second.
  test('queries sent at once run in order, an error included, and node-postgres does not warn', async () => {
    assert.deepEqual(await threeAtOnce(OneQueryAtATimeClient), [1, 'error', 3]);
    await tick();
    assert.deepEqual(warnings.filter(deprecation), []);
  });

  test('the same with a plain client: node-postgres warns (what the first case shows it avoids)', async () => {
    await threeAtOnce(pg.Client);
    await tick();
    assert.equal(warnings.filter(deprecation).length, 1);
  });
});
