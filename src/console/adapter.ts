/** createConsoleSession, and the pages its link opens and its session's sign-out (openapi.yaml, "Console"). */
import express, { type Request, type Response } from 'express';
import { csrfTokenMatches, type ConsoleLookup, type ConsoleSessions } from '../auth/console-sessions.ts';
import type { Config } from '../config.ts';
import type { Contract } from '../http/contract.ts';
import { ApiError } from '../http/errors.ts';
import { operation } from '../http/operation.ts';
import type { RegisterRoutes } from '../http/resource.ts';
import {
  consolePageHeaders, ipRefusedPage, linkRefusedPage, sendConsolePage, sessionNeededPage, signedOutPage, signOutRefusedPage, START_SCRIPT, startPage, tooManyPage,
} from './pages.ts';
import { consoleSessionOf, createConsoleLink, linkOpens, startConsoleSession, type IpRefused } from './sessions.ts';
import type { ConsoleShellSession } from './static.ts';
import type { ReadClient } from '../shared/db-errors.ts';

interface ConsoleDeps {
  contract: Contract;
  prisma: ReadClient;
  config: Pick<Config, 'publicBaseUrl'>;
  consoleSessions: ConsoleSessions;
}

export const START_PATH = '/console/start';
export const SIGN_OUT_PATH = '/console/sign-out';

export const consoleLinkUrl = (config: Pick<Config, 'publicBaseUrl'>, token: string): string =>
  `${config.publicBaseUrl}${START_PATH}?token=${encodeURIComponent(token)}`;

/** The `token` of the link's query string, read without the app's query parser. */
function linkToken(req: Request): string {
  return new URL(req.originalUrl, 'http://console.invalid').searchParams.get('token') ?? '';
}

/**
 * A form POST (starting or ending a session) comes from a page of this console: a page of another
 * site could otherwise sign a browser in to the attacker's console (login CSRF), or out.
 */
function sameOrigin(req: Request, config: Pick<Config, 'publicBaseUrl'>): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = req.headers.origin;
  return origin === undefined || origin === `${req.protocol}://${req.headers.host ?? ''}` || origin === new URL(config.publicBaseUrl).origin;
}

/**
 * The page for a look-up that found nothing: too many attempts (429), an address the key refuses
 * (403), else `refused` (401). True when it answered.
 */
function answeredRefusal(res: Response, result: ConsoleLookup<unknown> | IpRefused, refused: () => string): result is Exclude<typeof result, { found: unknown }> {
  if ('limited' in result) {
    res.setHeader('Retry-After', String(result.limited.retryAfter));
    sendConsolePage(res, 429, tooManyPage(result.limited.retryAfter));
  } else if ('ipRefused' in result) {
    sendConsolePage(res, 403, ipRefusedPage(result.ipRefused));
  } else if ('refused' in result) {
    sendConsolePage(res, 401, refused());
  } else {
    return false;
  }
  return true;
}

const callerOf = (req: Request, sessions: ConsoleSessions) => ({ ip: req.ip, at: sessions.now() });

/** The shell's session for `consoleShell` (src/console/static.ts): found, or the page saying why not already sent. */
export function consoleShellSession(deps: Pick<ConsoleDeps, 'prisma' | 'consoleSessions'>) {
  return async (req: Request, res: Response): Promise<ConsoleShellSession | undefined> => {
    const cookie = deps.consoleSessions.cookieOf(req);
    const found = await consoleSessionOf(deps.prisma, deps.consoleSessions, cookie, callerOf(req, deps.consoleSessions));
    if (found === undefined) {
      sendConsolePage(res, 401, sessionNeededPage());
      return undefined;
    }
    if (answeredRefusal(res, found, sessionNeededPage)) return undefined;
    return { csrfToken: found.found.csrfToken, mode: found.found.mode, broker: found.found.brokerName };
  };
}

export const registerConsoleRoutes: RegisterRoutes<ConsoleDeps> = (router, deps) => {
  const sessions = deps.consoleSessions;

  operation(router, deps.contract, 'createConsoleSession', {
    async handle(_input, { auth }) {
      if (auth.viaConsole) {
        throw new ApiError('insufficient_permissions', 'A console session cannot open another console session: use the key itself', {
          reason: 'console_session',
        });
      }
      const link = await createConsoleLink(deps.prisma, auth.keyId, sessions.now());
      return {
        status: 200,
        data: { object: 'console_session' as const, url: consoleLinkUrl(deps.config, link.token), expires_at: link.expiresAt.toISOString() },
      };
    },
  });

  router.get(START_PATH, async (req, res) => {
    const token = linkToken(req);
    const opens = await linkOpens(deps.prisma, sessions, token, callerOf(req, sessions));
    if (!answeredRefusal(res, opens, linkRefusedPage)) sendConsolePage(res, 200, startPage(token));
  });

  router.get('/console/start.js', (_req, res) => {
    consolePageHeaders(res);
    res.type('text/javascript').send(START_SCRIPT);
  });

  const form = express.urlencoded({ extended: false, limit: '1kb', parameterLimit: 2 });

  router.post(START_PATH, form, async (req, res) => {
    const body = req.body as Record<string, unknown> | undefined;
    const token = typeof body?.token === 'string' ? body.token : '';
    if (!sameOrigin(req, deps.config)) {
      sendConsolePage(res, 401, linkRefusedPage());
      return;
    }
    const started = await startConsoleSession(deps.prisma, sessions, token, callerOf(req, sessions));
    if (answeredRefusal(res, started, linkRefusedPage)) return;
    res.setHeader('Set-Cookie', sessions.setCookie(req, started.found.cookie));
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(303, '/console/');
  });

  /**
   * Sign out: the console's form posts the session's CSRF token; the session ends in the database
   * (every process then refuses its cookie) and the browser is told to drop the cookie. Without a
   * session there is nothing to end: the cookie is dropped all the same.
   */
  router.post(SIGN_OUT_PATH, form, async (req, res) => {
    const body = req.body as Record<string, unknown> | undefined;
    const sent = typeof body?.csrf_token === 'string' ? body.csrf_token : req.get('X-CSRF-Token');
    const cookie = sessions.cookieOf(req);
    const caller = callerOf(req, sessions);
    const session = cookie === undefined ? undefined : await sessions.find(cookie, caller.ip, caller.at);
    if (session !== undefined && 'limited' in session && answeredRefusal(res, session, sessionNeededPage)) return;
    if (cookie !== undefined && session !== undefined && 'found' in session) {
      if (!sameOrigin(req, deps.config) || !csrfTokenMatches(cookie, sent)) {
        sendConsolePage(res, 403, signOutRefusedPage());
        return;
      }
      await sessions.signOut(cookie, caller.at);
    }
    res.setHeader('Set-Cookie', sessions.setCookie(req, undefined));
    sendConsolePage(res, 200, signedOutPage());
  });
};
