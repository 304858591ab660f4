/**
 * Settings that processes running apart must share are refused by name rather than defaulted
 * (issue 32 rows 7 and 8): CREDENTIALS_KEY on PostgreSQL, PUBLIC_BASE_URL for a worker, and a
 * credentials key other than the one the database recorded at its first start. The embedded
 * default still starts with no settings, records its generated key, and its CLI keeps working.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { keyFingerprint, KEY_FILE_NAME } from '../../src/db/credentials.ts';
import { runFile } from '../helpers/run-file.ts';
import { apiAddress, createPgDatabase, LogCapture, pgQuery, postgresAvailable, ROOT, startRole, startTcpRedis, tmpDir, waitUntil, type PgDatabase, type RoleProcess, type TcpRedis } from './helpers.ts';

const skipPg = !(await postgresAvailable()) && 'no PostgreSQL at DATABASE_URL or 127.0.0.1:5432';
const keyA = randomBytes(32).toString('hex');
const keyB = randomBytes(32).toString('hex');

/** A start that must fail: exit 1 before it is ready, its one stderr line matching `pattern`. */
async function refused(role: RoleProcess['role'], env: NodeJS.ProcessEnv, pattern: RegExp): Promise<void> {
  await assert.rejects(startRole(role, env), (e: Error) => {
    assert.match(e.message, new RegExp(`^${role} exited \\(1\\) before it was ready`), e.message);
    assert.match(e.message, pattern);
    for (const key of [keyA, keyB]) assert.ok(!e.message.includes(key), 'no key in the message');
    return true;
  });
}

describe('processes apart on PostgreSQL refuse settings they cannot default', { skip: skipPg }, () => {
  let pgdb: PgDatabase;
  let redis: TcpRedis;
  const data = tmpDir('capi-ops-shared-');
  const children: RoleProcess[] = [];
  let env: NodeJS.ProcessEnv;

  before(async () => {
    if (skipPg) return;
    [pgdb, redis] = await Promise.all([createPgDatabase(), startTcpRedis()]);
    env = { DATABASE_URL: pgdb.url, REDIS_URL: redis.url, DATA_DIR: data.dir, SMTP_URL: pathToFileURL(path.join(data.dir, 'outbox')).href };
  });
  after(async () => {
    for (const c of children) await c.kill('SIGKILL');
    await redis?.stop();
    await pgdb?.drop();
    data.remove();
  });

  test('start:api and start:worker without CREDENTIALS_KEY, and start:worker without PUBLIC_BASE_URL, exit 1 naming the setting', async () => {
    await refused('api', env, /start:api runs apart on PostgreSQL, so every process needs one shared CREDENTIALS_KEY/);
    await refused('worker', { ...env, PUBLIC_BASE_URL: 'https://api.example.test' }, /start:worker runs apart on PostgreSQL, so every process needs one shared CREDENTIALS_KEY/);
    await refused('worker', { ...env, CREDENTIALS_KEY: keyA }, /start:worker writes the report download links, so it needs PUBLIC_BASE_URL/);
    // Refused before any key was generated under DATA_DIR or recorded in the database.
    assert.throws(() => readFileSync(path.join(data.dir, KEY_FILE_NAME)), /ENOENT/);
  });

  test('the first process records the key; a process with another key is refused, the same key starts', async () => {
    const address = await apiAddress();
    const api = await startRole('api', { ...env, ...address, CREDENTIALS_KEY: keyA });
    children.push(api);
    assert.ok(api.logs.records().some((r) => r.msg === 'credentials key fingerprint recorded in the database'));
    const { rows } = await pgQuery('SELECT id, fingerprint FROM credentials_key_fingerprint', pgdb.url);
    assert.deepEqual(rows, [{ id: 1, fingerprint: keyFingerprint(Buffer.from(keyA, 'hex')) }]);

    const apart = { ...env, PUBLIC_BASE_URL: address.PUBLIC_BASE_URL };
    await refused('worker', { ...apart, CREDENTIALS_KEY: keyB }, /CREDENTIALS_KEY is not the credentials key this database recorded at its first start/);
    await refused('api', { ...env, CREDENTIALS_KEY: keyB }, /CREDENTIALS_KEY is not the credentials key this database recorded/);
    // `npm start` on the same database with no key: its generated key file is refused too.
    await refused('all', { DATABASE_URL: pgdb.url, DATA_DIR: data.dir }, /key file .* \(CREDENTIALS_KEY unset\) is not the credentials key this database recorded/);

    const worker = await startRole('worker', { ...apart, CREDENTIALS_KEY: keyA });
    children.push(worker);
    assert.ok(worker.logs.records().some((r) => r.msg === 'credentials key matches the database'));
    assert.deepEqual(await Promise.all([api.kill(), worker.kill()]), [0, 0]);
  });
});

describe('npm start with no settings (embedded database)', () => {
  const data = tmpDir('capi-ops-shared-embedded-');
  let server: RoleProcess | undefined;
  const cli = (env: NodeJS.ProcessEnv, ...args: string[]) =>
    runFile(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: data.dir, ...env },
      timeoutMs: 90_000,
    });
  after(async () => {
    await server?.kill('SIGKILL');
    data.remove();
  });

  test('records its generated key, starts again on it, refuses another CREDENTIALS_KEY; the CLI on its DATA_DIR works', async () => {
    server = await startRole('all', { DATA_DIR: data.dir });
    assert.ok(server.logs.records().some((r) => r.msg === 'credentials key fingerprint recorded in the database'));
    const generated = readFileSync(path.join(data.dir, KEY_FILE_NAME), 'utf8').trim();

    // The CLI reaches the database through the server, with the same key file: it works.
    const demo = await cli({}, 'demo', '--json');
    assert.equal(demo.code, 0, demo.stderr);
    // With another key it is refused, naming the setting, and writes nothing.
    const other = await cli({ CREDENTIALS_KEY: keyB }, 'demo', '--json');
    assert.equal(other.code, 1, other.stderr);
    assert.match(other.stderr, /CREDENTIALS_KEY is not the credentials key this database recorded/);
    assert.equal(other.stdout, '');
    assert.equal(await server.kill(), 0);

    server = await startRole('all', { DATA_DIR: data.dir });
    assert.ok(server.logs.records().some((r) => r.msg === 'credentials key matches the database'));
    assert.equal(await server.kill(), 0);
    server = undefined;

    await refused('all', { DATA_DIR: data.dir, CREDENTIALS_KEY: keyB }, /CREDENTIALS_KEY is not the credentials key this database recorded/);
    // The same key given as the setting is the same key.
    server = await startRole('all', { DATA_DIR: data.dir, CREDENTIALS_KEY: generated });
    assert.ok(server.logs.records().some((r) => r.msg === 'credentials key matches the database'));
    assert.equal(await server.kill(), 0);
    server = undefined;
  });

  // A SIGTERM that comes while the server starts (here: once it has checked the key, before it
  // listens) stops it cleanly once started, rather than killing it by the signal's default.
  test('a SIGTERM during start-up stops the server cleanly once it has started (exit 0)', async () => {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main/all.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', PORT: '0', SHUTDOWN_DELAY_MS: '0', DATA_DIR: data.dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs = new LogCapture();
    proc.stdout.pipe(logs);
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    try {
      await waitUntil(() => logs.records().some((r) => r.msg === 'credentials key matches the database'), 60_000, 'the key check');
      proc.kill('SIGTERM');
      assert.equal(await exited, 0, logs.text());
      assert.ok(logs.records().some((r) => r.msg === 'stopped'), logs.text());
    } finally {
      proc.kill('SIGKILL');
    }
  });
});
