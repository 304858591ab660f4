/** Console sessions as a browser gets them: the link from the API, its start page's form, the cookie. */
import assert from 'node:assert/strict';
import type { Express } from 'express';
import request from 'supertest';

export interface OpenedConsole {
  /** The `Cookie` header a browser sends afterwards. */
  cookie: string;
  /** The value of the console page's CSRF token (what the page sends in X-CSRF-Token). */
  csrf: string;
  /** The full Set-Cookie header of the start answer. */
  setCookie: string;
}

/** The link's token: `url` as createConsoleSession answers it. */
export const tokenOf = (url: string): string => new URL(url).searchParams.get('token') ?? '';

/** Makes a link with `key` (createConsoleSession) and answers its URL. */
export async function consoleLink(app: Express, key: string): Promise<string> {
  const res = await request(app).post('/api/v1/console-sessions').set('Authorization', `Bearer ${key}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data.url as string;
}

/** Posts the start page's form as the browser does (same origin). */
export const startForm = (app: Express, token: string) =>
  request(app).post('/console/start').set('Sec-Fetch-Site', 'same-origin').type('form').send({ token });

/** Opens a new console session for `key`, as a browser following the link would. */
export async function openConsole(app: Express, key: string, csrfOf: (cookieValue: string) => string): Promise<OpenedConsole> {
  const res = await startForm(app, tokenOf(await consoleLink(app, key)));
  assert.equal(res.status, 303, res.text);
  const setCookie = String(res.headers['set-cookie']?.[0] ?? '');
  const pair = setCookie.split(';')[0]!;
  return { cookie: pair, csrf: csrfOf(pair.slice(pair.indexOf('=') + 1)), setCookie };
}
