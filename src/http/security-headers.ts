import { validateHeaderValue, type IncomingMessage, type ServerResponse } from 'node:http';
import helmet from 'helmet';
import { knownHeader, setKnownHeader, type KnownHeader } from './known-headers.ts';

/**
 * The security headers of every answer: the set OWASP's REST Security Cheat Sheet names for API
 * responses (no framing, no sniffing, HTTPS only, no referrer, same-origin resources). Headers that
 * only guard HTML documents are left to the one HTML page, /docs.
 */
const helmetHeaders = helmet({
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: { policy: 'same-origin' },
  originAgentCluster: false,
  referrerPolicy: { policy: 'no-referrer' },
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xFrameOptions: { action: 'deny' },
  xPermittedCrossDomainPolicies: false,
  // app.disable('x-powered-by') already keeps Express from writing it.
  xPoweredBy: false,
  xXssProtection: false,
});

/** The headers helmet sets, as name/value pairs in its order, worked out once from helmet itself. */
const securityHeaders: ReadonlyArray<readonly [string, string]> = (() => {
  const headers = new Map<string, string>();
  const res = {
    setHeader: (name: string, value: unknown) => headers.set(name, String(value)),
    removeHeader: (name: string) => headers.delete(name),
    getHeader: (name: string) => headers.get(name),
  } as unknown as ServerResponse;
  helmetHeaders({ headers: {} } as IncomingMessage, res, () => undefined);
  return [...headers];
})();

/** The same, checked once as setHeader would check them on every answer. */
const knownSecurityHeaders: ReadonlyArray<readonly [KnownHeader, string]> = securityHeaders.map(([name, value]) => {
  validateHeaderValue(name, value);
  return [knownHeader(name), value] as const;
});

/**
 * Sets them on an answer: the same headers helmet's middleware sets, without its six steps on
 * every request (none of these depends on the request).
 */
export function apiSecurityHeaders(_req: IncomingMessage, res: ServerResponse, next: () => void): void {
  for (const [header, value] of knownSecurityHeaders) setKnownHeader(res, header, value);
  next();
}

/**
 * The same headers, for answers written without Express (requests Node refuses before the app sees
 * them), so the two cannot drift. `Cache-Control: no-store` goes with them, as on every /api answer.
 */
export const rawAnswerHeaders: ReadonlyArray<readonly [string, string]> = [...securityHeaders, ['Cache-Control', 'no-store']];
