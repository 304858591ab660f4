/// <reference types="node" />
/**
 * `client-api-v1 listen`: webhooks on a developer's own machine without registering an endpoint.
 * It walks the ascending event feed (`GET /api/v1/events?order=asc&starting_after=…`) with the key
 * and POSTs each new event to a local URL, with the body and the Standard Webhooks headers of a real
 * delivery, signed with a secret of the session: a receiver written for production works unchanged.
 */
import { createHmac, randomBytes } from 'node:crypto';
import createFetchClient from 'openapi-fetch';
import { EVENT_TYPES } from './event-types.ts';
import type { components, paths } from './schema.ts';

type Event = components['schemas']['Event'];

const SECRET_PREFIX = 'whsec_';
/** The server's own timeout of a delivery attempt (WEBHOOK_TIMEOUT_MS's default). */
const FORWARD_TIMEOUT_MS = 15_000;
const API_TIMEOUT_MS = 30_000;
const PAGE_LIMIT = 100;
const MAX_BACKOFF_MS = 30_000;
/** The longest wait a server's Retry-After or X-RateLimit-Reset can ask for (a larger one is cut to it). */
const MAX_SERVER_WAIT_MS = 60_000;
/** The shortest wait after a 429, whatever its Retry-After says. */
const MIN_429_WAIT_MS = 1000;
/** Event ids remembered so that none is forwarded twice (a session forwards far fewer). */
const SEEN_IDS = 100_000;
const USER_AGENT = 'client-api-v1-listen/1 (Standard Webhooks)';

export interface ListenOptions {
  /** Where the API is, e.g. `https://api.example.com`. */
  baseUrl: string;
  /** An `sk_live_…` or `sk_test_…` key with the `admin:full` scope; never printed. */
  apiKey: string;
  /** The local receiver, e.g. `http://localhost:4000/hooks`; another machine only with allowRemoteForward. */
  forwardTo: string;
  /** `--allow-remote-forward`: let forwardTo name a host other than this machine (the events leave it). */
  allowRemoteForward?: boolean;
  /** `--allow-insecure-api`: let baseUrl be `http:` to a host other than this machine (the key travels in clear). */
  allowInsecureApi?: boolean;
  /** Event type patterns (`*` matches any characters, `service.*`); every type when empty. */
  events: readonly string[];
  /** The session's `whsec_…` secret (newSessionSecret). */
  secret: string;
  /** The wait between two polls of a feed that had nothing more (default 1 s). */
  pollIntervalMs?: number;
  /** Stops listening. */
  signal: AbortSignal;
  /** One line of the session's output (the events forwarded). */
  print: (line: string) => void;
  /** One line about the session itself (ready, connection trouble, waits). */
  note: (line: string) => void;
}

/** A reason to stop that waiting will not cure: a refused key, a bad request, a bad option. */
export class ListenError extends Error {
  override readonly name = 'ListenError';
  constructor(message: string) {
    // Its message may quote the server (an error envelope): printable only.
    super(printable(message));
  }
}

