/**
 * The console's second round (issue 48 item 2) in a real browser: every view with its entry open and
 * its charts drawn passes axe at 1280 and 390 px; a URL with filters and an open entry round-trips;
 * the detail opens in view and "Back" returns to where the list was; each chart draws its stats
 * operation's figures with the seeded failure spike; an example event sent changes what the API
 * answers; recovered deliveries are marked; a 200-character unbroken description wraps; times name
 * their zone; test mode says what the sandbox answered. One browser for the file.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { eventually } from '../helpers/eventually.ts';
import { startReceiver, type Receiver } from '../helpers/webhooks.ts';
import { launch, screenshot, seriousViolations, type Browser } from './browser.ts';
import { startConsoleServer, type ConsoleServer } from './harness.ts';
import { LONG_DESCRIPTION, REFUSED_ID, seedConsole, type Seeded } from './seed.ts';

let server: ConsoleServer;
let receiver: Receiver;
let browser: Browser;
let seeded: Seeded;

before(async () => {
  server = await startConsoleServer({ webhookRetrySchedule: [0], webhookAllowPrivateUrls: true });
  receiver = await startReceiver();
  seeded = await seedConsole(server, receiver);
  browser = await launch({ timezoneId: 'Europe/Berlin' });
});

after(async () => {
  await browser?.close();
  await receiver?.stop();
  await server?.close();
});

const get = (url: string, key = seeded.live.key) => request(server.t.app).get(url).set('Authorization', `Bearer ${key}`);

/** The view's heading is shown and nothing is loading any more. */
async function settled(page: Page, heading: string) {
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  await page.waitForLoadState('networkidle');
  await page.getByRole('status').filter({ hasText: 'Loading' }).first().waitFor({ state: 'detached' }).catch(() => undefined);
}

// The pages' own code runs as text: the tests compile without the DOM's types.
/** How far the page, and the widest visible table, scroll sideways (0: not at all). */
const overflow = (page: Page) =>
  page.evaluate(`(() => {
    const tables = [...document.querySelectorAll('.table-wrap')].filter((t) => t.offsetParent !== null);
    return {
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      tables: Math.max(0, ...tables.map((t) => t.scrollWidth - t.clientWidth)),
    };
  })()`) as Promise<{ page: number; tables: number }>;

/** A row's cells but the first (the bucket's start), as text, for each row of a chart's table. */
const chartRows = (page: Page, title: string) =>
  // The table is in a closed <details>: found by its label, not its role (closed, it is out of the accessibility tree).
  page.evaluate(`[...document.querySelectorAll('.table-wrap[aria-label="${title}, oldest first"] tbody tr')]
    .map((r) => [...r.cells].slice(1).map((c) => c.textContent))`) as Promise<string[][]>;

/** Whether uPlot drew anything on the canvas of the chart titled `title` (a pixel not transparent). */
const drawn = async (page: Page, title: string) => {
  await page.locator('figure.chart', { hasText: title }).locator('canvas').first().waitFor();
  return page.evaluate(`(() => {
    const figure = [...document.querySelectorAll('figure.chart')].find((f) => f.querySelector('figcaption strong').textContent === ${JSON.stringify(title)});
    const c = figure.querySelector('canvas');
    const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    return c.width > 0 && data.some((v, i) => i % 4 === 3 && v > 0);
  })()`) as Promise<boolean>;
};

