import * as OpenApiValidator from 'express-openapi-validator';
import type { Express, Request, RequestHandler, Response } from 'express';
import { resolveRef, type Contract } from './contract.ts';
import { ApiError, invalidParameter, missingParameter, type ErrorDetails } from './errors.ts';
import { contractFormats } from './formats.ts';
import { chain, type Answer } from './fast-path.ts';
import { BODY_TOO_LARGE } from './json-body.ts';

interface ValidatorErrorItem {
  path: string;
  message: string;
  errorCode?: string;
}

interface ValidatorError {
  status: number;
  message: string;
  errors?: ValidatorErrorItem[];
}

export function isValidatorError(err: unknown): err is ValidatorError {
  return (
    typeof err === 'object' && err !== null && 'status' in err && 'errors' in err &&
    Array.isArray((err as { errors: unknown }).errors)
  );
}

/**
 * What an operation adds to the mapping of the schema validator's errors, handed in through
 * `operation()` (src/http/operation.ts) with the operation itself.
 */
export interface OperationRules {
  /**
   * The operation's own body rules, in the order of checks its description in openapi.yaml
   * gives. The schema validator runs first and reports by field, not in that order (an invoices
   * report with a bad recipient and a malformed date got the date's error, though recipients are
   * checked first), so when it rejects a body these rules run before its report is mapped: the
   * first rule the body breaks is the answer. When they all pass, the schema's own error (an
   * unknown field, say) is mapped as usual.
   */
  bodyRules?: (body: Record<string, unknown>) => unknown;
  /**
   * Extra `details` attached to every `invalid_parameter` about one top-level field (the
   * invoices report adds `max_recipients: 10` to any recipients error).
   */
  fieldDetails?: Record<string, ErrorDetails>;
}

