/**
 * A server for the console's view tests: the real app (src/app.ts, its /api and /console/assets)
 * behind a console session of the test's own making, as the browser sees one: a single-use start
 * link that sets an HttpOnly, SameSite=Strict cookie, the shell of src/console/static.ts, and
 * /api calls authenticated by that cookie (with the CSRF token on every non-GET) as the key's.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Page } from 'playwright-core';
import { CONSOLE_SHELL_PATHS, consoleErrorHtml, consoleShell, sendConsoleHtml } from '../../src/console/static.ts';
import type { Config } from '../../src/config.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import type { TestApiKey } from '../helpers/factories.ts';

interface Session {
  key: TestApiKey;
  broker: string;
  csrfToken: string;
}

export interface ConsoleServer {
  t: TestApp;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** Starts a console session of `key` in `page` (its start link, then the shell). */
  open(page: Page, key: TestApiKey, broker: string): Promise<void>;
  close(): Promise<void>;
}

const cookieOf = (req: http.IncomingMessage): string | undefined =>
  /(?:^|;\s*)console_session=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];

export async function startConsoleServer(overrides: Partial<Config> = {}): Promise<ConsoleServer> {
  const t = await createTestApp(overrides);
  const links = new Map<string, Session>();
  const sessions = new Map<string, Session>();
  const shell = express();
  shell.get('/console/start', (req, res) => {
    const link = typeof req.query.token === 'string' ? links.get(req.query.token) : undefined;
    if (!link) return sendConsoleHtml(res, 401, consoleErrorHtml('Console link refused', 'This link was used already, has expired or is unknown.'));
    links.delete(String(req.query.token));
    const id = randomBytes(24).toString('base64url');
    sessions.set(id, link);
    res.cookie('console_session', id, { httpOnly: true, sameSite: 'strict', path: '/' });
    res.redirect(303, '/console/');
  });
  shell.get(CONSOLE_SHELL_PATHS, consoleShell(async (req) => {
    const found = sessions.get(cookieOf(req) ?? '');
    return found && { csrfToken: found.csrfToken, mode: found.key.mode, broker: found.broker };
  }));
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/console/start' || CONSOLE_SHELL_PATHS.test(path)) return shell(req, res);
    const session = sessions.get(cookieOf(req) ?? '');
    if (session && path.startsWith('/api/')) {
      if (req.method !== 'GET' && req.method !== 'HEAD' && req.headers['x-csrf-token'] !== session.csrfToken) {
        res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ success: false, error: { code: 'forbidden', message: 'CSRF token missing or wrong' } }));
        return;
      }
      req.headers.authorization = `Bearer ${session.key.key}`;
    }
    t.app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    t,
    origin,
    async open(page, key, broker) {
      const token = randomBytes(24).toString('base64url');
      links.set(token, { key, broker, csrfToken: randomBytes(24).toString('base64url') });
      await page.goto(`${origin}/console/start?token=${token}`);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await t.close();
    },
  };
}
