/** The WEBHOOK_* settings: their defaults, and a bad value refused at start with the setting's name. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_DISABLE_AFTER_HOURS, DEFAULT_RETRY_SCHEDULE, loadConfig } from '../../src/config.ts';

describe('WEBHOOK_* settings', () => {
  test('defaults: 15 s timeout, the Standard Webhooks schedule, 120 hours, no private URLs', () => {
    const c = loadConfig({});
    assert.equal(c.webhookTimeoutMs, 15_000);
    assert.deepEqual(c.webhookRetrySchedule, DEFAULT_RETRY_SCHEDULE);
    assert.deepEqual([...c.webhookRetrySchedule], [0, 5, 300, 1800, 7200, 18000, 36000, 36000]);
    assert.equal(c.webhookDisableAfterHours, DEFAULT_DISABLE_AFTER_HOURS);
    assert.equal(c.webhookAllowPrivateUrls, false);
    assert.equal(c.webhookEndpointsPerBroker, 16);
  });

  const set = [
    { env: { WEBHOOK_TIMEOUT_MS: '2000' }, key: 'webhookTimeoutMs', value: 2000 },
    { env: { WEBHOOK_RETRY_SCHEDULE: '0,1,2' }, key: 'webhookRetrySchedule', value: [0, 1, 2] },
    { env: { WEBHOOK_DISABLE_AFTER_HOURS: '1' }, key: 'webhookDisableAfterHours', value: 1 },
    { env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }, key: 'webhookAllowPrivateUrls', value: true },
    { env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'false' }, key: 'webhookAllowPrivateUrls', value: false },
    { env: { WEBHOOK_ENDPOINTS_PER_BROKER: '3' }, key: 'webhookEndpointsPerBroker', value: 3 },
  ] as const;
  for (const row of set) {
    test(`${JSON.stringify(row.env)} → ${row.key} ${JSON.stringify(row.value)}`, () => {
      assert.deepEqual(loadConfig(row.env)[row.key], row.value);
    });
  }

  const refused = [
    { WEBHOOK_TIMEOUT_MS: '0' },
    { WEBHOOK_TIMEOUT_MS: 'soon' },
    { WEBHOOK_RETRY_SCHEDULE: '0,-1' },
    { WEBHOOK_RETRY_SCHEDULE: '0,,5' },
    { WEBHOOK_DISABLE_AFTER_HOURS: '0' },
    { WEBHOOK_ALLOW_PRIVATE_URLS: 'yes' },
    { WEBHOOK_ENDPOINTS_PER_BROKER: '0' },
    { WEBHOOK_ENDPOINTS_PER_BROKER: '101' },
  ];
  for (const env of refused) {
    const name = Object.keys(env)[0]!;
    test(`${JSON.stringify(env)} is refused, naming ${name}`, () => {
      assert.throws(() => loadConfig(env), (e: Error) => e.message.includes(name));
    });
  }
});
