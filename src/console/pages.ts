/**
 * The pages of the console that are not the console itself: the link's page whose form starts the
 * session, and the pages that say why the console does not open (a link that does not work, a
 * session that ended, an address the key refuses, too many attempts) or that it was signed out.
 * Static HTML in the console's own stylesheet, under the console's CSP; no script but the start
 * page's own file.
 */
import type { Response } from 'express';

/** The console's Content-Security-Policy: its own scripts, styles and API calls only. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** One page in the console's style (console/src/console.css, `.refused`): `body` is trusted HTML. */
export function consolePage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/console/assets/console-style.css"></head>
<body>
<header class="top"><p class="brand"><span>Console</span></p></header>
<main id="main" class="refused">
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
  return consolePage(
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

const NEW_LINK = '<p>Ask for a new console link: <code>POST /api/v1/console-sessions</code> with an <code>admin:full</code> key, or <code>npm run cli -- console --broker SLUG</code>.</p>';

export function linkRefusedPage(): string {
  return consolePage(
    'This console link does not work',
    `<p>It has been used already, it has expired (a link works once, for 10 minutes), or its key was revoked or has expired.</p>\n${NEW_LINK}`,
  );
}

/** The session of the request's cookie has ended, or there is none. */
export function sessionNeededPage(): string {
  return consolePage(
    'Console session needed',
    `<p>This console session has ended (signed out, 30 minutes without use, its hour over, or its key revoked) or was never started.</p>\n${NEW_LINK}`,
  );
}

/** The key's IP whitelist does not hold the caller: the console refuses it as the API does. */
export function ipRefusedPage(ip: string): string {
  return consolePage(
    'The console does not open from this address',
    `<p>The key of this console is restricted to an IP whitelist, and this address (<code>${escapeHtml(ip)}</code>) is not on it: use the console from an address the key allows.</p>`,
  );
}

export function tooManyPage(retryAfter: number): string {
  return consolePage(
    'Too many attempts',
    `<p>This address has presented too many console links or sessions that do not work. Try again in ${retryAfter} seconds.</p>`,
  );
}

export function signedOutPage(): string {
  return consolePage('Signed out', `<p>The console session has ended on the server; its cookie no longer opens anything.</p>\n${NEW_LINK}`);
}

/** A sign-out without the session's CSRF token, or from another site's page: the session goes on. */
export function signOutRefusedPage(): string {
  return consolePage(
    'Sign out refused',
    '<p>A sign-out must come from the console\'s own Sign out button. The session has not ended: <a href="/console/">back to the console</a>.</p>',
  );
}
