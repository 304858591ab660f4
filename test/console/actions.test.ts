/**
 * Each of the console's changes, done in a real browser, changes what the API then answers (issue
 * 48): an endpoint's edit, disable and enable, a ping, a delivery redelivered, and a request
 * denied with its reason. (Send example, recover and approve: shared-views and afternoon.)
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { apiKey, broker, type TestApiKey } from '../helpers/factories.ts';
import { eventually } from '../helpers/eventually.ts';
import { startReceiver, type Receiver } from '../helpers/webhooks.ts';
import { launch, type Browser } from './browser.ts';
import { startConsoleServer, type ConsoleServer } from './harness.ts';

let server: ConsoleServer;
let receiver: Receiver;
let browser: Browser;

before(async () => {
  server = await startConsoleServer({ webhookRetrySchedule: [0], webhookAllowPrivateUrls: true });
  receiver = await startReceiver();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await receiver?.stop();
  await server?.close();
});

const asKey = (key: TestApiKey) => ({
  get: (url: string) => request(server.t.app).get(url).set('Authorization', `Bearer ${key.key}`),
  post: (url: string, body: object) => request(server.t.app).post(url).set('Authorization', `Bearer ${key.key}`).send(body),
});

const status = (page: Page, text: string | RegExp) => page.getByRole('status').filter({ hasText: text }).waitFor();

test("the console's changes are the API's: edit, disable, enable, ping, redeliver, deny", async () => {
  const shop = await broker(server.t.prisma, { approval: 'manual', name: 'Actions Shop' });
  const key = await apiKey(server.t.prisma, { brokerId: shop.id, mode: 'live', rateLimit: 100_000 });
  const api = asKey(key);
  const hook = await api.post('/api/v1/webhook-endpoints', { url: receiver.url('actions'), description: 'Before' });
  assert.equal(hook.status, 200, JSON.stringify(hook.body));
  const endpointId = hook.body.data.id as string;
  const order = await api.post('/api/v1/service-create', { plan: 'Standard VPS', hostname: 'deny.example.com', customer_email: 'ann@example.com' });
  assert.equal(order.status, 202, JSON.stringify(order.body));
  const requestId = order.body.data.request_id as string;

  const page = await browser.page();
  await server.open(page, key);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Webhook endpoints' }).click();
  await page.getByRole('button', { name: /^Manage/ }).first().click();

  // Edit: the description the API then answers.
  await page.getByLabel('Description', { exact: true }).fill('Edited in the console');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await eventually(async () => ((await api.get(`/api/v1/webhook-endpoints/${endpointId}`)).body.data?.description === 'Edited in the console' ? true : undefined), 10_000, 'the edited description');

  // Disable, then enable.
  await page.getByRole('button', { name: 'Disable', exact: true }).click();
  await status(page, 'Endpoint disabled.');
  assert.equal((await api.get(`/api/v1/webhook-endpoints/${endpointId}`)).body.data.status, 'disabled');
  await page.getByRole('button', { name: 'Enable', exact: true }).click();
  await status(page, 'Endpoint enabled.');
  assert.equal((await api.get(`/api/v1/webhook-endpoints/${endpointId}`)).body.data.status, 'enabled');

  // A ping: an event the API answers, delivered to the receiver.
  await page.getByRole('button', { name: 'Send a ping' }).click();
  await status(page, /^Ping event evt_\S+ queued\.$/);
  const pingId = /Ping event (evt_\S+) queued/.exec(await page.getByRole('status').filter({ hasText: 'Ping event' }).innerText())![1]!;
  const ping = await api.get(`/api/v1/events/${pingId}`);
  assert.equal(ping.status, 200, JSON.stringify(ping.body));
  await eventually(() => (receiver.to('actions').some((r) => r.body.includes(pingId)) ? true : undefined), 30_000, 'the ping delivered');

  // Redeliver the ping's delivery: the receiver gets it a second time.
  await eventually(async () => {
    await page.getByRole('button', { name: 'Refresh deliveries' }).click();
    await page.waitForLoadState('networkidle');
    return (await page.getByRole('button', { name: `Redeliver ${pingId}` }).count()) > 0 ? true : undefined;
  }, 30_000, 'the ping in the deliveries');
  await page.getByRole('button', { name: `Redeliver ${pingId}` }).first().click();
  await eventually(() => (receiver.to('actions').filter((r) => r.body.includes(pingId)).length === 2 ? true : undefined), 30_000, 'the ping delivered again');

  // Deny a pending request with a reason: the API then answers it denied, with that reason.
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Requests' }).click();
  await page.getByLabel(`Reason to deny ${requestId}`).fill('No capacity in that region');
  await page.getByRole('button', { name: `Deny ${requestId}` }).click();
  await status(page, /denied/);
  const listed = await api.get('/api/v1/requests?status=denied');
  const denied = (listed.body.data as Array<{ request_id: string; request_status: string; denial_reason: string }>).find((r) => r.request_id === requestId);
  assert.equal(denied?.request_status, 'denied', JSON.stringify(listed.body));
  assert.equal(denied.denial_reason, 'No capacity in that region');
  assert.deepEqual(browser.errors, []);
});
