/**
 * Generators of hostile input for the fuzz tests, and a description of every operation's path,
 * query and body fields with, per field, values the contract accepts and values it must refuse.
 *
 * JSON bodies are built as a small tree (`Obj` keeps its entries in order, so duplicate keys and
 * `__proto__` keys are sent as written; `Raw` is JSON text sent verbatim: 1e309, -0, 5,000 levels
 * of nesting) and serialized by hand, then optionally made into invalid UTF-8.
 */
import { hasControlCharacters, isBlank } from '../../src/shared/text.ts';
import fc from 'fast-check';

// ---------------------------------------------------------------- JSON tree

/** JSON text sent as written (a number JSON.stringify cannot produce, deep nesting). */
export class Raw {
  constructor(readonly text: string) {}
}
/** An object as an ordered list of entries: duplicates and `__proto__` are sent as they are. */
export class Obj {
  constructor(readonly entries: Array<[string, Val]>) {}
}
export type Val = null | boolean | number | string | Raw | Obj | Val[];

/** A marker put in a string value; serialize() turns it into invalid UTF-8 bytes. */
export const BAD_UTF8 = '\u0001BAD-UTF8\u0001';

export function toJson(v: Val): string {
  if (v instanceof Raw) return v.text;
  if (v instanceof Obj) return `{${v.entries.map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(',')}}`;
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`;
  return JSON.stringify(v) ?? 'null';
}

const INVALID_UTF8_SEQUENCES = [
  [0xff],
  [0xfe, 0xff],
  [0xc0, 0xaf], // overlong '/'
  [0xe0, 0x80, 0xaf], // overlong
  [0xed, 0xa0, 0x80], // a UTF-16 surrogate encoded in UTF-8
  [0xe2, 0x82], // truncated sequence
  [0xf8, 0x88, 0x80, 0x80, 0x80], // five-byte form
  [0x80], // lone continuation byte
  [0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
];

/** Serialized body; each BAD_UTF8 marker becomes one invalid UTF-8 sequence (chosen by `pick`). */
export function toBytes(text: string, pick: number): Buffer {
  const parts = text.split(JSON.stringify(BAD_UTF8).slice(1, -1));
  const chunks: Buffer[] = [];
  parts.forEach((part, i) => {
    if (i > 0) chunks.push(Buffer.from(INVALID_UTF8_SEQUENCES[(pick + i) % INVALID_UTF8_SEQUENCES.length]!));
    chunks.push(Buffer.from(part, 'utf8'));
  });
  return Buffer.concat(chunks);
}

// ---------------------------------------------------------------- leaves

export const HOSTILE_KEYS = [
  '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__',
  '', ' ', '$where', '$ne', 'a.b', 'a[0]', '0', 'length', 'then', 'PLAN', 'plan ', 'Recipients',
];

/** Strings that have broken servers before: SQL, template and path tricks, odd Unicode, NUL. */
export const HOSTILE_STRINGS = [
  "' OR '1'='1", "'; DROP TABLE services; --", "1; SELECT pg_sleep(5) --", '" OR ""="', "%' OR 1=1 --",
  "' UNION SELECT key_hash FROM api_keys --", "\\'", '\\', '%', '_', '%%', '%_%', '\u0000', 'a\u0000b', '$1',
  '${7*7}', '{{7*7}}', '../../etc/passwd', '<script>alert(1)</script>', 'NaN', 'Infinity', '-0', '1e309',
  'null', 'true', '[]', '{}', '\ud800', '\udfff', 'a\ud800b', '\uffff', '\ufeff', '\u202e', '😀', 'é', '\r\n', '\t',
  ' ', '', 'Basic VPS\u0000', 'ＢＡＳＩＣ ＶＰＳ', 'İ', '\u0085', 'x'.repeat(257), '🂡'.repeat(100),
];

export const PLANS = ['Basic VPS', 'Standard VPS', 'Professional VPS', 'Enterprise VPS'];

/** Numbers as JSON text, including ones JSON.stringify cannot write. */
export const rawNumber: fc.Arbitrary<Val> = fc.oneof(
  fc.constantFrom('1e309', '-1e309', '-0', '0.0', '1.0', '1e2', '1E+2', '123456789012345678901234567890', '-1', '0',
    '2147483648', '4.9e-324', '0.1', '9007199254740993', '-9223372036854775809').map((t) => new Raw(t)),
  fc.integer().map((n) => n as Val),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => n as Val),
);

/** 1 to 5,000 levels of arrays or objects. */
export const deepNesting: fc.Arbitrary<Val> = fc
  .tuple(fc.integer({ min: 1, max: 5000 }), fc.boolean(), fc.constantFrom('1', '"x"', 'null', '{}', '[]'))
  .map(([depth, asArrays, inner]) =>
    new Raw(asArrays ? '['.repeat(depth) + inner + ']'.repeat(depth) : '{"a":'.repeat(depth) + inner + '}'.repeat(depth)),
  );

/** Any string: random Unicode (lone surrogates too), the hostile list, long runs. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ maxLength: 30 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 2 },
  { arbitrary: fc.constantFrom(...HOSTILE_STRINGS), weight: 4 },
  { arbitrary: fc.tuple(fc.constantFrom('a', ' ', '%', "'", 'é', '\u0000'), fc.integer({ min: 200, max: 20_000 })).map(([c, n]) => c.repeat(n)), weight: 1 },
);

export const hostileKey: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 12 }));

/** Any JSON value, hostile leaves and keys, a few levels deep. */
export const hostileValue: fc.Arbitrary<Val> = fc.letrec<{ value: Val }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString.map((s) => s as Val),
    rawNumber,
    fc.constantFrom<Val>(true, false, null),
    deepNesting,
    fc.array(tie('value'), { maxLength: 4 }).map((a) => a as Val),
    fc.array(fc.tuple(hostileKey, tie('value')), { maxLength: 4 }).map((e) => new Obj(e) as Val),
  ),
})).value;

/** A value that is not a string (and not null, which the contract reads as missing). */
export const nonString: fc.Arbitrary<Val> = hostileValue.filter((v) => typeof v !== 'string' && v !== null);

// ---------------------------------------------------------------- fields

export interface FieldSpec {
  name: string;
  required: boolean;
  /** Values the contract accepts. */
  valid: fc.Arbitrary<Val>;
  /** Values the contract must refuse (400). */
  invalid: fc.Arbitrary<Val>;
  /** Free text: a BAD_UTF8 marker may go in (its U+FFFD is still valid text). */
  text?: boolean;
  /** Always in the valid base, though dropping it is not an error on its own (denial_reason). */
  alwaysInBase?: boolean;
}

const notMatching = (re: RegExp) => hostileString.filter((s) => !re.test(s));
const longerThan = (n: number) => fc.integer({ min: n + 1, max: n + 3000 }).map((k) => 'z'.repeat(k) as Val);

const PLAN_SET = new Set(PLANS.map((p) => p.toLowerCase()));
const planField = (required: boolean): FieldSpec => ({
  name: 'plan',
  required,
  valid: fc.constantFrom<Val>(...PLANS, 'basic vps', ' Enterprise VPS '),
  invalid: fc.oneof(nonString, hostileString.filter((s) => !PLAN_SET.has(s.trim().toLowerCase())).map((s) => s as Val)),
});

const EMAILS = ['ops@client.example', 'Finance@Broker.Example', ' a.b+c@x-y.example.org '];
const email = fc.constantFrom<Val>(...EMAILS.map((e) => e.trim()));
const notEmail = hostileString.filter((s) => !s.includes('@') && s.trim() !== '');
const date = fc.constantFrom<Val>('2025-01-01', '2025-01-15', '2025-01-31');
const notDate = fc.oneof(
  notMatching(/^\d{4}-\d{2}-\d{2}$/).map((s) => s as Val),
  fc.constantFrom<Val>('2025-02-30', '2025-13-01', '2025-00-10', '0000-00-00', '2025-1-1', '20250101'),
  nonString,
);

/** Recipients: valid lists, and every way the recipients rules (openapi.yaml) refuse one. */
const recipients: FieldSpec = {
  name: 'recipients',
  required: true,
  valid: fc.array(fc.oneof(email, fc.constantFrom<Val>('', '  ')), { minLength: 1, maxLength: 4 }).map((list) => [...list, 'ops@client.example'] as Val),
  invalid: fc.oneof(
    nonString.filter((v) => !Array.isArray(v)),
    hostileString.map((s) => s as Val),
    fc.array(fc.oneof(email, nonString), { minLength: 1, maxLength: 4 }).filter((l) => l.some((x) => typeof x !== 'string')).map((l) => l as Val),
    fc.array(notEmail, { minLength: 1, maxLength: 3 }).map((l) => l as Val),
    fc.constantFrom<Val>([], [''], ['  ', '']),
    fc.integer({ min: 11, max: 40 }).map((n) => Array.from({ length: n }, (_, i) => `r${i}@example.com`) as Val),
  ),
};

/** Text with a control character somewhere (CR/LF, tab, C0, DEL, C1): refused in free text that reaches e-mails and reports. */
export const withControlCharacter: fc.Arbitrary<Val> = fc
  .tuple(
    fc.string({ maxLength: 20 }),
    fc.oneof(
      fc.constantFrom('\r\n', '\n', '\r', '\t', '\u007f', '\u0085', '\u009b'),
      fc.integer({ min: 1, max: 0x1f }).map((c) => String.fromCharCode(c)),
      // Issue 21 row 9: bidirectional controls and the line and paragraph separators.
      fc.constantFrom('\u061c', '\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u2028', '\u2029'),
    ),
    fc.string({ maxLength: 20 }),
  )
  .map(([a, control, b]) => `Aa1!${a}${control}Bcc: x@y.example${b}`);

/** Every default-ignorable code point (Unicode's property, as the server reads it). */
const DEFAULT_IGNORABLE = Array.from({ length: 0x110000 }, (_, cp) => cp)
  .filter((cp) => (cp < 0xd800 || cp > 0xdfff) && /\p{Default_Ignorable_Code_Point}/u.test(String.fromCodePoint(cp)))
  .map((cp) => String.fromCodePoint(cp));

/**
 * Text that shows nothing: white space and invisible characters only (issue 21 row 4: any
 * default-ignorable code point, unassigned and private-use ones, lone surrogates, U+FFFC).
 */
export const invisibleOnly: fc.Arbitrary<Val> = fc
  .array(
    fc.oneof(
      fc.constantFrom('\u200b', '\u200c', '\u200d', '\u2060', '\u00ad', '\u3164', '\ufeff', '\u115f', '\u1160', '\uffa0', '\u2800', '\u200e', ' '),
      fc.constantFrom(...DEFAULT_IGNORABLE),
      fc.constantFrom('\ufffc', '\ud800', '\udfff', '\u0378', '\u{e0080}', '\ue000', '\uf8ff', '\u{f0000}', '\u{10fffd}'),
    ),
    { minLength: 1, maxLength: 12 },
  )
  .map((parts) => parts.join(''));

const freeText = (name: string, required: boolean, max: number, nullable = false): FieldSpec => ({
  name,
  required,
  text: true,
  valid: fc.oneof(
    hostileString
      .filter((s) => s.trim() !== '' && s.length <= max && !/[\ud800-\udfff]/.test(s) && !hasControlCharacters(s) && !isBlank(s))
      .map((s) => s as Val),
    fc.constant<Val>('Customer moved'),
    ...(nullable ? [fc.constant<Val>(null)] : []),
  ),
  invalid: fc.oneof(
    nonString,
    longerThan(max),
    withControlCharacter,
    ...(required ? [fc.constantFrom<Val>('', '   ', '\t\n'), invisibleOnly] : []),
  ),
});

const enumField = (name: string, values: string[], required: boolean, nullable = false): FieldSpec => ({
  name,
  required,
  valid: fc.constantFrom<Val>(...values, ...(nullable ? [null] : [])),
  invalid: fc.oneof(nonString, hostileString.filter((s) => !values.includes(s)).map((s) => s as Val), ...(nullable ? [] : [fc.constant<Val>(null)])),
});

// ---------------------------------------------------------------- operations

/** `request_log_id`: the `{request_id}` of getRequestLog (an X-Request-Id, not a service request's REQ-…). */
export type PathParam = 'service_number' | 'request_id' | 'report_id' | 'endpoint_id' | 'event_id' | 'request_log_id';

export interface QuerySpec {
  name: string;
  valid: fc.Arbitrary<string>;
  /** Values the schema allows but the server may refuse (NUL, year 0000, hostile text): never a 5xx. */
  edge?: fc.Arbitrary<string>;
}

export interface OpSpec {
  operationId: string;
  method: 'GET' | 'POST';
  /** Path with `{param}` for its one parameter. */
  template: string;
  param?: PathParam;
  body?: FieldSpec[];
  query?: QuerySpec[];
  /** A valid request of a live key would change data (so live requests must always be refused). */
  mutating: boolean;
  /**
   * A valid request of a sandbox key would change data too (webhook endpoints and events are
   * records in both modes), so sandbox requests must always be refused as well.
   */
  writesInSandbox?: boolean;
}

// ---------------------------------------------------------------- webhook endpoints and events

const EVENT_TYPE_NAMES = ['service.created', 'service.updated', 'service.cancelled', 'request.created', 'request.approved', 'request.denied', 'report.completed', 'report.failed', 'ping'];

/** Public IP literals: valid without a DNS look-up. */
const webhookUrl = fc.constantFrom<Val>('https://93.184.216.34/hook', 'https://93.184.216.34:8443/a/b?c=d', 'https://[2606:2800:220:1:248:1893:25c8:1946]/hook');
/** URLs every policy refuses, or no URL at all (never a host name a DNS look-up could accept). */
const refusedUrl = fc.oneof(
  nonString,
  fc.constantFrom<Val>('', 'http://93.184.216.34/hook', 'https://127.0.0.1/', 'https://10.0.0.7/', 'https://169.254.169.254/latest', 'https://[::1]/', 'ftp://93.184.216.34/', 'not a url', 'https://user:pw@93.184.216.34/', '//93.184.216.34/'),
  longerThan(2048),
);
const urlField = (required: boolean): FieldSpec => ({ name: 'url', required, valid: webhookUrl, invalid: refusedUrl });
const eventsField: FieldSpec = {
  name: 'events',
  required: false,
  valid: fc.subarray(EVENT_TYPE_NAMES).map((types) => types as Val),
  invalid: fc.oneof(
    nonString.filter((v) => !Array.isArray(v)),
    fc.constantFrom<Val>(['service.deleted'], ['ping', 'nope'], [1], [null], ['']),
    hostileString.filter((s) => !EVENT_TYPE_NAMES.includes(s)).map((s) => [s] as Val),
  ),
};
const WEBHOOK_OPERATIONS: OpSpec[] = [
  { operationId: 'createWebhookEndpoint', method: 'POST', template: '/api/v1/webhook-endpoints', mutating: true, writesInSandbox: true, body: [urlField(true), eventsField, freeText('description', false, 200, true)] },
  { operationId: 'listWebhookEndpoints', method: 'GET', template: '/api/v1/webhook-endpoints', mutating: false, query: [{ name: 'limit', valid: fc.integer({ min: 1, max: 100 }).map(String) }, { name: 'offset', valid: fc.integer({ min: 0, max: 50 }).map(String) }] },
  { operationId: 'getWebhookEndpoint', method: 'GET', template: '/api/v1/webhook-endpoints/{endpoint_id}', param: 'endpoint_id', mutating: false },
  {
    operationId: 'listWebhookEndpointDeliveries',
    method: 'GET',
    template: '/api/v1/webhook-endpoints/{endpoint_id}/deliveries',
    param: 'endpoint_id',
    mutating: false,
    query: [
      { name: 'status', valid: fc.constantFrom('pending', 'delivered', 'failed') },
      { name: 'limit', valid: fc.integer({ min: 1, max: 100 }).map(String) },
      // Schema-valid, but it names no delivery of the endpoint: refused.
      { name: 'starting_after', valid: fc.constant('whd_00000000000000000000000000000000'), edge: fc.constant('whd_00000000000000000000000000000000') },
    ],
  },
  {
    operationId: 'updateWebhookEndpoint',
    method: 'POST',
    template: '/api/v1/webhook-endpoints/{endpoint_id}',
    param: 'endpoint_id',
    mutating: true,
    writesInSandbox: true,
    body: [urlField(false), eventsField, freeText('description', false, 200, true), enumField('status', ['enabled', 'disabled'], false)],
  },
  { operationId: 'deleteWebhookEndpoint', method: 'POST', template: '/api/v1/webhook-endpoints/{endpoint_id}/delete', param: 'endpoint_id', mutating: true, writesInSandbox: true },
  { operationId: 'rotateWebhookEndpointSecret', method: 'POST', template: '/api/v1/webhook-endpoints/{endpoint_id}/rotate-secret', param: 'endpoint_id', mutating: true, writesInSandbox: true },
  {
    operationId: 'sendExampleEvent',
    method: 'POST',
    template: '/api/v1/webhook-endpoints/{endpoint_id}/send-example',
    param: 'endpoint_id',
    mutating: true,
    writesInSandbox: true,
    body: [enumField('type', [...EVENT_TYPE_NAMES, 'webhook_endpoint.created', 'webhook_endpoint.updated', 'webhook_endpoint.deleted'], true)],
  },
  { operationId: 'getWebhookEndpointStats', method: 'GET', template: '/api/v1/webhook-endpoints/{endpoint_id}/stats', param: 'endpoint_id', mutating: false, query: [
        { name: 'interval', valid: fc.constantFrom('hour', 'day') },
        // A start alone spans a day (hour) or 30 days (day) from it; with an end, a range of at most 30 days or an empty one (refused).
        { name: 'created_gte', valid: fc.constantFrom('2025-03-02T00:00:00Z', '2025-03-02T10:30:00.250+01:00', '9999-12-31T23:59:59Z'), edge: fc.constantFrom('0001-01-01T00:00:00Z') },
        { name: 'created_lt', valid: fc.constantFrom('2025-03-03T00:00:00Z', '2025-03-31T00:00:00.000Z'), edge: fc.constantFrom('0001-01-01T00:00:00Z', '9999-12-31T23:59:59Z') },
      ] },
  { operationId: 'pingWebhookEndpoint', method: 'POST', template: '/api/v1/webhook-endpoints/{endpoint_id}/ping', param: 'endpoint_id', mutating: true, writesInSandbox: true },
  {
    operationId: 'recoverWebhookEndpoint',
    method: 'POST',
    template: '/api/v1/webhook-endpoints/{endpoint_id}/recover',
    param: 'endpoint_id',
    mutating: true,
    writesInSandbox: true,
    // Valid: an hour ago (within the 30 days kept); refused: not a date-time, long gone, or to come.
    body: [
      {
        name: 'since',
        required: true,
        valid: fc.constant<Val>(null).map(() => new Date(Date.now() - 3_600_000).toISOString()),
        invalid: fc.oneof(nonString, fc.constantFrom<Val>('', 'yesterday', '2025-13-01T00:00:00Z', '2000-01-01T00:00:00Z', '2999-01-01T00:00:00Z')),
      },
    ],
  },
  {
    operationId: 'listEvents',
    method: 'GET',
    template: '/api/v1/events',
    mutating: false,
    query: [
      { name: 'type', valid: fc.constantFrom(...EVENT_TYPE_NAMES) },
      { name: 'limit', valid: fc.integer({ min: 1, max: 100 }).map(String) },
      // Schema-valid, but it names no event of the key: refused.
      { name: 'starting_after', valid: fc.constant('evt_AAAAAAAAAAAAAAAAAAAAAAAA'), edge: fc.constant('evt_AAAAAAAAAAAAAAAAAAAAAAAA') },
      { name: 'order', valid: fc.constantFrom('asc', 'desc') },
      { name: 'created_gte', valid: fc.constantFrom('2025-01-01T00:00:00Z', '2030-12-31T23:59:59.999+02:00', '9999-12-31T23:59:59Z'), edge: fc.constantFrom('0001-01-01T00:00:00Z', '0001-01-01T00:00:00+14:00') },
      { name: 'created_lt', valid: fc.constantFrom('2025-01-01T00:00:00Z', '2030-12-31T23:59:59.999-02:00', '9999-12-31T23:59:59Z'), edge: fc.constantFrom('0001-01-01T00:00:00Z', '9999-12-31T23:59:59-14:00') },
    ],
  },
  { operationId: 'getEvent', method: 'GET', template: '/api/v1/events/{event_id}', param: 'event_id', mutating: false },
  {
    operationId: 'redeliverEvent',
    method: 'POST',
    template: '/api/v1/events/{event_id}/redeliver',
    param: 'event_id',
    mutating: true,
    writesInSandbox: true,
    body: [{ name: 'endpoint_id', required: false, valid: fc.constant<Val>('we_AAAAAAAAAAAAAAAAAAAAAAAA'), invalid: fc.oneof(nonString, fc.constantFrom<Val>('', 'we_', 'evt_AAAAAAAAAAAAAAAAAAAAAAAA', 'x')) }],
  },
];

/** The request id of the API log entry the fuzz world writes for each of its keys' modes. */
export const FUZZ_REQUEST_LOG_ID = 'fuzz-request-log';

const REQUEST_LOG_OPERATIONS: OpSpec[] = [
  {
    operationId: 'listRequestLogs',
    method: 'GET',
    template: '/api/v1/request-logs',
    mutating: false,
    query: [
      { name: 'request_id', valid: fc.constantFrom('req_0cc175b9c0f1b6a831c399e269772661', 'order-sync:2025.03-02_1') },
      { name: 'status', valid: fc.constantFrom('200', '429', '2xx', '4xx', '5xx') },
      { name: 'method', valid: fc.constantFrom('GET', 'post', 'Head') },
      { name: 'operation', valid: fc.constantFrom('listServices', 'createService', 'listRequestLogs') },
      { name: 'api_key_id', valid: fc.constantFrom('key_AAAAAAAAAAAAAAAAAAAA', 'key_01hzx3k8w6') },
      { name: 'created_gte', valid: fc.constantFrom('2025-03-02T00:00:00Z', '2025-03-02T10:30:00.250+01:00') },
      { name: 'created_lt', valid: fc.constantFrom('2030-01-01T00:00:00Z', '2025-03-02T00:00:00.000Z') },
      { name: 'limit', valid: fc.integer({ min: 1, max: 100 }).map(String) },
      // An entry the fuzz world wrote in each mode (found), or schema-valid but no entry of the key (refused).
      { name: 'starting_after', valid: fc.constant(FUZZ_REQUEST_LOG_ID), edge: fc.constant('req_nothing') },
    ],
  },
  { operationId: 'getRequestLog', method: 'GET', template: '/api/v1/request-logs/{request_id}', param: 'request_log_id', mutating: false },
  { operationId: 'getRequestStats', method: 'GET', template: '/api/v1/request-stats', mutating: false, query: [
      { name: 'interval', valid: fc.constantFrom('hour', 'day') },
      // A start alone spans a day (hour) or 30 days (day) from it; with an end, a range of at most 30 days or an empty one (refused).
      { name: 'created_gte', valid: fc.constantFrom('2025-03-02T00:00:00Z', '2025-03-02T10:30:00.250+01:00', '9999-12-31T23:59:59Z'), edge: fc.constantFrom('0001-01-01T00:00:00Z') },
      { name: 'created_lt', valid: fc.constantFrom('2025-03-03T00:00:00Z', '2025-03-31T00:00:00.000Z'), edge: fc.constantFrom('0001-01-01T00:00:00Z', '9999-12-31T23:59:59Z') },
    ] },
];

const limitOffset: QuerySpec[] = [
  { name: 'limit', valid: fc.integer({ min: 1, max: 100 }).map(String) },
  { name: 'offset', valid: fc.integer({ min: 0, max: 50 }).map(String) },
];

export const OPERATIONS: OpSpec[] = [
  { operationId: 'getAuthCheck', method: 'GET', template: '/api/v1/auth-check', mutating: false },
  { operationId: 'postAuthCheck', method: 'POST', template: '/api/v1/auth-check', mutating: false },
  // A console link changes no business record (its row is a credential, as a key is).
  { operationId: 'createConsoleSession', method: 'POST', template: '/api/v1/console-sessions', mutating: false },
  {
    operationId: 'createService',
    method: 'POST',
    template: '/api/v1/service-create',
    mutating: true,
    body: [
      planField(true),
      {
        name: 'hostname',
        required: true,
        valid: fc.constantFrom<Val>('web01.client.example', 'a', 'x-1.example.org'),
        invalid: fc.oneof(nonString, notMatching(/^[A-Za-z0-9.-]*$/).filter((s) => s.trim() !== '').map((s) => s as Val), longerThan(253)),
      },
      { name: 'customer_email', required: true, valid: email, invalid: fc.oneof(nonString, notEmail.map((s) => s as Val)) },
      freeText('customer_name', false, 200, true),
      enumField('billing_cycle', ['monthly', 'quarterly', 'annually'], false),
    ],
  },
  {
    operationId: 'listServices',
    method: 'GET',
    template: '/api/v1/services',
    mutating: false,
    query: [
      { name: 'status', valid: fc.constantFrom('pending', 'active', 'suspended', 'cancelled') },
      // Edge values are schema-valid but only the database could object to them (NUL, year 0000).
      { name: 'search', valid: fc.constantFrom('web', 'example', 'vps', '%', '_', "'"), edge: fc.oneof(fc.constantFrom('\u0000', 'a\u0000b'), hostileString.filter((s) => s.length >= 1 && s.length <= 200)) },
      { name: 'modified_since', valid: fc.constantFrom('2025-01-01', '2025-01-01T00:00:00Z', '2030-12-31T23:59:59.999+02:00', '9999-12-31T23:59:59Z'), edge: fc.constantFrom('0000-01-01', '0000-01-01T00:00:00Z', '0001-01-01') },
      { name: 'include_credentials', valid: fc.constantFrom('true', 'false') },
      ...limitOffset,
    ],
  },
  { operationId: 'getService', method: 'GET', template: '/api/v1/services/{service_number}', param: 'service_number', mutating: false },
  {
    operationId: 'updateServicePassword',
    method: 'POST',
    template: '/api/v1/services/{service_number}/password',
    param: 'service_number',
    mutating: true,
    body: [
      {
        name: 'password',
        required: false,
        text: true,
        valid: fc.string({ minLength: 12, maxLength: 128 }).filter((s) => s.length >= 12 && !hasControlCharacters(s)).map((s) => s as Val),
        invalid: fc.oneof(nonString, fc.string({ maxLength: 11 }).map((s) => s as Val), longerThan(128), withControlCharacter),
      },
    ],
  },
  { operationId: 'upgradeService', method: 'POST', template: '/api/v1/services/{service_number}/upgrade', param: 'service_number', mutating: true, body: [planField(true)] },
  { operationId: 'downgradeService', method: 'POST', template: '/api/v1/services/{service_number}/downgrade', param: 'service_number', mutating: true, body: [planField(true)] },
  {
    operationId: 'cancelService',
    method: 'POST',
    template: '/api/v1/services/{service_number}/cancel',
    param: 'service_number',
    mutating: true,
    body: [freeText('reason', true, 1000), enumField('when', ['immediate', 'end_of_billing_period'], false)],
  },
  {
    operationId: 'listRequests',
    method: 'GET',
    template: '/api/v1/requests',
    mutating: false,
    query: [
      { name: 'status', valid: fc.constantFrom('pending', 'provider_review', 'approved', 'denied') },
      { name: 'type', valid: fc.constantFrom('create', 'upgrade', 'downgrade', 'cancel') },
      { name: 'source', valid: fc.constantFrom('api', 'import', 'portal', 'admin') },
      { name: 'date', valid: fc.constantFrom('2025-01-01', '2026-11-22', '9999-12-31'), edge: fc.constantFrom('0000-01-01', '0001-01-01') },
      { name: 'search', valid: fc.constantFrom('example', 'REQ', '%', '_'), edge: fc.oneof(fc.constantFrom('\u0000'), hostileString.filter((s) => s.length >= 1 && s.length <= 200)) },
      ...limitOffset,
    ],
  },
  {
    operationId: 'manageRequest',
    method: 'POST',
    template: '/api/v1/requests/{request_id}/manage',
    param: 'request_id',
    mutating: true,
    body: [enumField('action', ['approve', 'deny'], true), { ...freeText('denial_reason', false, 1000), valid: fc.constant<Val>('Hostname taken'), alwaysInBase: true }],
  },
  {
    operationId: 'sendServicesReport',
    method: 'POST',
    template: '/api/v1/reports/services',
    mutating: true,
    body: [recipients, enumField('status', ['pending', 'active', 'suspended', 'cancelled'], false, true)],
  },
  {
    operationId: 'sendInvoicesReport',
    method: 'POST',
    template: '/api/v1/reports/invoices',
    mutating: true,
    body: [
      recipients,
      { name: 'start_date', required: true, valid: fc.constant<Val>('2025-01-01'), invalid: notDate },
      { name: 'end_date', required: true, valid: date, invalid: notDate },
    ],
  },
  {
    operationId: 'listReports',
    method: 'GET',
    template: '/api/v1/reports',
    mutating: false,
    // Its cursors name runs of the key's broker and mode: test/reports/list.test.ts.
    query: [...limitOffset],
  },
  { operationId: 'getReport', method: 'GET', template: '/api/v1/reports/{report_id}', param: 'report_id', mutating: false },
  ...WEBHOOK_OPERATIONS,
  ...REQUEST_LOG_OPERATIONS,
];

// ---------------------------------------------------------------- paths and queries

/** A string made safe for a path segment or query value, or left raw to test bad escapes. */
export function encode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    // A lone surrogate cannot be encoded: send its code units as (invalid) percent escapes.
    return [...s].map((c) => (/[\ud800-\udfff]/.test(c) ? `%${c.charCodeAt(0).toString(16)}` : encodeURIComponent(c))).join('');
  }
}

/** Longest path parameter sent (Node refuses a request line over 16 KiB with a bodiless 431). */
export const MAX_SEGMENT = 2000;

/** Percent sequences that do not decode to UTF-8 text, and other raw oddities. */
export const BAD_ESCAPES = ['%', '%z', '%zz', '%E0%A4%A', '%C0%AF', '%FF', '%00', '%ED%A0%80', '%%', '%2', '%u0041', '%2e%2e', '%2F', '%5C', '%0d%0a'];

const decoded = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/**
 * Service numbers the contract refuses: anything but plain decimal digits in 1..9007199254740991
 * (`Infinity`, `1e309`, `1e3`, `0x1F`, `+1`, ` 1`, `1.0` included).
 */
export const invalidServiceNumber: fc.Arbitrary<string> = fc
  .oneof(
    fc.constantFrom('0', '-1', '-0', '1e309', 'NaN', 'Infinity', '-Infinity', '9007199254740992', '99999999999999999999', '1.5',
      'abc', '%20', '1e3x', '%zz', '%', '%E0%A4%A', '%C0%AF', '%00', '%FF', '1%00', '..', '%2e%2e', "1'OR'1'='1", '1;DROP',
      '1e3', '0x1F', '+1', '%201', '1%20', '1.0', '0b1', '1_000'),
    fc.constantFrom(...BAD_ESCAPES),
    hostileString.filter((s) => s !== '').map((s) => encode(s).slice(0, MAX_SEGMENT)),
  )
  .filter((s) => {
    const d = decoded(s);
    return !(/^\d{1,16}$/.test(d) && Number(d) >= 1 && Number(d) <= Number.MAX_SAFE_INTEGER) && d !== '';
  });

export const invalidRequestId: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('REQ-', 'REQ-abc', 'REQ--1', 'RQ-1', '1', 'REQ-1e3', 'REQ-%zz', 'REQ-1%00', 'REQ_1', 'REQ-%EF%BC%91', 'REQ-1.0', '%', 'REQ-%', 'REQ-%E0%A4%A'),
  fc.constantFrom(...BAD_ESCAPES),
  hostileString.filter((s) => !/^[Rr][Ee][Qq]-[0-9]+$/.test(s) && s !== '').map((s) => encode(s).slice(0, MAX_SEGMENT)),
);

const notId = (re: RegExp): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constantFrom('we_', 'evt_', 'we_short', 'evt_AAAAAAAAAAAAAAAAAAAAAAA', 'we_AAAAAAAAAAAAAAAAAAAAAAAAA', 'WE_AAAAAAAAAAAAAAAAAAAAAAAA', 'we_AAAAAAAAAAAAAAAAAAAAAAA%21', '%', '%zz', '1'),
    fc.constantFrom(...BAD_ESCAPES),
    hostileString.filter((s) => s !== '' && !re.test(s)).map((s) => encode(s).slice(0, MAX_SEGMENT)),
  ).filter((s) => !re.test(decoded(s)) && decoded(s) !== '');
export const invalidEndpointId: fc.Arbitrary<string> = notId(/^we_[A-Za-z0-9]{24}$/);
export const invalidEventId: fc.Arbitrary<string> = notId(/^evt_[A-Za-z0-9]{24}$/);
export const invalidRequestLogId: fc.Arbitrary<string> = notId(/^[A-Za-z0-9._:-]{1,128}$/);

/** A query value: valid, hostile (escaped), raw bad escapes, odd numbers. */
export const queryValue = (valid: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: valid.map(encode), weight: 3 },
    { arbitrary: hostileString.map(encode), weight: 3 },
    { arbitrary: fc.constantFrom(...BAD_ESCAPES), weight: 1 },
    { arbitrary: fc.constantFrom('1e309', '-0', 'NaN', 'Infinity', '0x10', '1.0', '1e1', '', '100', '101', '0', '-1', '+5', '%201', '9007199254740993', 'true', 'TRUE', '1', 'null'), weight: 2 },
    // NUL and out-of-range dates, which the database (not the validator) refuses.
    { arbitrary: fc.constantFrom('%00', 'a%00b', '0000-01-01', '0000-01-01T00:00:00Z', '9999-12-31', '9999-12-31T23:59:59.999Z', '1900-02-29', '2024-02-29', '2025-01-01T24:00:00Z'), weight: 2 },
  );

/** A query key: a known parameter, in bracket forms (arrays, objects, prototype keys), or junk. */
export const queryKey = (known: string[]): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...(known.length > 0 ? known : ['limit'])), weight: 4 },
    {
      arbitrary: fc.tuple(fc.constantFrom(...(known.length > 0 ? known : ['limit'])), fc.constantFrom('[]', '[0]', '[1000]', '[__proto__]', '[constructor][prototype]', '[a][b][c][d][e][f][g]', '.x', '%5B%5D')).map(([k, s]) => k + s),
      weight: 2,
    },
    { arbitrary: fc.constantFrom('__proto__', '__proto__[admin]', 'constructor[prototype][x]', 'toString', '', '%', '%zz', 'a[', ']', '[]'), weight: 1 },
    { arbitrary: hostileString.map(encode), weight: 1 },
  );

/** Longest query string sent (with MAX_HEADER_TEXT headers, well under Node's 16 KiB header limit). */
export const MAX_QUERY = 6000;
export const MAX_HEADER_TEXT = 2000;

/** A whole query string (duplicates and odd separators included), without the `?`. */
export const queryString = (spec?: QuerySpec[]): fc.Arbitrary<string> => {
  const known = (spec ?? []).map((q) => q.name);
  const pair = fc.oneof(
    ...(spec && spec.length > 0
      ? [fc.constantFrom(...spec).chain((q) => queryValue(q.valid).map((v) => `${q.name}=${v}`))]
      : []),
    fc.tuple(queryKey(known), queryValue(fc.constant('x'))).map(([k, v]) => `${k}=${v}`),
    queryKey(known),
  );
  // Capped: Node refuses a request line and headers over 16 KiB itself (431, before the app).
  return fc.tuple(fc.array(pair, { maxLength: 6 }), fc.constantFrom('&', '&', '&&', ';')).map(([pairs, sep]) => pairs.join(sep).slice(0, MAX_QUERY));
};

// ---------------------------------------------------------------- headers

/** Header-safe text (what an HTTP client can send: tab, printable ASCII, Latin-1). */
export const headerText = (maxLength: number): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }), fc.constant(9)).map((c) => String.fromCharCode(c)), maxLength }),
    fc.constantFrom('success', 'SUCCESS', ' provider_review ', 'Provider_Review', 'validation_error', 'server_error', 'Server_Error ', '', 'null', "' OR 1=1 --", '../../x', 'succe\u00e9ss'),
    fc.integer({ min: 1000, max: MAX_HEADER_TEXT }).map((n) => 'h'.repeat(n)),
  );

/** Extra request headers that proxies and frameworks have been known to honour. */
export const extraHeaders: fc.Arbitrary<Record<string, string>> = fc
  .array(
    fc.tuple(
      fc.constantFrom('X-Forwarded-For', 'X-Real-IP', 'X-HTTP-Method-Override', 'X-Original-URL', 'X-Rewrite-URL', 'Accept', 'Accept-Charset', 'Accept-Encoding', 'Range', 'If-None-Match', 'Origin', 'Cookie', 'X-Forwarded-Proto', 'Forwarded'),
      fc.oneof(headerText(200), fc.constantFrom('DELETE', 'text/html', '127.0.0.1, 10.0.0.1', '*/*;q=0', 'bytes=0-1', 'gzip, br', 'for=1.2.3.4', '/api/v1/auth-check')),
    ),
    { maxLength: 3 },
  )
  .map((pairs) => Object.fromEntries(pairs));
