/** createConsoleSession, and the pages its link opens (openapi.yaml, "Console"). */
import express, { type Request, type Response } from 'express';
import { stringifySetCookie } from 'cookie';
import { PLAIN_COOKIE, SECURE_COOKIE } from '../auth/console-sessions.ts';
import type { Config } from '../config.ts';
import type { Contract } from '../http/contract.ts';
import { ApiError } from '../http/errors.ts';
import { operation } from '../http/operation.ts';
import type { RegisterRoutes } from '../http/resource.ts';
import { consolePageHeaders, linkRefusedPage, sendConsolePage, START_SCRIPT, startPage } from './pages.ts';
import { createConsoleLink, linkOpens, SESSION_LIFETIME_MS, startConsoleSession } from './sessions.ts';
import type { ReadClient } from '../shared/db-errors.ts';

interface ConsoleDeps {
  contract: Contract;
  prisma: ReadClient;
  config: Pick<Config, 'publicBaseUrl'>;
}

export const START_PATH = '/console/start';

export const consoleLinkUrl = (config: Pick<Config, 'publicBaseUrl'>, token: string): string =>
  `${config.publicBaseUrl}${START_PATH}?token=${encodeURIComponent(token)}`;

/** The `token` of the link's query string, read without the app's query parser. */
function linkToken(req: Request): string {
  return new URL(req.originalUrl, 'http://console.invalid').searchParams.get('token') ?? '';
}

/**
 * A form POST that starts a session comes from the start page itself: a page of another site
 * could otherwise sign a browser in to the attacker's console (login CSRF).
 */
function fromStartPage(req: Request): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = req.headers.origin;
  return origin === undefined || origin === `${req.protocol}://${req.headers.host ?? ''}`;
}

function setSessionCookie(req: Request, res: Response, cookie: string): void {
  // `__Host-` needs Secure, which a browser keeps only from an HTTPS answer.
  const secure = req.secure;
  res.setHeader(
    'Set-Cookie',
    stringifySetCookie(secure ? SECURE_COOKIE : PLAIN_COOKIE, cookie, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      secure,
      maxAge: SESSION_LIFETIME_MS / 1000,
    }),
  );
}

export const registerConsoleRoutes: RegisterRoutes<ConsoleDeps> = (router, deps) => {
  operation(router, deps.contract, 'createConsoleSession', {
    async handle(_input, { auth }) {
      if (auth.viaConsole) {
        throw new ApiError('insufficient_permissions', 'A console session cannot open another console session: use the key itself', {
          reason: 'console_session',
        });
      }
      const link = await createConsoleLink(deps.prisma, auth.keyId, new Date());
      return {
        status: 200,
        data: { object: 'console_session' as const, url: consoleLinkUrl(deps.config, link.token), expires_at: link.expiresAt.toISOString() },
      };
    },
  });

  router.get(START_PATH, async (req, res) => {
    const token = linkToken(req);
    if (await linkOpens(deps.prisma, token, new Date())) sendConsolePage(res, 200, startPage(token));
    else sendConsolePage(res, 401, linkRefusedPage());
  });

  router.get('/console/start.js', (_req, res) => {
    consolePageHeaders(res);
    res.type('text/javascript').send(START_SCRIPT);
  });

  router.post(START_PATH, express.urlencoded({ extended: false, limit: '1kb', parameterLimit: 2 }), async (req, res) => {
    const body = req.body as Record<string, unknown> | undefined;
    const token = typeof body?.token === 'string' ? body.token : '';
    const started = fromStartPage(req) ? await startConsoleSession(deps.prisma, token, new Date()) : undefined;
    if (!started) {
      sendConsolePage(res, 401, linkRefusedPage());
      return;
    }
    setSessionCookie(req, res, started.cookie);
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(303, '/console/');
  });
};
