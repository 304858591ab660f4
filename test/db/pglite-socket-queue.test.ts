/**
 * The socket's session lock (SessionLockQueue, src/db/pglite-socket.ts) on a real PGlite: what a
 * connection gets back is the answer to its own messages and nothing else, also when another
 * connection goes away while it waits for the session and is cleaned up after it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { SessionLockQueue, simpleQuery } from '../../src/db/pglite-socket.ts';

/** The type letters of the backend messages in `bytes`, in order. */
function messageTypes(bytes: Buffer): string {
  let types = '';
  for (let at = 0; at < bytes.length; at += 1 + bytes.readInt32BE(at + 1)) types += String.fromCharCode(bytes[at]!);
  return types;
}

/** A connection of the queue: sends simple queries, collects every byte sent back to it. */
function connection(queue: SessionLockQueue, id: number) {
  const received: Buffer[] = [];
  return {
    send: (sql: string) => queue.enqueue(id, simpleQuery(sql), (data) => received.push(Buffer.from(data))),
    /** Ready-for-query messages received: one per simple query it sent, when nothing else reached it. */
    readyCount: () => [...messageTypes(Buffer.concat(received))].filter((t) => t === 'Z').length,
  };
}

describe('SessionLockQueue (src/db/pglite-socket.ts)', () => {
  let db: PGlite;
  before(async () => {
    db = await PGlite.create();
  });
  after(async () => {
    await db?.close();
  });

  test('a connection that went away while it waited is cleaned up without writing to the connection that ran before it', async () => {
    const queue = new SessionLockQueue(db);
    const a = connection(queue, 1);
    const b = connection(queue, 2);
    await a.send('BEGIN'); // a holds the session until its transaction ends
    const waiting = b.send('SELECT 1').catch((e: Error) => e.message);
    await queue.clearTransactionIfNeeded(2); // b's socket closed while it waited
    await a.send('SELECT 2');
    await a.send('COMMIT'); // the session is free: b's turn comes, and b is cleaned up
    assert.equal(await waiting, 'Handler disconnected');
    await a.send('SELECT 3');
    assert.equal(a.readyCount(), 4, 'a got one ready-for-query per query it sent, and none of the cleanup\'s');
  });

  test('a connection that went away inside its transaction is rolled back without writing to the connection that ran before it', async () => {
    const queue = new SessionLockQueue(db);
    const a = connection(queue, 3);
    const b = connection(queue, 4);
    await a.send('SELECT 1');
    await b.send('BEGIN');
    await b.send('CREATE TEMP TABLE left_open (n int)');
    const next = a.send('SELECT 2'); // waits for b's transaction
    await queue.clearTransactionIfNeeded(4); // b's socket closed: rolled back, the session freed
    await next;
    assert.equal(db.isInTransaction(), false);
    assert.equal(a.readyCount(), 2);
  });
});