function firstBrokenBodyRule(rules: OperationRules | undefined, body: unknown): ApiError | undefined {
  const check = rules?.bodyRules;
  if (!check || typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  try {
    check(body as Record<string, unknown>);
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
}

/** The extra details of `field` (or of the top-level field it is inside: `recipients[2]` → `recipients`). */
export function extraDetailsFor(rules: OperationRules | undefined, field: string): ErrorDetails {
  const root = field.split(/[.[]/)[0] ?? field;
  return rules?.fieldDetails?.[root] ?? {};
}

/**
 * The contract asks clients to percent-encode query values; the server still takes reserved
 * characters sent as they are (`:` in a date-time from curl), which the validator refuses unless
 * a parameter says `allowReserved`. So its copy says so for every query parameter.
 */
function acceptingReservedCharacters(document: unknown): unknown {
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node !== null && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      if (record.in === 'query' && typeof record.name === 'string') record.allowReserved = true;
      Object.values(record).forEach(visit);
    }
  };
  visit(document);
  return document;
}

/** With response validation on: the contract's check of an answer's bytes; rejects with the validator's error. */
export type AnswerCheck = (req: Request, answer: Answer) => Promise<void>;

export interface Validator {
  /** The /api chain's steps: the contract's metadata of the request, and its validation. */
  steps: RequestHandler[];
  /**
   * Settles once the validator has loaded the contract, as a first request would make it (in the
   * background after createValidator, holding the event loop for a second or more): a server
   * listens after it, so no first request waits for it or stalls the others.
   */
  loaded(app: Express): Promise<void>;
  /** Only with response validation on (the tests, VALIDATE_RESPONSES). */
  checkAnswer: AnswerCheck | undefined;
}

export function createValidator(contract: Contract, validateResponses: boolean): Validator {
  const middleware = OpenApiValidator.middleware({
    // A structured clone: the validator resolves $refs in place and must not touch the cached copy.
    apiSpec: acceptingReservedCharacters(structuredClone(contract.document)) as never,
    validateRequests: { allErrors: true, coerceTypes: false },
    validateResponses: validateResponses ? { allErrors: true } : false,
    // Authentication, IP whitelist, rate limit and scopes come first (openapi.yaml, "Order of
    // checks") and are done by the gate; the validator's own security handling has known bugs.
    validateSecurity: false,
    validateFormats: true,
    ajvFormats: { mode: 'full' },
    formats: contractFormats,
    // Unknown /api paths are answered 404 by the gate before the validator is reached.
    ignoreUndocumented: true,
    ignorePaths: (p: string) => !p.startsWith('/api/'),
  }) as unknown as RequestHandler[];
  const remembering = (steps: RequestHandler[]) => [rememberingValidGets(steps, constrainedGetHeaders(contract))];
  const loaded = loadedBy(middleware);
  if (!validateResponses) return { steps: remembering(middleware), loaded, checkAnswer: undefined };
  const responseStep = middleware.find((step) => step.name === 'responseMiddleware');
  if (!responseStep) throw new Error('express-openapi-validator no longer has its responseMiddleware: see checkAnswer in src/http/validation.ts');
  return { steps: remembering(middleware.filter((step) => step !== responseStep)), loaded, checkAnswer: answerCheck(responseStep) };
}

/**
 * The validator's first step waits for the loaded contract, then registers its path parameters on
 * the request's app (once), and reads nothing else of the request: run on `{ app }` it settles when
 * the contract is loaded, as the first request's would, and rejects with the loading's error.
 */
function loadedBy(middleware: RequestHandler[]): (app: Express) => Promise<void> {
  const first = middleware[0];
  if (first?.name !== 'pathParamsMiddleware') throw new Error('express-openapi-validator no longer starts with its pathParamsMiddleware: see loadedBy in src/http/validation.ts');
  return (app) => new Promise((resolve, reject) => {
    void first({ app } as unknown as Request, {} as Response, (err?: unknown) => (err === undefined ? resolve() : reject(err)));
  });
}

/** GET URLs remembered as valid before the memory starts over (a bound, not a working-set size). */
const VALID_GETS_KEPT = 5000;

/** A request as the validator leaves it: its metadata of the operation on `req.openapi`. */
type ValidatedRequest = Request & { openapi?: unknown };

/** What the validator leaves on a request it passed, for the handlers: the same for the same GET. */
interface Validated {
  openapi: unknown;
  params: Request['params'];
  query: Request['query'];
}

/**
 * The header parameters of GET operations that the schema could refuse (anything but a bare
 * string). None today; if the contract gains one, its value becomes part of what is remembered.
 */
function constrainedGetHeaders(contract: Contract): string[] {
  const names = new Set<string>();
  const document = contract.document as Record<string, unknown>;
  for (const op of contract.operations) {
    if (op.method !== 'GET') continue;
    const item = resolveRef((document.paths as Record<string, unknown>)[op.pathTemplate], document);
    const own = resolveRef(item.get, document);
    for (const raw of [...((item.parameters ?? []) as unknown[]), ...((own.parameters ?? []) as unknown[])]) {
      const parameter = resolveRef(raw, document);
      const schema = resolveRef(parameter.schema, document);
      const bareString = schema.type === 'string' && Object.keys(schema).every((k) => k === 'type' || k === 'description');
      if (parameter.in === 'header' && !bareString) names.add(String(parameter.name).toLowerCase());
    }
  }
  return [...names];
}

/**
 * A GET's validation depends on its URL alone (its path and query; its header parameters are
 * bare strings, see constrainedGetHeaders), so a URL the validator passed once passes again: a
 * poll repeats the same URL, and the validator's five steps were the largest part of a GET's
 * own work (bench/README.md). What validation leaves on the request is remembered with it.
 */
export function rememberingValidGets(steps: RequestHandler[], headers: string[]): RequestHandler {
  const validate = chain(steps);
  const valid = new Map<string, Validated>();
  const keyOf = (req: Request): string => {
    let key = req.originalUrl;
    for (const name of headers) key += `\n${String(req.headers[name] ?? '')}`;
    return key;
  };
  return (req: ValidatedRequest, res, next) => {
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) return validate(req, res, next);
    const key = keyOf(req);
    const known = valid.get(key);
    if (known) {
      req.openapi = known.openapi;
      req.params = { ...known.params };
      req.query = { ...known.query };
      return next();
    }
    // A HEAD is its GET without the body (RFC 9110): validated as the GET, which the validator knows
    // (else it leaves no path parameters, and a HEAD of a record answered 404).
    if (head) req.method = 'GET';
    validate(req, res, (err?: unknown) => {
      if (head) req.method = 'HEAD';
      if (err === undefined || err === null) {
        if (valid.size >= VALID_GETS_KEPT) valid.clear();
        valid.set(key, { openapi: req.openapi, params: req.params, query: { ...req.query } });
      }
      next(err);
    });
  };
}

