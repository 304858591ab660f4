#!/usr/bin/env -S npx tsx
// `npm run docs:screenshots`: the console's pictures in docs/screenshots/, every view at 1280 and
// 390 px, made as the browser tests make theirs: the console built afresh, served by the whole app on
// a database of its own seeded with a known history (test/console/seed.ts), in Debian's chromium.
// Run it after a change to the console, and commit the pictures with the change.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT_DIR } from '../src/root.ts';
import { startReceiver } from '../test/helpers/webhooks.ts';
import { launch } from '../test/console/browser.ts';
import { startConsoleServer } from '../test/console/harness.ts';
import { REFUSED_ID, seedConsole } from '../test/console/seed.ts';

const OUT = path.join(ROOT_DIR, 'docs', 'screenshots');
const HEIGHT: Record<number, number> = { 1280: 800, 390: 844 };

execFileSync(process.execPath, [path.join(ROOT_DIR, 'console', 'build.mjs')], { stdio: 'inherit' });
mkdirSync(OUT, { recursive: true });
process.env.LOG_LEVEL ??= 'silent';
const server = await startConsoleServer({ webhookRetrySchedule: [0], webhookAllowPrivateUrls: true });
const receiver = await startReceiver();
const browser = await launch({ timezoneId: 'Europe/Berlin' });
try {
  const seeded = await seedConsole(server, receiver);
  const event = (await server.t.prisma.event.findFirst({ where: { brokerId: seeded.live.brokerId, type: 'request.created' }, select: { id: true } }))!.id;
  const views: Array<{ name: string; path: string; sandbox?: boolean }> = [
    { name: 'request-logs', path: `request-logs?open=${REFUSED_ID}` },
    { name: 'events', path: `events?open=${event}` },
    { name: 'webhook-endpoints', path: `webhook-endpoints?open=${seeded.endpoint}` },
    { name: 'services', path: 'services' },
    { name: 'requests', path: 'requests?status=any' },
    { name: 'reports', path: 'reports', sandbox: true },
  ];
  for (const width of [1280, 390]) {
    for (const sandbox of [false, true]) {
      const page = await browser.page(width);
      await page.setViewportSize({ width, height: HEIGHT[width]! });
      await server.open(page, sandbox ? seeded.sandbox : seeded.live);
      for (const view of views.filter((v) => (v.sandbox ?? false) === sandbox)) {
        await page.goto(`${server.origin}/console/${view.path}`);
        await page.getByRole('heading', { level: 1 }).waitFor();
        await page.waitForLoadState('networkidle');
        if (view.name === 'reports') await page.getByRole('button', { name: /^Recipients/ }).first().click();
        await page.waitForLoadState('networkidle');
        await page.screenshot({ path: path.join(OUT, `${view.name}-${width}.png`) });
        console.log(`docs/screenshots/${view.name}-${width}.png`);
      }
      await page.close();
    }
  }
  if (browser.errors.length > 0) throw new Error(`the console logged errors:\n${browser.errors.join('\n')}`);
} finally {
  await browser.close();
  await receiver.stop();
  await server.close();
}
