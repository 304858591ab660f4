/**
 * Issue 32 row 5, as a property: random strings (any UTF-16 code units, lone surrogates, NUL,
 * astral and combining characters, long runs past the body bound) in one or more fields of every
 * POST body openapi.yaml describes (fields read from the contract, so a new field is covered as
 * soon as it is written there), with a live and a sandbox key. Never a 5xx, always the envelope;
 * text with a lone surrogate or NUL in a body within bounds is `400 invalid_parameter`, rule
 * `characters`, and writes nothing. Replay a failure with FUZZ_SEED=<seed printed>.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { loadContract, resolveRef } from '../../src/http/contract.ts';
import { BODY_BOUNDS } from '../../src/http/json-body.ts';
import { HOSTILE_STRINGS, OPERATIONS, type Val } from './arbitraries.ts';
import { assertApiAnswer, assertUnchanged, describeRequest, fcParams, startFuzzWorld, type FuzzWorld, type KeyKind } from './harness.ts';

const RUNS_PER_OPERATION = Number(process.env.FUZZ_BODY_STRING_RUNS ?? 25);

type Json = Record<string, unknown>;

/** A POST operation of openapi.yaml with a JSON body: its fields, which of them are arrays of strings, and its first example. */
interface PostBody {
  operationId: string;
  template: string;
  fields: Array<{ name: string; array: boolean }>;
  example: Json;
}

function postBodies(): PostBody[] {
  const contract = loadContract();
  const document = contract.document;
  const paths = document.paths as Record<string, Record<string, Json>>;
  return contract.operations
    .filter((op) => op.method === 'POST')
    .map((op) => {
      const media = (resolveRef(paths[op.pathTemplate]!.post!.requestBody, document).content as Record<string, Json> | undefined)?.['application/json'];
      const schema = resolveRef(media?.schema, document);
      const fields = Object.entries((schema.properties ?? {}) as Record<string, unknown>).map(([name, raw]) => {
        const property = resolveRef(raw, document);
        return { name, array: property.type === 'array' || (Array.isArray(property.type) && property.type.includes('array')) };
      });
      const first = Object.values((media?.examples ?? {}) as Record<string, unknown>)[0];
      const example = (resolveRef(first, document).value ?? {}) as Json;
      return { operationId: op.operationId, template: op.pathTemplate, fields, example };
    })
    .filter((body) => body.fields.length > 0);
}

const BODIES = postBodies();

/** Any UTF-16 code unit (lone surrogates included), NUL, astral and combining text, the hostile list, runs up to past the body bound. */
const anyString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 40 }), weight: 4 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }), weight: 1 },
  { arbitrary: fc.constantFrom(...HOSTILE_STRINGS, '\ud800', '\udc00', '\udbff\udbff', '\udfff\ud800', 'a\u0000\ud800', '\u0000'), weight: 3 },
  {
    arbitrary: fc
      .tuple(fc.constantFrom('é', '😀', '\u0301', 'ｗ', '\u{10fffd}', '\ud800', 'a'), fc.integer({ min: 100, max: 40_000 }))
      .map(([c, n]) => c.repeat(Math.ceil(n / c.length))),
    weight: 1,
  },
);

/** Text no field may hold: NUL or a lone surrogate. */
const holdsBadText = (s: string): boolean => s.includes('\u0000') || /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

/** Valid values of the fuzz specs (so that a base body reaches the operation: webhook URLs need no DNS look-up). */
function validValue(operationId: string, field: string): fc.Arbitrary<Val> | undefined {
  return OPERATIONS.find((o) => o.operationId === operationId)?.body?.find((f) => f.name === field)?.valid;
}

function bodyFor(body: PostBody): fc.Arbitrary<{ body: Json; strings: string[] }> {
  const base = fc.record(
    Object.fromEntries(body.fields.map((f) => [f.name, fc.option(validValue(body.operationId, f.name) ?? fc.constant(body.example[f.name] as Val), { nil: undefined })])),
  );
  const targets = fc.subarray(body.fields, { minLength: 1 });
  return fc
    .tuple(base, targets, fc.array(anyString, { minLength: 1, maxLength: 3 }))
    .map(([drawn, chosen, strings]) => {
      const out: Json = { ...body.example };
      for (const [name, value] of Object.entries(drawn)) if (value !== undefined) out[name] = value;
      const sent: string[] = [];
      chosen.forEach((f, i) => {
        const s = strings[i % strings.length]!;
        sent.push(s);
        // An array of strings gets the string among valid items (or alone).
        out[f.name] = f.array ? [...(Array.isArray(out[f.name]) ? (out[f.name] as unknown[]).slice(0, 2) : []), s] : s;
      });
      return { body: out, strings: sent };
    });
}

let w: FuzzWorld;
before(async () => {
  w = await startFuzzWorld();
});
after(async () => {
  await w?.close();
});

function pathOf(template: string, kind: KeyKind, pick: number): string {
  return template
    .replace('{service_number}', String(w.serviceNumbers[pick % w.serviceNumbers.length]))
    .replace('{request_id}', w.requestIds[pick % w.requestIds.length]!)
    .replace('{endpoint_id}', w.endpointIds[kind][pick % w.endpointIds[kind].length]!)
    .replace('{event_id}', w.eventIds[kind][pick % w.eventIds[kind].length]!);
}

describe('fuzz: random strings in every field of every POST body, live and sandbox keys', () => {
  it('covers every POST body of openapi.yaml with fields', () => {
    assert.ok(BODIES.length >= 10, `POST bodies found: ${BODIES.map((b) => b.operationId).join(', ')}`);
    assert.ok(BODIES.some((b) => b.fields.some((f) => f.name === 'customer_name')) && BODIES.some((b) => b.fields.some((f) => f.array)));
  });

  for (const body of BODIES) {
    it(`${body.operationId}: ${body.fields.map((f) => f.name).join(', ')}`, async () => {
      const arb = fc.record({ kind: fc.constantFrom<KeyKind>('live', 'sandbox'), pick: fc.nat(20), sent: bodyFor(body) });
      await fc.assert(
        fc.asyncProperty(arb, async ({ kind, pick, sent }) => {
          // JSON.stringify writes a lone surrogate as a `\u` escape, as a client's JSON encoder does.
          const text = JSON.stringify(sent.body);
          const req = { method: 'POST', path: pathOf(body.template, kind, pick), headers: { Authorization: `Bearer ${w.keys[kind]}`, 'Content-Type': 'application/json' }, body: text };
          const what = `${body.operationId} ${kind}: ${describeRequest(req)}`;
          const bad = sent.strings.some(holdsBadText) && Buffer.byteLength(text) <= BODY_BOUNDS.bytes;
          const before = bad ? await w.snapshot() : undefined;
          const res = await w.send(req);
          assertApiAnswer(res, { kind }, what);
          if (before) {
            const error = (res.json as { error?: { code?: string; details?: { rule?: string } } }).error;
            assert.equal(res.status, 400, `${what} → ${res.status} ${res.text.slice(0, 300)}`);
            assert.equal(error?.code, 'invalid_parameter', what);
            assert.equal(error?.details?.rule, 'characters', what);
            assertUnchanged(before, await w.snapshot(), what);
          }
        }),
        fcParams(RUNS_PER_OPERATION),
      );
    });
  }
});