/**
 * The validator's own response validation, run on the JSON an answer's bytes hold, so the tests
 * check exactly what production sends (`sendAnswer` in fast-path.ts). The validator validates
 * what a handler passes to `res.json`, by putting a hook in its place (its step `responseMiddleware`);
 * here that hook is put on a stand-in for the response and called with the parsed bytes. Its
 * rules stay the validator's: a 5xx answer is not checked, a failure is its `InternalServerError`
 * (mapped to `500 server_error` like any other drift from the contract).
 */
function answerCheck(responseStep: RequestHandler): AnswerCheck {
  return (req, answer) =>
    new Promise((resolve, reject) => {
      const standIn = {
        statusCode: answer.status,
        headersSent: false,
        getHeaders: () => ({ 'content-type': 'application/json; charset=utf-8' }),
        json: (_body: unknown): unknown => standIn,
      };
      let hooked = false;
      // Called once when the hook is in place, and again with the error when the body fails.
      const next = (err?: unknown): void => {
        if (err) return reject(err as Error);
        if (hooked) return;
        hooked = true;
        try {
          standIn.json.call(standIn, JSON.parse(typeof answer.body === 'string' ? answer.body : answer.body.toString('utf8')));
          resolve();
        } catch (thrown) {
          reject(thrown as Error);
        }
      };
      void responseStep(forItsStatus(req, answer.status), standIn as unknown as Response, next);
    });
}

/** What the validator's metadata step leaves on a request when it validates responses. */
interface ResponseMetadata {
  expressRoute: string;
  _responseSchema?: { responses?: Record<string, unknown> };
}

/**
 * The request as the validator's response step sees it: its operation's responses narrowed to the
 * one that the answer's status selects (the status itself, else `4XX`-style, else `default`, as
 * the validator picks), under a cache key of that response. The validator builds the validators
 * of every response of an operation on its first answer, each over the whole document, and a test
 * file met that cost for responses it never saw (bench/README.md, "Test suite time"); the check of
 * the response it does select is the same.
 */
function forItsStatus(req: Request, status: number): Request {
  const openapi = (req as Request & { openapi?: ResponseMetadata }).openapi;
  const responses = openapi?._responseSchema?.responses;
  if (!openapi || typeof openapi.expressRoute !== 'string' || !responses || typeof responses !== 'object') return req;
  const selected = [String(status), `${String(status)[0]}XX`, 'default'].find((name) => Object.hasOwn(responses, name));
  const narrowed = Object.create(req) as Request & { openapi: ResponseMetadata };
  narrowed.openapi = {
    ...openapi,
    expressRoute: `${openapi.expressRoute} ${selected ?? 'none'}`,
    _responseSchema: { ...openapi._responseSchema, responses: selected === undefined ? {} : { [selected]: responses[selected] } },
  };
  return narrowed;
}

const LOCATIONS = ['body', 'query', 'path', 'params', 'headers'] as const;

interface FieldError {
  location: string;
  field: string;
  rule: string;
  message: string;
}

