import path from 'node:path';
import express, { type Express, type RequestHandler, type Router } from 'express';
import type { AppDeps } from './deps.ts';
import { ROOT_DIR } from './root.ts';
import type { Contract } from './http/contract.ts';
import { registerClientPackage } from './http/client-package.ts';
import { registerDocs } from './http/docs.ts';
import { errorAnswers, errorMiddleware } from './http/error-middleware.ts';
import { ApiError, notFound } from './http/errors.ts';
import { inputHygiene } from './http/input-hygiene.ts';
import { jsonBody } from './http/json-body.ts';
import { knownHeader, setKnownHeader } from './http/known-headers.ts';
import { chain, dispatchOperations, fastAppSettings, parseQueryOnce } from './http/fast-path.ts';
import { isMounted, operationHandlers, operationRules } from './http/operation.ts';
import { requestId } from './http/request-id.ts';
import { requestLog } from './http/request-log.ts';
import { requestTracing } from './http/tracing.ts';
import { apiSecurityHeaders } from './http/security-headers.ts';
import { createValidator } from './http/validation.ts';
import { createIdempotency } from './http/idempotency.ts';
import { createConditionalReads } from './http/conditional.ts';
import { idempotencyStore } from './idempotency/store.ts';
import type { IdempotencyKeys } from './shared/idempotency-keys.ts';
import { registerOps } from './ops/health.ts';
import { recordHttpRequest } from './ops/metrics.ts';
import type { RegisterRoutes } from './http/resource.ts';
import { resourceModules } from './routes.ts';
import { callerBucket } from './auth/ip-whitelist.ts';
import { registerDownloadRoute } from './reports/index.ts';
import { CONSOLE_SHELL_PATHS, consoleShell, consoleShellSession, registerConsoleAssets } from './console/index.ts';

/**
 * Resolves the operation a request is for. An unknown path or method under /api is answered
 * `404 not_found` by the gate, after authentication, IP whitelist and rate limit: the operating
 * contract's order of checks holds on every request, so without a valid key it is a 401.
 */
function resolveOperation(contract: Contract): RequestHandler {
  return (req, res, next) => {
    const op = contract.match(req.method, req.baseUrl + req.path);
    if (op) res.locals.operation = op;
    parseQueryOnce(req);
    next();
  };
}

/** Only POST operations take a body (the gate has answered 404 for any other method already). */
function postOnly(handler: RequestHandler): RequestHandler {
  return (req, res, next) => (req.method === 'POST' ? handler(req, res, next) : next());
}

/**
 * A POST sent with no body at all is read as `{}`, so its missing fields are named one by one. A
 * POST whose body the JSON parser left unread (no or another Content-Type) is refused: reading it
 * as `{}` would run the operation without what the client sent (a chosen password, say).
 */
const emptyBodyAsObject: RequestHandler = (req, _res, next) => {
  if (req.method !== 'POST' || req.body !== undefined) return next();
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (hasBody) return next(new ApiError('invalid_request', 'Content-Type must be application/json for a request with a body'));
  req.body = {};
  req.headers['content-type'] = 'application/json';
  next();
};

/** Operations whose module is not built yet answer honestly rather than with invented data. */
function registerNotImplemented(router: Router, contract: Contract): void {
  for (const op of contract.operations) {
    if (isMounted(router, op.operationId)) continue;
    router[op.method.toLowerCase() as 'get' | 'post'](op.expressPath, () => {
      throw new ApiError('server_error', 'not implemented');
    });
  }
}

const OPS_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** The console's page and files, as `npm run build:console` writes them (console/build.mjs). */
export const CONSOLE_BUILD = path.join(ROOT_DIR, 'dist', 'console');


/**
 * Every /api answer holds one key's own data (a new service's password, say): no browser or
 * proxy cache may keep it (OWASP REST Security Cheat Sheet: `Cache-Control: no-store`).
 */
const CACHE_CONTROL = knownHeader('Cache-Control');
const noStore: RequestHandler = (_req, res, next) => {
  setKnownHeader(res, CACHE_CONTROL, 'no-store');
  next();
};
const API_PATH = /^\/api(\/|$)/i;

