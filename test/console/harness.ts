/**
 * A server for the console's browser tests: the whole app (src/app.ts) listening on a port of
 * this machine, and console links made as an integrator makes them, with createConsoleSession.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import request from 'supertest';
import type { Config } from '../../src/config.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import type { TestApiKey } from '../helpers/factories.ts';

export interface ConsoleServer {
  t: TestApp;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** A console link of `key` (createConsoleSession), on this server's origin. */
  link(key: TestApiKey): Promise<string>;
  /** Opens a new console session of `key` in `page`, through its link. */
  open(page: Page, key: TestApiKey): Promise<void>;
  close(): Promise<void>;
}

export async function startConsoleServer(overrides: Partial<Config> = {}): Promise<ConsoleServer> {
  const t = await createTestApp(overrides);
  const server = http.createServer(t.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const link = async (key: TestApiKey) => {
    const res = await request(t.app).post('/api/v1/console-sessions').set('Authorization', `Bearer ${key.key}`);
    if (res.status !== 200) throw new Error(`createConsoleSession answered ${res.status} ${JSON.stringify(res.body)}`);
    // The link names the server's configured public URL; the test's server listens on a port of its own.
    const url = new URL(res.body.data.url as string);
    return `${origin}${url.pathname}${url.search}`;
  };
  return {
    t,
    origin,
    link,
    async open(page, key) {
      await page.goto(await link(key));
      await page.waitForURL(`${origin}/console/`);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await t.close();
    },
  };
}
