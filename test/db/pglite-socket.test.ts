/**
 * The embedded default: the process that opens $DATA_DIR/db serves it on a unix socket, and a
 * second client (the CLI) works through it while the server keeps using PGlite directly –
 * never by opening the directory twice.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { connectForCli, openDatabase, pgliteSocketUrl, type Database } from '../../src/db/client.ts';
import { writingClient } from '../helpers/db.ts';

describe('PGlite shared through the socket', () => {
  let dataDir: string;
  let server: Database;
  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'capi-sock-'));
    server = await openDatabase({ dataDir });
  });
  after(async () => {
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('serves the socket under $DATA_DIR and refuses a second direct open', async () => {
    assert.equal(server.kind, 'pglite');
    assert.ok(server.socket);
    assert.ok(existsSync(path.join(dataDir, '.s.PGSQL.5432')));
    assert.ok(existsSync(path.join(dataDir, 'db', 'PG_VERSION')));
    await assert.rejects(openDatabase({ dataDir }), /in use by process|already open/);
  });

  it('lets the CLI read and write the same data while the server runs', async () => {
    const cli = await connectForCli({ dataDir });
    try {
      assert.equal(cli.via, 'socket');
      assert.equal(cli.kind, 'pglite');
      await cli.prisma.broker.create({ data: { id: 'brk_cli', slug: 'cli', name: 'From CLI', email: 'cli@x.test' } });
      assert.equal((await server.prisma.broker.findUniqueOrThrow({ where: { slug: 'cli' } })).name, 'From CLI');
      await server.prisma.broker.update({ where: { slug: 'cli' }, data: { name: 'Renamed by server' } });
      assert.equal((await cli.prisma.broker.findUniqueOrThrow({ where: { slug: 'cli' } })).name, 'Renamed by server');
      assert.equal(await cli.prisma.plan.count(), 4);
    } finally {
      await cli.close();
    }
  });

  it('keeps statements and transactions of different clients apart', async () => {
    const cliA = await connectForCli({ dataDir });
    const cliB = await connectForCli({ dataDir });
    try {
      const plan = await server.prisma.plan.findUniqueOrThrow({ where: { tier: 1 } });
      const broker = await server.prisma.broker.create({ data: { id: 'brk_mix', slug: 'mix', name: 'Mix', email: 'm@x.test' } });
      let n = 0;
      const mk = (db: Database, tag: string) => async () => {
        const i = ++n;
        return writingClient(db.prisma).$transaction(async (tx) => {
          const s = await tx.service.create({
            data: { serviceNumber: 100000000 + i, brokerId: broker.id, planId: plan.id, hostname: `${tag}${i}`, customerEmail: 'c@x.test', username: 'u', passwordEnc: 'v1:a:b:c' },
          });
          await tx.serviceRequest.create({ data: { brokerId: broker.id, serviceId: s.id, type: 'cancel', reason: tag } });
          return tx.service.count({ where: { brokerId: broker.id, hostname: { startsWith: tag } } });
        });
      };
      const jobs: Array<Promise<unknown>> = [];
      for (let i = 0; i < 8; i++) {
        jobs.push(mk(server, 's')(), mk(cliA, 'a')(), mk(cliB, 'b')());
        jobs.push(cliA.prisma.plan.findMany(), server.prisma.broker.count(), cliB.prisma.$queryRaw`SELECT 1 AS one`);
      }
      // A failed transaction on one client must not disturb the others.
      jobs.push(
        cliA.prisma
          .$transaction(async (tx) => {
            await tx.broker.create({ data: { id: 'brk_rolled', slug: 'rolled', name: 'R', email: 'r@x.test' } });
            throw new Error('boom');
          })
          .then(
            () => assert.fail('should have failed'),
            (e: Error) => assert.equal(e.message, 'boom'),
          ),
      );
      await Promise.all(jobs);
      assert.equal(await server.prisma.service.count({ where: { brokerId: broker.id } }), 24);
      assert.equal(await server.prisma.serviceRequest.count({ where: { brokerId: broker.id } }), 24);
      assert.equal(await cliB.prisma.broker.count({ where: { slug: 'rolled' } }), 0);
    } finally {
      await cliA.close();
      await cliB.close();
    }
  });

  it('rolls back what a vanished client left open', async () => {
    const client = new pg.Client({ connectionString: pgliteSocketUrl(dataDir) });
    client.on('error', () => {}); // we are about to cut it off
    await client.connect();
    await client.query('BEGIN');
    await client.query(`INSERT INTO brokers (id, slug, name, email) VALUES ('brk_gone', 'gone', 'G', 'g@x.test')`);
    // The server waits for that transaction; kill the client without COMMIT.
    const waiting = server.prisma.broker.count();
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    assert.equal(typeof (await waiting), 'number');
    assert.equal(await server.prisma.broker.count({ where: { slug: 'gone' } }), 0);
    await client.end().catch(() => {});
  });

  it('runs a unit whose messages arrive in several pieces whole, while another client holds the session', async () => {
    // A client speaking the wire protocol by hand, so the unit can be sent in two writes.
    const message = (type: string, ...parts: Buffer[]) => {
      const body = Buffer.concat(parts);
      const head = Buffer.alloc(5);
      head.write(type, 0, 'latin1');
      head.writeInt32BE(body.length + 4, 1);
      return Buffer.concat([head, body]);
    };
    const cstring = (text: string) => Buffer.from(`${text}\0`, 'utf8');
    const int16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
    const int32 = (n: number) => {
      const b = Buffer.alloc(4);
      b.writeInt32BE(n);
      return b;
    };
    const startup = Buffer.concat([int32(196608), cstring('user'), cstring('postgres'), cstring('database'), cstring('postgres'), Buffer.from([0])]);
    const socket = net.connect(path.join(dataDir, '.s.PGSQL.5432'));
    const connected = once(socket, 'connect');
    let received = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => (received = Buffer.concat([received, d])));
    /** The types of the messages received so far, once the last is ReadyForQuery ('Z'), n of them. */
    const typesUntilReady = async (n: number): Promise<string[]> => {
      for (;;) {
        const types: string[] = [];
        for (let at = 0; at + 5 <= received.length; at += 1 + received.readInt32BE(at + 1)) types.push(String.fromCharCode(received[at]!));
        if (types.filter((t) => t === 'Z').length >= n) return types;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const holder = new pg.Client({ connectionString: pgliteSocketUrl(dataDir) });
    await holder.connect();
    try {
      await connected;
      socket.write(Buffer.concat([int32(startup.length + 4), startup]));
      await typesUntilReady(1);
      await holder.query('BEGIN');
      await holder.query('SELECT 1');
      // Parse alone, then the rest of the unit, while the holder's transaction keeps the session.
      socket.write(message('P', cstring(''), cstring("SELECT 'whole' AS unit"), int16(0)));
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.write(
        Buffer.concat([
          message('B', cstring(''), cstring(''), int16(0), int16(0), int16(0)),
          message('D', Buffer.from('P'), cstring('')),
          message('E', cstring(''), int32(0)),
          message('S'),
        ]),
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      await holder.query('COMMIT');
      const types = await typesUntilReady(2);
      const unit = types.slice(types.indexOf('Z') + 1);
      // ParseComplete, BindComplete, RowDescription, DataRow, CommandComplete, ReadyForQuery: no ErrorResponse.
      assert.deepEqual(unit, ['1', '2', 'T', 'D', 'C', 'Z']);
    } finally {
      socket.destroy();
      await holder.end();
    }
  });

  it('after the server closes, the CLI opens the directory itself', async () => {
    await server.close();
    assert.ok(!existsSync(path.join(dataDir, '.s.PGSQL.5432')));
    const cli = await connectForCli({ dataDir });
    try {
      assert.equal(cli.via, 'direct');
      assert.equal(await cli.prisma.broker.count({ where: { slug: 'cli' } }), 1);
    } finally {
      await cli.close();
    }
    server = await openDatabase({ dataDir });
    assert.deepEqual(server.appliedMigrations, []);
  });
});