export interface AppOptions {
  /** The resource modules to mount (default: all of src/routes.ts). */
  modules?: Array<RegisterRoutes<AppDeps>>;
  /** Where Idempotency-Keys are kept and how long a first request holds its key (tests inject faults here). */
  idempotency?: { keys?: IdempotencyKeys; leaseMs?: number };
}

/** Each app's loading of its contract (see `Validator.loaded`). */
const loadings = new WeakMap<Express, Promise<void>>();

/** Settles when `app` has loaded its contract and answers its first request at full speed; rejects if the contract cannot be loaded. */
export function appLoaded(app: Express): Promise<void> {
  return loadings.get(app) ?? Promise.resolve();
}

export function createApp(deps: AppDeps, options: AppOptions = {}): Express {
  const { config, contract, logger } = deps;
  const app = express();
  app.disable('x-powered-by');
  fastAppSettings(app);
  app.set('trust proxy', config.trustProxy);

  app.use(
    chain([
      // Probes and scrapes every few seconds would drown the request log (they are still counted).
      requestLog(logger, OPS_PATHS, recordHttpRequest),
      requestId,
      ...requestTracing(),
      // Security headers on every response: the set OWASP's REST Security Cheat Sheet names for
      // API responses (no framing, no sniffing, HTTPS only, no referrer). Headers that only
      // guard HTML documents (COOP, Origin-Agent-Cluster, X-DNS-Prefetch-Control,
      // X-Download-Options, X-Permitted-Cross-Domain-Policies, X-XSS-Protection) are left to the
      // one HTML page, /docs, which adds helmet's full default set: each header written costs
      // every request CPU (bench/README.md).
      apiSecurityHeaders,
    ]),
  );
  const router = express.Router();
  for (const register of options.modules ?? resourceModules) register(router, deps);
  // Outside /api and without a key (its holder has none): served by `app.use(router)` below.
  registerDownloadRoute(router, deps, callerBucket);
  registerNotImplemented(router, contract);
  const validator = createValidator(contract, config.validateResponses);
  const loading = validator.loaded(app);
  // Not every caller awaits it (the first request meets the same error): never an unhandled rejection.
  loading.catch(() => undefined);
  loadings.set(app, loading);
  const errorAnswer = errorAnswers(contract, operationRules(router));
  const conditionalReads = createConditionalReads();
  // A report may hold its key for as long as it waits for its e-mails.
  const idempotency = createIdempotency(options.idempotency?.keys ?? idempotencyStore(deps.prisma), logger, {
    leaseMs: options.idempotency?.leaseMs ?? config.reportWaitMs + 60_000,
    seal: deps.credentials,
  });

  // The /api steps in the order of checks (openapi.yaml, "Order of checks"), the schema validator, then the
  // operation (its own input rules, then the Idempotency-Key, then the operation itself).
  app.use(
    chain(
      [
        noStore,
        resolveOperation(contract),
        deps.gate,
        conditionalReads.shortcut,
        postOnly(jsonBody()),
        emptyBodyAsObject,
        inputHygiene,
        ...validator.steps,
        dispatchOperations(operationHandlers(router, { idempotency, errorAnswer, checkAnswer: validator.checkAnswer, conditionalReads })),
      ],
      // What app.use('/api', …) matched: /api and below, in any letter case.
      (req) => API_PATH.test(req.path),
    ),
  );

  app.use(router);

  // After the /api stack, so an API request never walks past these routes' layers.
  registerOps(app, deps, { queueNames: deps.jobs.queueNames });
  registerDocs(app, contract);
  registerClientPackage(app);
  registerConsoleAssets(app, CONSOLE_BUILD);
  app.get(CONSOLE_SHELL_PATHS, consoleShell(CONSOLE_BUILD, consoleShellSession(deps)));

  app.use((req, _res, next) => next(notFound(`No endpoint ${req.method} ${req.path}`)));
  app.use(errorMiddleware(errorAnswer));
  return app;
}
