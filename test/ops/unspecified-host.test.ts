/**
 * Issue 40 item 7: with HOST=:: (or 0.0.0.0) and no PUBLIC_BASE_URL, report e-mails carried
 * `http://[::]:PORT/downloads/…`, a link no client can open. Every process writes links
 * (`start:api` the console sign-in links, issue 45), so each refuses to start there, naming
 * PUBLIC_BASE_URL in one line; with it set, the links start with it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isUnspecifiedHost, loadConfig } from '../../src/config.ts';
import { startRuntime } from '../../src/main/runtime.ts';
import { linkUrl } from '../../src/reports/delivery/links.ts';
import { startRole, tmpDir } from './helpers.ts';

const REFUSAL = /^HOST=(\S+) listens on every address, none a client can be sent to, so the (console sign-in and report download|console sign-in|report download) links need PUBLIC_BASE_URL: the address people reach the API at/;

describe('isUnspecifiedHost', () => {
  const rows: Array<[host: string, unspecified: boolean]> = [
    ['::', true],
    ['[::]', true],
    ['0.0.0.0', true],
    ['0:0:0:0:0:0:0:0', true],
    ['::0', true],
    ['0000::', true],
    ['::ffff:0.0.0.0', true],
    ['127.0.0.1', false],
    ['::1', false],
    ['192.168.1.10', false],
    ['localhost', false],
    ['api.example.com', false],
  ];
  for (const [host, unspecified] of rows) {
    test(`${host} → ${unspecified}`, () => assert.equal(isUnspecifiedHost(host), unspecified));
  }
});

describe('a process that writes download links on an unspecified HOST', () => {
  for (const host of ['::', '0.0.0.0', '[::]']) {
    test(`HOST=${host} without PUBLIC_BASE_URL: npm start, start:api and start:worker refuse to start, naming the setting`, async () => {
      const data = tmpDir('capi-ops-unspecified-');
      try {
        for (const role of ['all', 'api', 'worker'] as const) {
          await assert.rejects(startRuntime(role, { env: { HOST: host, DATA_DIR: data.dir, REDIS_URL: 'redis://127.0.0.1:1' } }), (error: Error) => {
            assert.match(error.message, REFUSAL);
            assert.ok(!error.message.includes('\n'), 'one line');
            return true;
          });
        }
      } finally {
        data.remove();
      }
    });
  }

  test('with PUBLIC_BASE_URL the links start with it, not with HOST', () => {
    const config = loadConfig({ HOST: '::', PORT: '3000', PUBLIC_BASE_URL: 'https://api.example.com/' });
    assert.equal(linkUrl(config, 'tok'), 'https://api.example.com/downloads/reports/tok');
  });

  test('npm start with HOST=:: and no PUBLIC_BASE_URL exits 1 before it is ready, the one line on its error output', async () => {
    const data = tmpDir('capi-ops-unspecified-spawn-');
    try {
      await assert.rejects(startRole('all', { HOST: '::', DATA_DIR: data.dir }), (error: Error) => {
        assert.match(error.message, /^all exited \(1\) before it was ready/);
        assert.match(error.message, /HOST=:: listens on every address, none a client can be sent to, so the console sign-in and report download links need PUBLIC_BASE_URL/);
        return true;
      });
    } finally {
      data.remove();
    }
  });
});
