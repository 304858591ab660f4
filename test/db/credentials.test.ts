import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  CredentialsDecryptError,
  CredentialsKeyError,
  KEY_FILE_NAME,
  createCredentials,
  loadCredentialsKey,
  openCredentials,
  parseCredentialsKey,
} from '../../src/db/credentials.ts';

const HEX_KEY = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';

describe('service credentials (AES-256-GCM)', () => {
  it('round-trips and never stores the password in clear', () => {
    const c = createCredentials(parseCredentialsKey(HEX_KEY));
    for (const pw of ['s3cret!Passw0rd', '', 'ünïcødé ✓ "quotes" : colons', 'x'.repeat(128)]) {
      const stored = c.encrypt(pw);
      assert.match(stored, /^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]*$/);
      if (pw) assert.ok(!stored.includes(pw));
      assert.equal(c.decrypt(stored), pw);
    }
    assert.notEqual(c.encrypt('same'), c.encrypt('same'), 'a fresh IV every time');
  });

  it('rejects a tampered value, a wrong key and a malformed value', () => {
    const c = createCredentials(parseCredentialsKey(HEX_KEY));
    const stored = c.encrypt('hunter2hunter2');
    const [v, iv, tag, ct] = stored.split(':') as [string, string, string, string];
    const flipped = Buffer.from(ct, 'base64');
    flipped[0] = flipped[0]! ^ 1;
    assert.throws(() => c.decrypt([v, iv, tag, flipped.toString('base64')].join(':')), CredentialsDecryptError);
    const badTag = Buffer.from(tag, 'base64');
    badTag[0] = badTag[0]! ^ 1;
    assert.throws(() => c.decrypt([v, iv, badTag.toString('base64'), ct].join(':')), CredentialsDecryptError);
    const other = createCredentials(Buffer.alloc(32, 7));
    assert.throws(() => other.decrypt(stored), CredentialsDecryptError);
    assert.throws(() => c.decrypt('plain text'), CredentialsDecryptError);
    assert.throws(() => c.decrypt(`v2:${iv}:${tag}:${ct}`), CredentialsDecryptError);
  });

  it('accepts 64 hex characters or base64 of 32 bytes, and nothing else', () => {
    const bytes = Buffer.from(HEX_KEY, 'hex');
    assert.deepEqual(parseCredentialsKey(HEX_KEY), bytes);
    assert.deepEqual(parseCredentialsKey(bytes.toString('base64')), bytes);
    assert.deepEqual(parseCredentialsKey(bytes.toString('base64url')), bytes);
    for (const bad of ['', 'abc', HEX_KEY.slice(2), HEX_KEY + '00', Buffer.alloc(16).toString('base64'), Buffer.alloc(33).toString('base64'), 'not a key at all!']) {
      assert.throws(() => parseCredentialsKey(bad), CredentialsKeyError, JSON.stringify(bad));
    }
  });

  it('generates $DATA_DIR/credentials.key (0600) once and reuses it; CREDENTIALS_KEY wins', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'capi-cred-'));
    try {
      const dataDir = path.join(dir, 'nested', 'var');
      const k1 = await loadCredentialsKey({ dataDir });
      const file = path.join(dataDir, KEY_FILE_NAME);
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      const k2 = await loadCredentialsKey({ dataDir, envKey: '  ' });
      assert.deepEqual(k2, k1, 'reused on the next start');
      const stored = (await openCredentials({ dataDir })).encrypt('pw-pw-pw-pw-pw');
      assert.equal((await openCredentials({ dataDir })).decrypt(stored), 'pw-pw-pw-pw-pw');
      const fromEnv = await loadCredentialsKey({ dataDir, envKey: HEX_KEY });
      assert.equal(fromEnv.toString('hex'), HEX_KEY);
      assert.equal((await readFile(file, 'utf8')).trim(), k1.toString('hex'), 'the key file is left alone');
      await assert.rejects(loadCredentialsKey({ dataDir, envKey: 'short' }), CredentialsKeyError);
      await writeFile(file, 'garbage');
      await assert.rejects(loadCredentialsKey({ dataDir }), CredentialsKeyError, 'a corrupt key file is never replaced silently');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