function parseItem(item: ValidatorErrorItem): FieldError {
  const segments = item.path.replace(/^\./, '').split(/[/.]/).filter((s) => s !== '');
  let location = 'body';
  if (segments.length > 0 && (LOCATIONS as readonly string[]).includes(segments[0]!)) {
    location = segments.shift()!;
  }
  if (location === 'params') location = 'path';
  const field = segments.map((s) => (/^\d+$/.test(s) ? `[${s}]` : s)).join('.').replace(/\.\[/g, '[');
  // The validator names a wrong primitive type `x-eov-type`; clients see the JSON Schema word.
  // An unknown query parameter comes without a code; it is the contract's `additionalProperties`, as for a body field.
  const rule = (item.errorCode ?? (/^Unknown query parameter/.test(item.message) ? 'additionalProperties' : 'invalid'))
    .replace(/\.openapi\.(validation|requestValidation)$/, '')
    .replace(/^x-eov-/, '');
  return { location, field, rule, message: item.message };
}

function valueAt(req: Request, location: string, field: string): unknown {
  const source: unknown =
    location === 'body' ? req.body :
    location === 'query' ? req.query :
    location === 'path' ? req.params :
    location === 'headers' ? req.headers : undefined;
  let value: unknown = source;
  for (const key of field.split(/\.|\[|\]/).filter((s) => s !== '')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function requiredFields(contract: Contract, operationId: string | undefined): string[] {
  if (!operationId) return [];
  const op = contract.byId.get(operationId);
  if (!op) return [];
  const operation = ((contract.document.paths as Record<string, Record<string, unknown>>)[op.pathTemplate]?.[
    op.method.toLowerCase()
  ] ?? {}) as { requestBody?: { content?: Record<string, { schema?: unknown }> } };
  const schema = resolveRef(operation.requestBody?.content?.['application/json']?.schema, contract.document);
  return Array.isArray(schema.required) ? (schema.required as string[]) : [];
}

/**
 * A value the contract accepts as a date or a date-time (`anyOf` of the two formats) fails each
 * branch and the `anyOf` itself: one error, in words, without the validator's schema words. The
 * usual cause is an unencoded `+` in an offset, which arrives as a space.
 */
export const DATE_OR_DATE_TIME_REASON =
  'must be an ISO 8601 date (2025-03-01) or date-time (2025-03-01T09:30:00Z, 2025-03-01T10:30:00%2B01:00); ' +
  'a + in an offset must be sent percent-encoded as %2B';

function mergeDateOrDateTime(items: FieldError[]): FieldError[] {
  const dateFields = new Set(
    items.filter((i) => i.rule === 'format' && /format "iso8601-date-time"/.test(i.message)).map((i) => `${i.location} ${i.field}`),
  );
  if (dateFields.size === 0) return items;
  const seen = new Set<string>();
  const merged: FieldError[] = [];
  for (const item of items) {
    const key = `${item.location} ${item.field}`;
    if (!dateFields.has(key)) {
      merged.push(item);
    } else if (!seen.has(key)) {
      seen.add(key);
      merged.push({ ...item, rule: 'format', message: DATE_OR_DATE_TIME_REASON });
    }
  }
  return merged;
}

/**
 * Turns the validator's report into the contract's error codes. A required field that is missing, null or an
 * empty string is `missing_parameter` (an empty date counts as missing); any other rule
 * broken is `invalid_parameter`, naming the field and the rule.
 */
export function mapValidatorError(
  err: ValidatorError,
  req: Request,
  contract: Contract,
  operationId?: string,
  rules?: OperationRules,
): ApiError {
  if (err.status === 415) {
    return new ApiError('invalid_request', 'Content-Type must be application/json for a request with a body');
  }
  if (err.status === 413) return new ApiError('invalid_request', BODY_TOO_LARGE);
  if (err.status === 404 || err.status === 405) return new ApiError('not_found', 'No such endpoint');
  if (err.status >= 500) {
    // A response that drifted from the contract: a bug of ours, never the client's fault.
    return new ApiError('server_error', 'The response did not match the API contract', undefined);
  }
  const items = mergeDateOrDateTime((err.errors ?? []).map(parseItem));
  if (items.some((i) => i.location === 'body' && i.field === '' && i.rule !== 'required')) {
    return new ApiError('invalid_request', 'Request body must be a JSON object');
  }
  if (items.some((i) => i.location === 'body')) {
    const broken = firstBrokenBodyRule(rules, req.body);
    if (broken) return broken;
  }
  const missing: FieldError[] = [];
  const invalid: FieldError[] = [];
  for (const item of items) {
    const value = item.field === '' ? undefined : valueAt(req, item.location, item.field);
    // Only a field itself can be missing: a null or blank item inside an array is invalid.
    const topLevel = item.field !== '' && !/[.[]/.test(item.field);
    const isMissing =
      item.rule === 'required' ||
      (topLevel && value === null) ||
      (topLevel && item.location === 'body' && typeof value === 'string' && value.trim() === '');
    (isMissing ? missing : invalid).push(item);
  }
  if (missing.length > 0) {
    const names = [...new Set(missing.map((m) => m.field || 'body'))];
    const bodyRequired = requiredFields(contract, operationId);
    const required = missing.every((m) => m.location === 'body') ? [...new Set([...bodyRequired, ...names])] : names;
    return missingParameter(names, required);
  }
  const first = invalid[0];
  if (!first) return new ApiError('invalid_request', err.message || 'Invalid request');
  // A copy: extraDetailsFor answers the operation's details themselves.
  const extra: ErrorDetails = { ...extraDetailsFor(rules, first.field) };
  if (invalid.length > 1) {
    extra.errors = invalid.map(({ field, location, rule, message }) => ({ field, location, rule, reason: message }));
  }
  return invalidParameter(first.field, first.location, first.rule, first.message, extra);
}
