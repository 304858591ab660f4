/**
 * The public API as the console calls it: the project's own client (typed from openapi.yaml) on
 * this page's origin, authenticated by the console session's cookie, never by a key in the page.
 * Every call that changes something carries the session's CSRF token.
 */
import { ClientApiError, createClient, EVENT_TYPES, type ApiClient, type components, type EventType } from '../../clients/typescript/dist/index.js';

export type Schemas = components['schemas'];
export { ClientApiError, EVENT_TYPES, type EventType };

const meta = (name: string): string => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';

export const session = {
  csrfToken: meta('csrf-token'),
  mode: meta('console-mode') === 'test' ? ('test' as const) : ('live' as const),
  broker: meta('console-broker'),
};

/** The client's fetch: the cookie instead of an Authorization header, and the CSRF token on every non-GET. */
function sessionFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const request = new Request(input, init);
  const headers = new Headers(request.headers);
  headers.delete('Authorization');
  if (request.method !== 'GET' && request.method !== 'HEAD') headers.set('X-CSRF-Token', session.csrfToken);
  return fetch(new Request(request, { headers, credentials: 'same-origin' }));
}

// The client's Authorization header is dropped by sessionFetch; apiKey only fills its required option.
const client = createClient({ baseUrl: '', apiKey: 'console-session', maxRetries: 1, fetch: sessionFetch });

/**
 * A client with a fetch of its own admits a 304 on every call; the console sends no If-None-Match
 * (sessionFetch adds none, and the browser answers its own revalidations as 200s), so a 304 here is
 * a fault, thrown like any refusal, and the views read answers that always carry data.
 */
type AnyCall = (...args: unknown[]) => Promise<{ notModified: boolean }>;
function withData<M>(call: AnyCall): M {
  return (async (...args: unknown[]) => {
    const result = await call(...args);
    if (result.notModified) throw new ClientApiError('not_modified', 'The API answered 304 Not Modified to a call the console did not make conditional', 304, undefined, undefined);
    return result;
  }) as M;
}

export const api: ApiClient = {
  GET: withData<ApiClient['GET']>(client.GET as AnyCall),
  POST: withData<ApiClient['POST']>(client.POST as AnyCall),
};

/** A refusal as the page shows it. */
export interface Problem {
  status: number | undefined;
  code: string;
  message: string;
  details: Record<string, unknown> | undefined;
  requestId: string | undefined;
}

export function problemOf(err: unknown): Problem {
  if (err instanceof ClientApiError) {
    return { status: err.status, code: err.code, message: err.message, details: err.details, requestId: err.requestId };
  }
  return { status: undefined, code: 'network_error', message: err instanceof Error ? err.message : String(err), details: undefined, requestId: undefined };
}
