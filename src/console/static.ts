/**
 * The console's page and files (issue 41): `/console/assets/*` from the bundle that
 * `npm run build:console` writes to dist/console/ (the composition names the folder), and the HTML
 * shell, console/index.html with the session's CSRF token, mode and broker filled in. No session
 * logic lives here: whoever knows the session (src/console/adapter.ts) hands it to `consoleShell`.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import express, { type Express, type RequestHandler } from 'express';
import { consolePage, consolePageHeaders, escapeHtml, sendConsolePage } from './pages.ts';

/** What the page is told of its session, in its `<meta>` tags. */
export interface ConsoleShellSession {
  csrfToken: string;
  mode: 'live' | 'test';
  broker: string;
}

const templates = new Map<string, string>();

/** The build's index.html, read once; a server without the build says so instead of serving a blank page. */
function shellTemplate(dir: string): string | undefined {
  if (!templates.has(dir) && existsSync(path.join(dir, 'index.html'))) templates.set(dir, readFileSync(path.join(dir, 'index.html'), 'utf8'));
  return templates.get(dir);
}

/** The console's HTML for one session, from the build in `dir` (dist/console). */
export function consoleShellHtml(dir: string, session: ConsoleShellSession): string {
  const page = shellTemplate(dir);
  if (page === undefined) return consolePage('Console not built', '<p>Run <code>npm run build:console</code> on the server.</p>');
  const values: Record<string, string> = { csrf_token: session.csrfToken, mode: session.mode, broker: session.broker };
  return page.replace(/\{\{(\w+)\}\}/g, (_m, name: string) => escapeHtml(values[name] ?? ''));
}

/**
 * The shell for `/console/` and every `/console/*` view but `/console/start` (the link's own
 * route) and `/console/assets/*`; `session` finds the request's session, or answers the page that
 * says why there is none and gives undefined.
 */
export function consoleShell(dir: string, session: (req: express.Request, res: express.Response) => Promise<ConsoleShellSession | undefined>): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    session(req, res).then((found) => {
      if (found) sendConsolePage(res, 200, consoleShellHtml(dir, found));
    }, next);
  };
}

/** `/console/assets/*`: the files of the build in `dir`, revalidated on each load (their names carry no hash). */
export function registerConsoleAssets(app: Express, dir: string): void {
  const files = express.static(path.join(dir, 'assets'), { index: false, redirect: false, fallthrough: true, cacheControl: false, etag: true });
  app.use('/console/assets', (req, res, next) => {
    consolePageHeaders(res);
    res.setHeader('Cache-Control', 'no-cache');
    files(req, res, next);
  });
}

/** Where the shell is mounted: `/console` and below, less the link's route and the assets. */
export const CONSOLE_SHELL_PATHS = /^\/console(?:\/(?!start(?:\/|$)|assets(?:\/|$)).*)?$/;
