/**
 * Issue 45 item 1: the setups that cannot work, refused by `checkSetup` in one line naming the
 * setting, and SMTP_URL's forms (file:///dir chooses the outbox by name). No process is started.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { checkSetup, loadConfig, mailTarget, parseSmtpUrl, type Role } from '../src/config.ts';

const KEY = 'ab'.repeat(32);
/** A complete setup of processes apart: every check passes on it. */
const APART = {
  DATABASE_URL: 'postgresql://capi:secret@db.internal:5432/capi',
  REDIS_URL: 'redis://:secret@redis.internal:6379/0',
  CREDENTIALS_KEY: KEY,
  PUBLIC_BASE_URL: 'https://api.example.com',
  SMTP_URL: 'smtp://mailer:secret@smtp.internal:587',
};

function refusal(role: Role, env: NodeJS.ProcessEnv): string | undefined {
  try {
    checkSetup(role, loadConfig(env), env);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('checkSetup', () => {
  test('npm start with nothing configured starts (the operating contract\'s defaults)', () => {
    assert.equal(refusal('all', {}), undefined);
    assert.equal(refusal('all', { REDIS_URL: 'redis://127.0.0.1:6379/0' }), undefined);
  });

  test('a complete setup apart starts, api and worker', () => {
    assert.equal(refusal('api', APART), undefined);
    assert.equal(refusal('worker', APART), undefined);
    assert.equal(refusal('worker', { ...APART, SMTP_URL: 'file:///var/lib/capi/outbox' }), undefined);
    // The API sends no e-mail.
    assert.equal(refusal('api', { ...APART, SMTP_URL: '' }), undefined);
  });

  const rows: Array<[what: string, role: Role, env: NodeJS.ProcessEnv, setting: RegExp]> = [
    ['start:api without DATABASE_URL on a shared REDIS_URL', 'api', { ...APART, DATABASE_URL: '' }, /^npm run start:api runs apart on the shared REDIS_URL, so it needs DATABASE_URL/],
    ['start:worker without DATABASE_URL on a shared REDIS_URL', 'worker', { ...APART, DATABASE_URL: undefined }, /^npm run start:worker runs apart on the shared REDIS_URL, so it needs DATABASE_URL/],
    ['start:api without REDIS_URL', 'api', { ...APART, REDIS_URL: '' }, /^npm run start:api runs apart from its other half, so both need one shared REDIS_URL$/],
    ['start:worker without CREDENTIALS_KEY', 'worker', { ...APART, CREDENTIALS_KEY: '' }, /needs one shared CREDENTIALS_KEY/],
    ['start:worker without PUBLIC_BASE_URL', 'worker', { ...APART, PUBLIC_BASE_URL: ' ' }, /^npm run start:worker writes the report download links, so it needs PUBLIC_BASE_URL/],
    ['start:worker on PostgreSQL without SMTP_URL', 'worker', { ...APART, SMTP_URL: undefined }, /^npm run start:worker sends the report e-mails, so it needs SMTP_URL: smtp:\/\/user:pass@host:port, or file:\/\/\/a\/directory/],
    ['start:api on HOST=0.0.0.0 without PUBLIC_BASE_URL', 'api', { ...APART, HOST: '0.0.0.0', PUBLIC_BASE_URL: '' }, /^HOST=0\.0\.0\.0 listens on every address, none a client can be sent to, so the console sign-in links need PUBLIC_BASE_URL/],
    ['start:api on HOST=:: without PUBLIC_BASE_URL', 'api', { ...APART, HOST: '::', PUBLIC_BASE_URL: '' }, /^HOST=:: .* need PUBLIC_BASE_URL/],
    ['npm start on HOST=:: without PUBLIC_BASE_URL', 'all', { HOST: '::' }, /^HOST=:: .*so the console sign-in and report download links need PUBLIC_BASE_URL/],
  ];
  for (const [what, role, env, setting] of rows) {
    test(`${what}: refused in one line naming the setting, no password in it`, () => {
      const message = refusal(role, env);
      assert.ok(message, 'refused');
      assert.match(message, setting);
      assert.ok(!message.includes('\n'), 'one line');
      assert.ok(!message.includes('secret'), 'no password');
    });
  }

  test('start:api on HOST=:: with PUBLIC_BASE_URL starts', () => {
    assert.equal(refusal('api', { ...APART, HOST: '::' }), undefined);
  });
});

describe('SMTP_URL', () => {
  const dataDir = path.resolve('/srv/capi');
  test('unset: the outbox under DATA_DIR; smtp and smtps: that server', () => {
    assert.deepEqual(parseSmtpUrl(undefined, dataDir), { smtpUrl: undefined, outboxDir: '/srv/capi/outbox' });
    assert.equal(parseSmtpUrl('smtp://u:p@mail:25', dataDir).smtpUrl, 'smtp://u:p@mail:25');
    assert.equal(parseSmtpUrl('smtps://mail', dataDir).smtpUrl, 'smtps://mail');
  });

  test('file:///dir: e-mails written to that directory, chosen by name', () => {
    assert.deepEqual(parseSmtpUrl('file:///var/lib/capi/outbox/', dataDir), { smtpUrl: undefined, outboxDir: '/var/lib/capi/outbox' });
    assert.deepEqual(parseSmtpUrl('file://localhost/tmp/mails', dataDir), { smtpUrl: undefined, outboxDir: '/tmp/mails' });
    assert.equal(loadConfig({ SMTP_URL: 'file:///tmp/mails' }).outboxDir, '/tmp/mails');
  });

  for (const bad of ['http://u:secret@mail', 'file://otherhost/tmp', 'file:///tmp?x=1', 'mail.example.com', 'smtp://']) {
    test(`${bad}: refused naming SMTP_URL, without the value`, () => {
      assert.throws(() => loadConfig({ SMTP_URL: bad }), (err: Error) => {
        assert.match(err.message, /^SMTP_URL must be smtp:\/\/user:pass@host:port, smtps:\/\/… or file:\/\/\/an\/absolute\/directory/);
        assert.ok(!err.message.includes('secret') && !err.message.includes('otherhost'));
        return true;
      });
    });
  }

  test('mailTarget never shows a password', () => {
    assert.equal(mailTarget(loadConfig({ SMTP_URL: 'smtp://user:secret@mail.internal:587' })), 'smtp://mail.internal:587');
    assert.equal(mailTarget(loadConfig({ SMTP_URL: 'file:///tmp/mails' })), 'file:///tmp/mails');
    assert.equal(mailTarget(loadConfig({ DATA_DIR: '/srv/capi' })), 'file:///srv/capi/outbox');
  });
});
