/**
 * The pages a console link opens before the console itself: a page whose form starts the session,
 * and the page that says a link no longer works. Served as static HTML under the console's CSP.
 */
import type { Response } from 'express';

/** The console's Content-Security-Policy: its own scripts, styles and API calls only. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
}

/**
 * The console's CSP, and never cached (the shell holds a CSRF token): every /console answer; its
 * static assets are revalidated instead (src/console/static.ts). `nosniff` and `no-referrer` come
 * with every answer of the app (src/http/security-headers.ts).
 */
export function consolePageHeaders(res: Response): void {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  res.setHeader('Cache-Control', 'no-store');
}

/** Answers `status` with one of the console's HTML pages. */
export function sendConsolePage(res: Response, status: number, html: string): void {
  res.status(status);
  consolePageHeaders(res);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.send(html);
}

/**
 * The link's page: a form that POSTs the token. A GET never starts the session, so a mail scanner
 * or a chat's link preview fetching the link does not use it up; the script presses the button.
 */
export function startPage(token: string): string {
  return page(
    'Open the console',
    `<form method="post" action="/console/start" id="start">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<button type="submit">Open the console</button>
</form>
<script src="/console/start.js"></script>`,
  );
}

/** Presses the start page's button: the only script of that page (no inline script under the CSP). */
export const START_SCRIPT = "document.getElementById('start')?.requestSubmit();\n";

export function linkRefusedPage(): string {
  return page(
    'This console link does not work',
    `<p>It has been used already, it has expired (a link works once, for 10 minutes), or its key was revoked.</p>
<p>Ask for a new one: <code>POST /api/v1/console-sessions</code> with an <code>admin:full</code> key, or <code>npm run cli -- console --broker SLUG</code>.</p>`,
  );
}