describe('the console, second round', () => {
  test('every view, with its entry open and its charts drawn, at 1280 and 390 px: no serious axe violation, nothing wider than the page', async () => {
    const event = (await get('/api/v1/events?limit=1')).body.data[0].id as string;
    const run = (await get('/api/v1/reports?limit=1', seeded.sandbox.key)).body.data[0].report_id as string;
    // The lists alone are views.test.ts's (at 1280 and 375 px); at 1280 px each list is here beside its entry.
    const views: Array<[path: string, heading: string, shot: string]> = [
      [`request-logs?open=${REFUSED_ID}`, 'Request logs', 'request-logs-entry'],
      [`events?open=${event}`, 'Events', 'events-entry'],
      [`webhook-endpoints?open=${seeded.endpoint}`, 'Webhook endpoints', 'webhook-endpoint'],
      [`webhook-endpoints?open=${seeded.longEndpoint}`, 'Webhook endpoints', 'webhook-endpoint-long'],
      ['services', 'Services', 'services'],
      ['requests?status=any', 'Requests', 'requests'],
    ];
    for (const width of [1280, 390]) {
      const page = await browser.page(width);
      await server.open(page, seeded.live);
      for (const [path, heading, shot] of views) {
        await page.goto(`${server.origin}/console/${path}`);
        await settled(page, heading);
        assert.deepEqual(await seriousViolations(page), [], `${path} at ${width}`);
        assert.deepEqual(await overflow(page), { page: 0, tables: 0 }, `${path} at ${width} is wider than its page`);
        await screenshot(page, `round2-${shot}-${width}`);
      }
      // The sandbox's report run, opened.
      const sandbox = await browser.page(width);
      await server.open(sandbox, seeded.sandbox);
      await sandbox.goto(`${server.origin}/console/reports?open=${run}`);
      await settled(sandbox, 'Reports');
      await sandbox.getByRole('region', { name: `Recipients of ${run}` }).waitFor();
      assert.deepEqual(await seriousViolations(sandbox), [], `reports at ${width}`);
      assert.deepEqual(await overflow(sandbox), { page: 0, tables: 0 });
      await page.close();
      await sandbox.close();
    }
    assert.deepEqual(browser.errors, []);
  });

  test('a URL with filters and an open entry, sent to a colleague, opens the same; Back keeps the filters', async () => {
    const page = await browser.page(1280);
    await server.open(page, seeded.live);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Request logs' }).click();
    await settled(page, 'Request logs');
    await page.getByLabel('Request id').fill(REFUSED_ID);
    await page.getByLabel('Status').selectOption('4xx');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByRole('button', { name: `Details of ${REFUSED_ID}` }).click();
    await page.locator('.detail').getByText(seeded.refused.message).waitFor();
    const shared = new URL(page.url());
    assert.equal(shared.pathname, '/console/request-logs');
    assert.deepEqual(Object.fromEntries(shared.searchParams), { request_id: REFUSED_ID, status: '4xx', open: REFUSED_ID });
    await page.close();

    // Opened in another tab of a browser with a session, on a phone: the same filters, the same entry, in place of the list.
    const phone = await browser.page(390);
    await phone.goto(shared.href);
    await settled(phone, 'Request logs');
    const detail = phone.locator('.detail');
    await detail.getByText(seeded.refused.message).waitFor();
    assert.deepEqual(JSON.parse(await detail.locator('figure.json pre').innerText()), seeded.refused.details);
    assert.match(await detail.innerText(), /Order system key_\S+/);
    assert.equal(await phone.locator('.split-list').isVisible(), false, 'the detail is shown in place of the list');
    await phone.getByRole('button', { name: 'Back to the list' }).click();
    await phone.getByRole('button', { name: `Details of ${REFUSED_ID}` }).waitFor();
    assert.equal(await phone.getByLabel('Request id').inputValue(), REFUSED_ID);
    assert.equal(await phone.getByLabel('Status').inputValue(), '4xx');
    assert.deepEqual(Object.fromEntries(new URL(phone.url()).searchParams), { request_id: REFUSED_ID, status: '4xx' });
    // At 390 px a table's rows are cards (display: block): found as elements, not by their role.
    assert.equal(await phone.locator('tbody tr').filter({ hasText: 'upgradeService' }).count(), 1);

    // An endpoint's failed deliveries, by URL.
    await phone.goto(`${server.origin}/console/webhook-endpoints?open=${seeded.endpoint}&deliveries=failed`);
    await settled(phone, 'Webhook endpoints');
    assert.equal(await phone.getByRole('combobox', { name: 'Status' }).inputValue(), 'failed');
    await eventually(async () => ((await phone.locator('tr.delivery-row').count()) === seeded.spike.failed ? true : undefined), 10_000, 'the failed deliveries listed');
    await phone.close();
    assert.deepEqual(browser.errors, []);
  });

  test('the detail opens in view, its heading focused; "Back to the list" returns to where the list was', async () => {
    for (const width of [390, 1280]) {
      const page = await browser.page(width);
      await server.open(page, seeded.live);
      await settled(page, 'Request logs');
      const last = page.getByRole('button', { name: /^Details of / }).last();
      await last.scrollIntoViewIfNeeded();
      const scrolled = (await page.evaluate('scrollY')) as number;
      assert.ok(scrolled > 500, `the list's last entry is far down (${scrolled}px)`);
      const id = (await last.getAttribute('data-opens'))!;
      await last.click();
      const heading = page.locator('.split-detail .detail-heading');
      await heading.waitFor();
      const box = (await heading.boundingBox())!;
      assert.ok(box.y >= 0 && box.y + box.height <= 900, `${width}: the detail's heading is in view (top ${box.y})`);
      assert.equal(await page.evaluate('document.activeElement?.id'), 'entry-title');
      await page.getByRole('button', { name: 'Back to the list' }).click();
      await page.locator('.split-detail').waitFor({ state: 'detached' });
      assert.ok(Math.abs(((await page.evaluate('scrollY')) as number) - scrolled) <= 2, `${width}: back where the list was`);
      assert.equal(await page.evaluate('document.activeElement?.dataset.opens'), id);
      await page.close();
    }
  });

  test("each chart draws its operation's figures, the failure spike at its worst", async () => {
    const page = await browser.page(1280);
    await server.open(page, seeded.live);
    await settled(page, 'Request logs');
    const title = 'Requests and errors per hour';
    const stats = (await get('/api/v1/request-stats?interval=hour')).body.data;
    const expected = (stats.buckets as Array<{ requests: number; status_classes: Record<string, number> }>).map((b) => {
      const errors = b.status_classes['4xx']! + b.status_classes['5xx']!;
      return [String(b.requests), String(errors), b.requests === 0 ? '—' : `${Math.round((errors / b.requests) * 1000) / 10} %`];
    });
    const rows = await chartRows(page, title);
    assert.equal(rows.length, expected.length);
    // The current hour grows with the console's own calls; every earlier one is settled.
    assert.deepEqual(rows.slice(0, -1), expected.slice(0, -1));
    const spike = stats.buckets.findIndex((b: { start: string }) => Date.parse(b.start) === seeded.spike.at);
    assert.deepEqual(rows[spike], ['15', '9', '60 %']);
    assert.match(await page.locator('.chart-summary').first().innerText(), /highest error rate, 60 % \(9 errors\)/);
    assert.equal(await drawn(page, title), true);

    await page.goto(`${server.origin}/console/webhook-endpoints?open=${seeded.endpoint}`);
    await settled(page, 'Webhook endpoints');
    const deliveries = (await get(`/api/v1/webhook-endpoints/${seeded.endpoint}/stats?interval=hour`)).body.data.buckets as Array<{ start: string; succeeded: number; failed: number; recovered: number; latency_ms: { p50: number | null; p95: number | null } }>;
    const at = deliveries.findIndex((b) => Date.parse(b.start) === seeded.spike.at);
    assert.deepEqual(deliveries[at], { ...deliveries[at], succeeded: 1, failed: 9, recovered: 3 });
    const success = await chartRows(page, 'Success rate');
    assert.deepEqual(success.slice(0, -1), deliveries.slice(0, -1).map((b) => [
      String(b.succeeded), String(b.failed - b.recovered), String(b.recovered), b.succeeded + b.failed === 0 ? '—' : `${Math.round((b.succeeded / (b.succeeded + b.failed)) * 1000) / 10} %`,
    ]));
    assert.deepEqual(success[at], ['1', '6', '3', '10 %']);
    const latency = await chartRows(page, 'Attempt latency');
    assert.deepEqual(latency[at], [`${deliveries[at]!.latency_ms.p50} ms`, '1500 ms']);
    assert.match(await page.locator('figure.chart', { hasText: 'Success rate' }).locator('.chart-summary').innerText(), /lowest success rate, 10 % \(9 of 10 failed\)/);
    assert.equal(await drawn(page, 'Success rate'), true);
    assert.equal(await drawn(page, 'Attempt latency'), true);
    await page.close();
    assert.deepEqual(browser.errors, []);
  });

  test('recovered failures are marked as the API marks them; an example event sent is in what the API then answers', async () => {
    const page = await browser.page(1280);
    await server.open(page, seeded.live);
    await page.goto(`${server.origin}/console/webhook-endpoints?open=${seeded.endpoint}&deliveries=failed`);
    await settled(page, 'Webhook endpoints');
    const listed = (await get(`/api/v1/webhook-endpoints/${seeded.endpoint}/deliveries?status=failed`)).body.data as Array<{ superseded_by: string | null }>;
    const badges = await page.locator('tr.delivery-row td:nth-child(2) .badge').allInnerTexts();
    assert.equal(badges.length, listed.length);
    assert.equal(badges.filter((b) => b === 'failed, recovered').length, listed.filter((d) => d.superseded_by !== null).length);
    assert.equal(badges.filter((b) => b === 'failed, recovered').length, seeded.spike.recovered);

    // The select's name is its label and its chosen option ("Type service.created").
    await page.getByRole('combobox', { name: /^Type/ }).selectOption('report.completed');
    await page.getByRole('button', { name: 'Send the example' }).click();
    const done = await page.getByRole('status').filter({ hasText: 'Example event' }).innerText();
    const id = /Example event (evt_\S+) \(report\.completed\)/.exec(done)?.[1];
    assert.ok(id, done);
    const event = (await get(`/api/v1/events/${id}`)).body.data;
    assert.equal(event.type, 'report.completed');
    assert.equal(event.data.example, true);
    assert.deepEqual(event.deliveries.map((d: { endpoint_id: string }) => d.endpoint_id), [seeded.endpoint]);
    await eventually(async () => (receiver.to('orders').some((r) => r.body.includes(id)) ? true : undefined), 20_000, 'the example delivered to the receiver');
    await page.close();
  });

  test('times name the browser\'s time zone, with UTC on hover and in the detail', async () => {
    const page = await browser.page(1280);
    await server.open(page, seeded.live);
    await page.goto(`${server.origin}/console/request-logs?open=${REFUSED_ID}`);
    await settled(page, 'Request logs');
    assert.match(await page.locator('.zone').innerText(), /Times in Europe\/Berlin/);
    const time = page.locator('.table-wrap[aria-label="Requests, newest first"] time').first();
    assert.match(await time.innerText(), /GMT\+1|CET/);
    assert.match((await time.getAttribute('title'))!, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    assert.match(await page.locator('.detail .facts').innerText(), /(GMT\+1|CET)[\s\S]*\(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)/);
    await page.close();
  });

  test('a 200-character unbroken description wraps in the list and the detail', async () => {
    for (const width of [1280, 390]) {
      const page = await browser.page(width);
      await server.open(page, seeded.live);
      await page.goto(`${server.origin}/console/webhook-endpoints`);
      await settled(page, 'Webhook endpoints');
      const cell = page.getByText(LONG_DESCRIPTION).first();
      const box = (await cell.boundingBox())!;
      assert.ok(box.x + box.width <= width, `${width}: the description ends within the page`);
      assert.ok(box.height > 30, `${width}: the description wraps onto several lines`);
      assert.ok(await page.getByRole('button', { name: /^Manage/ }).last().isVisible());
      assert.deepEqual(await overflow(page), { page: 0, tables: 0 });
      await page.close();
    }
  });

  test('test mode says what the sandbox answered, and the row stays as stored', async () => {
    const page = await browser.page(390);
    await server.open(page, seeded.sandbox);
    await page.goto(`${server.origin}/console/requests`);
    await settled(page, 'Requests');
    const row = page.locator('tbody tr').filter({ has: page.getByRole('button', { name: /^Approve REQ-/ }) }).first();
    const id = /REQ-\d+/.exec(await row.innerText())![0];
    await row.getByRole('button', { name: /^Approve/ }).click();
    const said = await page.getByRole('status').filter({ hasText: 'sandbox answered' }).innerText();
    assert.match(said, new RegExp(`The sandbox answered approved for ${id} \\(simulated: nothing was stored`));
    await page.waitForLoadState('networkidle');
    assert.equal(await page.locator('tbody tr .badge').first().innerText(), 'pending', 'the reloaded row still says pending');
    assert.equal((await get('/api/v1/requests?status=pending', seeded.sandbox.key)).body.data[0].request_status, 'pending');
    await page.close();
    assert.deepEqual(browser.errors, []);
  });
});
