/**
 * The console's browser tests' parts: Debian's chromium driven by playwright-core (no browser of
 * its own downloads here), a fresh profile per launch, every console error and page error kept,
 * axe-core run in the page, and screenshots under var/console-screenshots/.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { ROOT_DIR } from '../../src/root.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = path.join(ROOT_DIR, 'var', 'console-screenshots');

const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  /** A new tab whose console errors and uncaught errors land in `errors`. */
  page(width?: number): Promise<Page>;
  /** What the pages logged as errors (console.error, failed loads, CSP refusals, uncaught exceptions). */
  errors: string[];
  close(): Promise<void>;
}

/** `timezoneId` (an IANA name) sets the browser's time zone, which the console names beside its times. */
export async function launch(options: { timezoneId?: string } = {}): Promise<Browser> {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'console-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 900 },
    ...(options.timezoneId !== undefined && { timezoneId: options.timezoneId }),
  });
  const errors: string[] = [];
  const watch = (page: Page) => {
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(`${page.url()}: ${msg.text()}`);
    });
    page.on('pageerror', (err) => errors.push(`${page.url()}: uncaught ${err.message}`));
  };
  context.pages().forEach(watch);
  context.on('page', watch);
  return {
    context,
    errors,
    async page(width = 1280) {
      const page = await context.newPage();
      await page.setViewportSize({ width, height: 900 });
      return page;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core's serious and critical violations on the page as it is now. The script goes in through
 * the DevTools protocol, not a <script> tag, which the console's CSP refuses (as it should).
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(`${AXE_SOURCE}\n;undefined`);
  const violations = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => JSON.stringify(n.target)) })))",
  )) as AxeViolation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
