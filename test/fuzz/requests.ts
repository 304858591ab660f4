/**
 * Whole requests for one operation: a valid base (existing service numbers and request ids, valid
 * body fields), then "breakers" (each one alone must make the contract refuse the request) and
 * "noise" (hostile but harmless variations: headers, invalid UTF-8 in free text, trailing slashes,
 * charset parameters, duplicate keys whose last value is valid...).
 *
 * A live key on an operation that changes data always gets at least one breaker, so no valid
 * request can legitimately change data; a sandbox key gets anything, valid requests included.
 */
import fc from 'fast-check';
import {
  BAD_UTF8,
  deepNesting,
  encode,
  extraHeaders,
  headerText,
  hostileKey,
  hostileString,
  hostileValue,
  invalidEndpointId,
  invalidEventId,
  invalidRequestLogId,
  invalidRequestId,
  invalidServiceNumber,
  Obj,
  queryString,
  rawNumber,
  Raw,
  toBytes,
  toJson,
  type FieldSpec,
  type OpSpec,
  type QuerySpec,
  type Val,
} from './arbitraries.ts';
import { describeRequest, type KeyKind, type RawRequest, type Sent } from './harness.ts';

export interface WorldIds {
  keys: Record<KeyKind, string>;
  serviceNumbers: number[];
  requestIds: string[];
  /** Webhook endpoints and events of the fuzz broker, by the mode of the key that sees them. */
  endpointIds: Record<KeyKind, string[]>;
  eventIds: Record<KeyKind, string[]>;
  /** Request log entries of the fuzz broker, by the mode of the key that sees them. */
  requestLogIds: Record<KeyKind, string[]>;
  /** Report runs of the fuzz broker, by the mode of the key that sees them. */
  reportIds: Record<KeyKind, string[]>;
}

export type Breaker =
  | { kind: 'field'; field: string; value: Val }
  | { kind: 'drop'; field: string }
  | { kind: 'extra'; key: string; value: Val }
  | { kind: 'dupLastInvalid'; field: string; value: Val }
  | { kind: 'path'; value: string }
  | { kind: 'body'; body: Buffer | string; why: string }
  | { kind: 'contentType'; contentType: string | null }
  | { kind: 'huge'; pad: number; inString: boolean };

export type Noise =
  | { kind: 'badUtf8InText' }
  | { kind: 'bom' }
  | { kind: 'whitespace'; ws: string }
  | { kind: 'dupFirstInvalid'; field: string; value: Val }
  | { kind: 'trailingSlash' }
  | { kind: 'charset'; contentType: string }
  | { kind: 'query'; query: string };

export interface Built {
  req: RawRequest;
  sent: Sent;
  /** A breaker was applied: the answer must be a 4xx. */
  mustReject: boolean;
  /** Sandbox, no breaker, no noise that might break it, and no scenario that replaces the answer: must be a 2xx. */
  mustSucceed: boolean;
  label: string;
  [fc.toStringMethod]?: () => string;
}

const fieldsOf = (op: OpSpec): FieldSpec[] => op.body ?? [];