/**
 * `text` without control characters (C0, DEL, C1) and bidirectional overrides, each shown as `?`:
 * what a server sends (a key name, an event type or id, an error message) must not move the
 * terminal's cursor, change its title or print a line of its own.
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what it removes
  return String(text).replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '?');
}

/** A new secret for a session, in the format of an endpoint's: `whsec_` + base64 of 32 random bytes. */
export function newSessionSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The key bytes of a `whsec_…` secret; a ListenError when it is not one (24 to 64 bytes, as the server's). */
function secretKey(secret: string): Buffer {
  const base64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : '';
  const key = Buffer.from(base64, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || key.length < 24 || key.length > 64) {
    throw new ListenError('the secret must be whsec_ followed by the base64 of 24 to 64 bytes');
  }
  return key;
}

/** Matches event types against `--events` patterns; a pattern that matches no type is a ListenError (a typo). */
function eventFilter(patterns: readonly string[]): (type: string) => boolean {
  const regexps = patterns.map((pattern) => {
    const re = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
    if (!EVENT_TYPES.some((type) => re.test(type))) {
      throw new ListenError(`--events ${pattern} matches no event type (${EVENT_TYPES.join(', ')})`);
    }
    return re;
  });
  return (type) => regexps.length === 0 || regexps.some((re) => re.test(type));
}

/** The body of a real delivery: the same JSON, field for field, as the server POSTs (src/webhooks/dispatcher.ts, eventBody). */
export function deliveryBody(event: Event): string {
  return JSON.stringify({ object: event.object, id: event.id, sequence: event.sequence, type: event.type, created_at: event.created_at, mode: event.mode, data: event.data });
}

/** Standard Webhooks headers: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the secret's key. */
export function signedHeaders(eventId: string, body: string, key: Buffer, at = new Date()): Record<string, string> {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signature = createHmac('sha256', key).update(`${eventId}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': eventId, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}

/** A failed request in a few words: a system error's code (ECONNREFUSED), a timeout, else its message. */
function describe(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'timeout';
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * One POST to the local receiver, as a delivery is made: no redirect followed, the answer's body not
 * read. A stop lets it finish (within the timeout), so the receiver never gets half a request.
 */
async function forward(event: Event, options: ListenOptions, key: Buffer): Promise<string> {
  const body = deliveryBody(event);
  try {
    const response = await fetch(options.forwardTo, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...signedHeaders(event.id, body, key) },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
    });
    await response.body?.cancel();
    return String(response.status);
  } catch (error) {
    return `failed: ${describe(error)}`;
  }
}

/** Waits `ms`, or less when the signal stops the session. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The error envelope's message (openapi-fetch has read the body), with what to do for the answers that stop the session. */
function refusal(response: Response, body: unknown): ListenError {
  const { error } = (typeof body === 'object' && body !== null ? body : {}) as { error?: { code?: string; message?: string } };
  const said = `${response.status} ${error?.code ?? ''}: ${error?.message ?? response.statusText}`;
  if (response.status === 401) return new ListenError(`the API refused the key (${said}); set CAPI_KEY or --api-key to a valid sk_live_… or sk_test_… key`);
  if (response.status === 403) return new ListenError(`the key may not read events (${said}); listen needs a key with the admin:full scope, allowed from this address`);
  return new ListenError(`the API refused the request (${said})`);
}

/** Seconds of a `Retry-After`, in ms (at most MAX_SERVER_WAIT_MS). */
function retryAfterMs(response: Response): number | undefined {
  const seconds = Number(response.headers.get('retry-after') ?? Number.NaN);
  return Number.isFinite(seconds) ? Math.min(MAX_SERVER_WAIT_MS, Math.max(0, seconds * 1000)) : undefined;
}

/**
 * The wait a successful answer asks for before the next call: its `Retry-After`, or with
 * `X-RateLimit-Remaining: 0` the `X-RateLimit-Reset` seconds (the interval without one); else 0.
 */
function rateLimitWait(response: Response, intervalMs: number): number {
  const after = retryAfterMs(response) ?? 0;
  if (Number(response.headers.get('x-ratelimit-remaining') ?? Number.NaN) !== 0) return after;
  const resetS = Number(response.headers.get('x-ratelimit-reset') ?? Number.NaN);
  const reset = Number.isFinite(resetS) && resetS > 0 ? Math.min(MAX_SERVER_WAIT_MS, resetS * 1000) : intervalMs;
  return Math.max(after, reset);
}

/**
 * The wait before the next poll: the interval, stretched so that polling takes at most half of
 * what the key's rate-limit window has left (the rest is the developer's own calls).
 */
function pollWait(response: Response, intervalMs: number): number {
  const [remaining, resetS] = ['x-ratelimit-remaining', 'x-ratelimit-reset'].map((name) => Number(response.headers.get(name) ?? Number.NaN));
  if (!Number.isFinite(remaining) || !Number.isFinite(resetS)) return intervalMs;
  return Math.min(MAX_SERVER_WAIT_MS, Math.max(intervalMs, Math.ceil((resetS! * 1000) / Math.max(1, remaining! / 2))));
}

type Api = ReturnType<typeof createFetchClient<paths>>;

/**
 * Calls the API until it answers: a failed connection or a 5xx waits a growing delay, a 429 its
 * `Retry-After` (at least a second); another error answer is a ListenError. Undefined once the session is stopped.
 */
async function untilAnswered<T>(call: (signal: AbortSignal) => Promise<{ data?: T; error?: unknown; response: Response }>, options: ListenOptions): Promise<{ data: T; response: Response } | undefined> {
  for (let attempt = 0; !options.signal.aborted; attempt++) {
    let wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** attempt);
    let why: string;
    try {
      const { data, error, response } = await call(AbortSignal.any([options.signal, AbortSignal.timeout(API_TIMEOUT_MS)]));
      if (response.ok && data !== undefined) return { data, response };
      if (response.status !== 429 && response.status < 500) throw refusal(response, error);
      // At least a second whatever Retry-After says: a 0 or a negative one would otherwise loop.
      if (response.status === 429) wait = Math.max(MIN_429_WAIT_MS, retryAfterMs(response) ?? wait);
      why = `the API answered ${response.status}`;
    } catch (error) {
      if (options.signal.aborted) return undefined;
      if (error instanceof ListenError) throw error;
      why = `no answer from the API (${describe(error)})`;
    }
    options.note(`${why}; trying again in ${Math.ceil(wait / 1000)} s`);
    await sleep(wait, options.signal);
  }
  return undefined;
}

/** The key's name and mode, and the newest event now: the feed is walked from after it. */
async function start(api: Api, options: ListenOptions): Promise<{ keyName: string; mode: string; cursor: string | undefined } | undefined> {
  const who = await untilAnswered((signal) => api.GET('/api/v1/auth-check', { signal }), options);
  if (!who) return undefined;
  const newest = await untilAnswered((signal) => api.GET('/api/v1/events', { params: { query: { limit: 1 } }, signal }), options);
  if (!newest) return undefined;
  return { keyName: who.data.data.key_name, mode: who.data.data.mode, cursor: newest.data.data[0]?.id };
}

/** The URL parsed; a ListenError unless it is an http: or https: URL. */
function httpUrl(what: string, value: string): URL {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') throw new ListenError(`${what} must be an http: or https: URL, not ${value}`);
  return url;
}

/**
 * Whether the URL's host is this machine as written: `localhost` or a loopback address (127.0.0.0/8,
 * ::1, ::ffff:127.x). A name is not looked up: any other one may be, or become, another machine.
 */
export function isLoopbackUrl(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost') return true;
  if (/^127(\.\d{1,3}){3}$/.test(host)) return true;
  return host === '::1' || /^::ffff:127\./.test(host) || /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(host);
}

/** The options' refusals (ListenError), before anything is printed; the secret's key and the type filter. */
export function checkOptions(
  options: Pick<ListenOptions, 'baseUrl' | 'forwardTo' | 'events' | 'secret' | 'allowRemoteForward' | 'allowInsecureApi'>,
): { key: Buffer; wanted: (type: string) => boolean } {
  const forwardTo = httpUrl('--forward-to', options.forwardTo);
  const api = httpUrl('the API URL (CAPI_URL, --url)', options.baseUrl);
  if (!options.allowRemoteForward && !isLoopbackUrl(forwardTo)) {
    throw new ListenError(`--forward-to ${forwardTo.host} is not this machine (localhost, 127.0.0.1 or [::1]): the events would leave it; add --allow-remote-forward if that is meant`);
  }
  if (!options.allowInsecureApi && api.protocol === 'http:' && !isLoopbackUrl(api)) {
    throw new ListenError(`the API URL ${api.origin} is plain http: to another machine, so the key would travel in clear; use https:, or add --allow-insecure-api if that is meant`);
  }
  return { key: secretKey(options.secret), wanted: eventFilter(options.events) };
}

export interface ListenSummary {
  /** Events POSTed to the receiver (whatever it answered). */
  forwarded: number;
  /** The last event of the feed that was read (forwarded or filtered out). */
  lastEventId: string | undefined;
}

/** Walks the feed from now until the signal stops it, forwarding each event that the patterns match. */
export async function listen(given: ListenOptions): Promise<ListenSummary> {
  // Every line leaves printable: parts of it come from the server.
  const options: ListenOptions = { ...given, print: (line) => given.print(printable(line)), note: (line) => given.note(printable(line)) };
  const { key, wanted } = checkOptions(options);
  const api = createFetchClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), headers: { Authorization: `Bearer ${options.apiKey}` } });
  const started = await start(api, options);
  const summary: ListenSummary = { forwarded: 0, lastEventId: started?.cursor };
  if (!started) return summary;
  const types = options.events.length > 0 ? options.events.join(', ') : 'every type';
  options.note(`Forwarding the ${started.mode} events (${types}) of key "${started.keyName}" from ${options.baseUrl} to ${options.forwardTo}; Ctrl-C stops.`);
  const intervalMs = options.pollIntervalMs ?? 1000;
  // Ids already read, oldest first: a server that sends one again (a cursor that does not move) gets
  // nothing forwarded twice, and a page of nothing new that claims more is a stop, not a busy loop.
  const seen = new Set<string>(started.cursor === undefined ? [] : [started.cursor]);
  while (!options.signal.aborted) {
    const asked = summary.lastEventId;
    const query = { order: 'asc' as const, limit: PAGE_LIMIT, ...(asked !== undefined && { starting_after: asked }) };
    const page = await untilAnswered((signal) => api.GET('/api/v1/events', { params: { query }, signal }), options);
    if (!page) break;
    let fresh = 0;
    for (const event of page.data.data) {
      if (options.signal.aborted) break;
      if (seen.has(event.id)) continue;
      seen.add(event.id);
      if (seen.size > SEEN_IDS) seen.delete(seen.values().next().value!);
      fresh++;
      if (wanted(event.type)) {
        const outcome = await forward(event, options, key);
        summary.forwarded++;
        options.print(`${new Date().toISOString()}  ${event.type}  ${event.id}  -> ${outcome}`);
      }
      summary.lastEventId = event.id;
    }
    if (page.data.pagination.has_more && page.data.data.length > 0 && fresh === 0) {
      throw new ListenError(`the API's event feed does not advance: after ${asked ?? 'the start'} it answered only events already read, and has_more; stopping rather than asking again`);
    }
    // A full page of new events: more is waiting, so no pause unless the rate limit asks for one.
    // An empty page or nothing new waits the interval whatever has_more says.
    const more = page.data.pagination.has_more && fresh > 0;
    const limited = rateLimitWait(page.response, intervalMs);
    const wait = Math.max(more ? 0 : pollWait(page.response, intervalMs), limited);
    if (limited >= 5000) options.note(`the API asks for a pause (rate limit); polling again in ${Math.ceil(limited / 1000)} s`);
    if (wait > 0) await sleep(wait, options.signal);
  }
  return summary;
}
