/**
 * The credentials key's fingerprint in the database (issue 32 row 7): the first key is recorded,
 * the same key matches, another is refused naming CREDENTIALS_KEY; a database from before
 * fingerprints records only a key that decrypts what it already holds. Runs on in-memory PGlite,
 * or on PostgreSQL when DATABASE_URL is set.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import os from 'node:os';
import { checkCredentialsKey, createCredentials, CredentialsKeyError, KEY_FILE_NAME, keyFingerprint } from '../../src/db/credentials.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

const keyA = randomBytes(32);
const keyB = randomBytes(32);
const fromEnv = (key: Buffer) => ({ envKey: key.toString('hex'), dataDir: os.tmpdir() });

describe(`credentials key fingerprint (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, () => {
  let t: TestDatabase;
  before(async () => {
    t = await createTestDatabase();
  });
  after(async () => {
    await t?.drop();
  });
  beforeEach(async () => {
    await t.prisma.credentialsKeyFingerprint.deleteMany();
    await t.prisma.service.deleteMany();
  });

  it('is an HMAC of a fixed text under the key: stable, one per key, neither the key nor its plain hash', () => {
    const f = keyFingerprint(keyA);
    assert.match(f, /^[0-9a-f]{64}$/);
    assert.equal(keyFingerprint(Buffer.from(keyA)), f);
    assert.notEqual(keyFingerprint(keyB), f);
    assert.notEqual(f, keyA.toString('hex'));
    assert.notEqual(f, createHash('sha256').update(keyA).digest('hex'));
    assert.notEqual(f, createHash('sha256').update(keyA.toString('hex')).digest('hex'));
  });

  it('records the first key, matches it again, and refuses another naming CREDENTIALS_KEY', async () => {
    assert.equal(await checkCredentialsKey(t.prisma, keyA, fromEnv(keyA)), 'recorded');
    const rows = await t.prisma.credentialsKeyFingerprint.findMany();
    assert.deepEqual(rows.map((r) => [r.id, r.fingerprint]), [[1, keyFingerprint(keyA)]]);
    assert.equal(await checkCredentialsKey(t.prisma, keyA, fromEnv(keyA)), 'matched');
    await assert.rejects(checkCredentialsKey(t.prisma, keyB, fromEnv(keyB)), (e: Error) => {
      assert.ok(e instanceof CredentialsKeyError);
      assert.match(e.message, /^CREDENTIALS_KEY is not the credentials key this database recorded/);
      assert.ok(!e.message.includes(keyB.toString('hex')) && !e.message.includes(keyA.toString('hex')), 'no key in the message');
      return true;
    });
    // A key from the key file (CREDENTIALS_KEY unset) is refused alike, naming the file and the setting.
    const dataDir = path.join(os.tmpdir(), 'capi-fp-unused');
    await assert.rejects(checkCredentialsKey(t.prisma, keyB, { envKey: undefined, dataDir }), (e: Error) => {
      assert.ok(e.message.includes(path.join(dataDir, KEY_FILE_NAME)) && e.message.includes('CREDENTIALS_KEY unset'), e.message);
      assert.match(e.message, /same CREDENTIALS_KEY/);
      return true;
    });
    assert.deepEqual((await t.prisma.credentialsKeyFingerprint.findMany()).map((r) => r.fingerprint), [keyFingerprint(keyA)], 'the record is unchanged');
  });

  it('keeps one row: a second id is refused by the table', async () => {
    await checkCredentialsKey(t.prisma, keyA, fromEnv(keyA));
    await assert.rejects(t.prisma.credentialsKeyFingerprint.create({ data: { id: 2, fingerprint: keyFingerprint(keyB) } }));
  });

  it('two first processes at once: one key is recorded, the other is refused', async () => {
    const outcomes = await Promise.allSettled([checkCredentialsKey(t.prisma, keyA, fromEnv(keyA)), checkCredentialsKey(t.prisma, keyB, fromEnv(keyB))]);
    const fulfilled = outcomes.filter((o) => o.status === 'fulfilled');
    const rejected = outcomes.filter((o) => o.status === 'rejected');
    assert.equal(fulfilled.length, 1);
    assert.equal(rejected.length, 1);
    assert.ok((rejected[0] as PromiseRejectedResult).reason instanceof CredentialsKeyError);
    const winner = outcomes[0]!.status === 'fulfilled' ? keyA : keyB;
    assert.deepEqual((await t.prisma.credentialsKeyFingerprint.findMany()).map((r) => r.fingerprint), [keyFingerprint(winner)]);
  });

  it('on a database from before fingerprints, only the key its stored credentials decrypt with is recorded', async () => {
    const b = await broker(t.prisma);
    await service({ prisma: t.prisma, deps: { credentials: async () => createCredentials(keyA) } }, { brokerId: b.id });
    await assert.rejects(checkCredentialsKey(t.prisma, keyB, fromEnv(keyB)), /CREDENTIALS_KEY does not decrypt the credentials already stored/);
    assert.equal(await t.prisma.credentialsKeyFingerprint.count(), 0, 'nothing recorded for the wrong key');
    assert.equal(await checkCredentialsKey(t.prisma, keyA, fromEnv(keyA)), 'recorded');
  });
});