function breakerArb(op: OpSpec): fc.Arbitrary<Breaker> | undefined {
  const fields = fieldsOf(op);
  const names = fields.map((f) => f.name);
  const options: Array<fc.Arbitrary<Breaker>> = [];
  if (fields.length > 0) {
    const withInvalid = fc.constantFrom(...fields).chain((f) => f.invalid.map((value) => ({ field: f.name, value })));
    options.push(withInvalid.map(({ field, value }): Breaker => ({ kind: 'field', field, value })));
    options.push(withInvalid.map(({ field, value }): Breaker => ({ kind: 'dupLastInvalid', field, value })));
    const required = fields.filter((f) => f.required && !f.alwaysInBase);
    if (required.length > 0) options.push(fc.constantFrom(...required).map((f): Breaker => ({ kind: 'drop', field: f.name })));
    options.push(
      fc.tuple(hostileKey.filter((k) => !names.includes(k)), hostileValue).map(([key, value]): Breaker => ({ kind: 'extra', key, value })),
    );
  }
  if (op.param === 'service_number') options.push(invalidServiceNumber.map((value): Breaker => ({ kind: 'path', value })));
  if (op.param === 'request_id') options.push(invalidRequestId.map((value): Breaker => ({ kind: 'path', value })));
  if (op.param === 'endpoint_id') options.push(invalidEndpointId.map((value): Breaker => ({ kind: 'path', value })));
  if (op.param === 'event_id') options.push(invalidEventId.map((value): Breaker => ({ kind: 'path', value })));
  if (op.param === 'request_log_id') options.push(invalidRequestLogId.map((value): Breaker => ({ kind: 'path', value })));
  if (op.method === 'POST' && fields.length > 0) {
    options.push(
      fc
        .oneof(
          fc.oneof(hostileString.map((s) => s as Val), rawNumber, fc.constantFrom<Val>(null, true, [], ['x']), deepNesting.filter((v) => (v as Raw).text.startsWith('[')))
            .map((v) => ({ body: toJson(v), why: 'not an object' })),
          fc.constantFrom('{', '{"plan":}', "{'plan':'Basic VPS'}", '{"a":1,}', 'NaN', '{"a" 1}', '[', '}', '{"x":"\\u12"}', '{"x":"\\q"}', '\u0000', 'null null')
            .map((body) => ({ body, why: 'invalid JSON' })),
          fc.uint8Array({ minLength: 0, maxLength: 300 }).map((bytes) => ({ body: Buffer.concat([Buffer.from([0xff]), Buffer.from(bytes)]), why: 'invalid UTF-8 bytes' })),
        )
        .map(({ body, why }): Breaker => ({ kind: 'body', body, why })),
    );
    options.push(
      fc
        .constantFrom(null, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/jsonx', 'json', 'application/json-patch+json', 'text/json', 'application/octet-stream')
        .map((contentType): Breaker => ({ kind: 'contentType', contentType })),
    );
    options.push(
      fc.tuple(fc.integer({ min: 1024 * 1024 + 1, max: 1536 * 1024 }), fc.boolean()).map(([pad, inString]): Breaker => ({ kind: 'huge', pad, inString })),
    );
  }
  return options.length > 0 ? fc.oneof(...options) : undefined;
}

function noiseArb(op: OpSpec): fc.Arbitrary<Noise> {
  const fields = fieldsOf(op);
  const options: Array<fc.Arbitrary<Noise>> = [
    fc.constant<Noise>({ kind: 'trailingSlash' }),
    queryString(op.query).map((query): Noise => ({ kind: 'query', query })),
  ];
  if (op.method === 'POST') {
    options.push(
      fc.constant<Noise>({ kind: 'bom' }),
      fc.constantFrom(' ', '\n', '\t', '\r\n  ').map((ws): Noise => ({ kind: 'whitespace', ws })),
      fc.constantFrom('application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'application/json; foo=bar', 'application/json, text/plain')
        .map((contentType): Noise => ({ kind: 'charset', contentType })),
    );
  }
  if (fields.some((f) => f.text)) options.push(fc.constant<Noise>({ kind: 'badUtf8InText' }));
  if (fields.length > 0) {
    options.push(
      fc.constantFrom(...fields).chain((f) => f.invalid.map((value): Noise => ({ kind: 'dupFirstInvalid', field: f.name, value }))),
    );
  }
  return fc.oneof(...options);
}

/** Noise that cannot turn a valid request into an invalid one. */
/** The sandbox scenarios that may answer an error (openapi.yaml, *Test scenarios*). */
const FAILING_SCENARIOS = new Set(['validation_error', 'server_error', 'conflict', 'not_found', 'no_data']);

const HARMLESS: ReadonlySet<Noise['kind']> = new Set(['dupFirstInvalid', 'whitespace']);

function validParam(op: OpSpec, kind: KeyKind, ids: WorldIds): fc.Arbitrary<string> {
  if (op.param === 'service_number') {
    const existing = fc.constantFrom(...ids.serviceNumbers).map(String);
    return kind === 'live' ? existing : fc.oneof(existing, fc.integer({ min: 1, max: 2147483647 }).map(String), fc.constant('000123'));
  }
  if (op.param === 'request_id') {
    const existing = fc.constantFrom(...ids.requestIds);
    return fc.oneof(existing, existing.map((id) => id.toLowerCase()), existing.map((id) => id.replace(/-0+/, '-')));
  }
  // A run of the key's mode (found), or any id (a 404 unless it is one of them).
  if (op.param === 'report_id') return kind === 'live' ? fc.oneof(fc.constantFrom(...ids.reportIds.live), fc.uuid()) : fc.constantFrom(...ids.reportIds.sandbox);
  // Endpoints and events of the key's own mode: found (a sandbox key's clean request must succeed).
  if (op.param === 'endpoint_id') return fc.constantFrom(...ids.endpointIds[kind]);
  if (op.param === 'event_id') return fc.constantFrom(...ids.eventIds[kind]);
  if (op.param === 'request_log_id') return fc.constantFrom(...ids.requestLogIds[kind]);
  return fc.constant('');
}

/**
 * A query of distinct known parameters, each with a valid value (so the request reaches the
 * database), or an edge value (schema-valid, but the server may refuse it): `edge` says which.
 */
function validQuery(op: OpSpec): fc.Arbitrary<{ query: string; edge: boolean }> {
  if (!op.query || op.query.length === 0) return fc.constant({ query: '', edge: false });
  type Pair = { pair: string; edge: boolean };
  const value = (q: QuerySpec): fc.Arbitrary<Pair> =>
    q.edge
      ? fc.oneof(q.valid.map((v) => ({ pair: `${q.name}=${encode(v)}`, edge: false })), q.edge.map((v) => ({ pair: `${q.name}=${encode(v)}`, edge: true })))
      : q.valid.map((v) => ({ pair: `${q.name}=${encode(v)}`, edge: false }));
  return fc
    .subarray(op.query)
    .chain((params): fc.Arbitrary<Pair[]> => (params.length === 0 ? fc.constant<Pair[]>([]) : fc.tuple(...params.map(value))))
    .map((pairs) => ({ query: pairs.map((p) => p.pair).join('&'), edge: pairs.some((p) => p.edge) }));
}

function baseBody(op: OpSpec): fc.Arbitrary<Array<[string, Val]>> {
  const parts = fieldsOf(op).map((f) =>
    fc.tuple(f.required || f.alwaysInBase ? fc.constant(true) : fc.boolean(), f.valid).map(([include, value]) => (include ? [[f.name, value] as [string, Val]] : [])),
  );
  return fc.tuple(...parts).map((lists) => lists.flat());
}

/** Applies the breakers and noise; returns the body bytes, content type and path pieces. */
function assemble(
  op: OpSpec,
  entries: Array<[string, Val]>,
  breakers: Breaker[],
  noise: Noise[],
  param: string,
  utf8Pick: number,
): { path: string; body?: Buffer; contentType: string | null } {
  let contentType: string | null = 'application/json';
  let paramValue = param;
  let trailing = '';
  let query = '';
  let e: Array<[string, Val]> = entries.map(([k, v]) => [k, v]);
  let wholeBody: Buffer | string | undefined;
  let huge: { pad: number; inString: boolean } | undefined;
  for (const n of noise) {
    if (n.kind === 'dupFirstInvalid' && e.some(([k]) => k === n.field)) e.unshift([n.field, n.value]);
    if (n.kind === 'badUtf8InText') {
      const text = new Set(fieldsOf(op).filter((f) => f.text).map((f) => f.name));
      e = e.map(([k, v]) => (text.has(k) && typeof v === 'string' ? [k, `${v.slice(0, 5)}${BAD_UTF8}${v.slice(5)}`] : [k, v]));
    }
    if (n.kind === 'trailingSlash') trailing = '/';
    if (n.kind === 'charset') contentType = n.contentType;
    if (n.kind === 'query') query = n.query;
  }
  for (const b of breakers) {
    switch (b.kind) {
      case 'field': {
        const i = e.findLastIndex(([k]) => k === b.field);
        if (i >= 0) e[i] = [b.field, b.value];
        else e.push([b.field, b.value]);
        break;
      }
      case 'drop':
        e = e.filter(([k]) => k !== b.field);
        break;
      case 'extra':
        e.splice(Math.min(1, e.length), 0, [b.key, b.value]);
        break;
      case 'dupLastInvalid':
        e.push([b.field, b.value]);
        break;
      case 'path':
        paramValue = b.value;
        break;
      case 'body':
        wholeBody = b.body;
        break;
      case 'contentType':
        contentType = b.contentType;
        break;
      case 'huge':
        huge = b;
        break;
    }
  }
  const path = op.template.replace(/\{[^}]+\}/, paramValue) + trailing + (query ? `?${query}` : '');
  if (op.method === 'GET') return { path, contentType: null };
  let text: string;
  if (wholeBody !== undefined) {
    return { path, body: Buffer.isBuffer(wholeBody) ? wholeBody : Buffer.from(wholeBody, 'utf8'), contentType };
  }
  if (huge?.inString) e.push(['padding', 'A'.repeat(huge.pad)]);
  text = toJson(new Obj(e));
  if (huge && !huge.inString) text += ' '.repeat(huge.pad);
  for (const n of noise) {
    if (n.kind === 'bom') text = `\ufeff${text}`;
    if (n.kind === 'whitespace') text = `${n.ws}${text}${n.ws}`;
  }
  return { path, body: toBytes(text, utf8Pick), contentType };
}

/** A request for `op` with a key of `kind`, as described at the top of this file. */
export function requestFor(op: OpSpec, kind: KeyKind, ids: WorldIds): fc.Arbitrary<Built> {
  const breaker = breakerArb(op);
  const minBreakers = (kind === 'live' && op.mutating) || op.writesInSandbox ? 1 : 0;
  const breakers = breaker ? fc.array(breaker, { minLength: minBreakers, maxLength: 2 }) : fc.constant<Breaker[]>([]);
  if (!breaker && minBreakers > 0) throw new Error(`${op.operationId}: nothing can break it, so a live key cannot be fuzzed safely`);
  return fc
    .record({
      entries: baseBody(op),
      breakers,
      noise: fc.array(noiseArb(op), { maxLength: 2 }),
      param: validParam(op, kind, ids),
      scenario: fc.option(headerText(64), { nil: undefined, freq: 2 }),
      requestId: fc.option(headerText(300), { nil: undefined, freq: 3 }),
      extra: extraHeaders,
      utf8Pick: fc.nat(20),
      baseQuery: validQuery(op),
    })
    .map(({ entries, breakers: bs, noise, param, scenario, requestId, extra, utf8Pick, baseQuery }): Built => {
      const assembled = assemble(op, entries, bs, noise, param, utf8Pick);
      const { body, contentType } = assembled;
      // The valid query goes first; query noise (if any) was appended by assemble().
      const q = baseQuery.query;
      const path = q === '' ? assembled.path : assembled.path.includes('?') ? assembled.path.replace('?', `?${q}&`) : `${assembled.path}?${q}`;
      const headers: Record<string, string> = { ...extra, Authorization: `Bearer ${ids.keys[kind]}` };
      if (contentType !== null && body !== undefined) headers['Content-Type'] = contentType;
      if (scenario !== undefined) headers['X-Test-Scenario'] = scenario;
      if (requestId !== undefined) headers['X-Request-Id'] = requestId;
      const normalized = scenario?.trim().toLowerCase();
      // Issue 21 row 8: a scenario over 64 characters is 400 invalid_parameter, with any key.
      const scenarioTooLong = scenario !== undefined && scenario.length > 64;
      const mustSucceed =
        kind === 'sandbox' && bs.length === 0 && !baseQuery.edge && noise.every((n) => HARMLESS.has(n.kind)) && !scenarioTooLong &&
        !FAILING_SCENARIOS.has(normalized ?? '') && Object.keys(extra).length === 0;
      const label = `${op.operationId} ${kind} breakers=${JSON.stringify(bs.map((b) => b.kind))} noise=${JSON.stringify(noise.map((n) => n.kind))}`;
      const req: RawRequest = { method: op.method, path, headers, ...(body !== undefined ? { body } : {}) };
      return {
        req,
        sent: { kind, scenario },
        mustReject: bs.length > 0 || scenarioTooLong,
        mustSucceed,
        label,
        // fast-check prints a counterexample with this: short, and without the key.
        [fc.toStringMethod]: () => `${label}: ${describeRequest(req)}`,
      };
    });
}

