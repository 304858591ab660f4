// The breaking-change check of `npm run contract:check` (scripts/contract-check.mjs): a deliberately
// breaking edit of openapi.yaml fails it unless info.version's major is raised; additive edits,
// like those other work adds to the contract, pass.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
// @ts-expect-error: a plain ESM script without type declarations
import { checkContract, lastReleased } from '../../scripts/contract-check.mjs';

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Check = (current: string, released: string) => { ok: boolean; breaking: unknown[] };
const check = checkContract as Check;

const released = readFileSync(lastReleased() as string, 'utf8');
const current = readFileSync('openapi.yaml', 'utf8');

function edited(change: (doc: Doc) => void): string {
  const doc = parse(current) as Doc;
  change(doc);
  return stringify(doc);
}
const raiseMajor = (doc: Doc) => {
  doc.info.version = `${Number(String(doc.info.version).split('.')[0]) + 1}.0.0`;
};
const removeCancelledAt = (doc: Doc) => {
  const service = doc.components.schemas.Service;
  delete service.properties.cancelled_at;
  service.required = service.required.filter((f: string) => f !== 'cancelled_at');
};
const requireCustomerName = (doc: Doc) => {
  doc.components.schemas.ServiceCreateBody.required.push('customer_name');
};

describe('contract:check', () => {
  it('openapi.yaml as committed keeps the released contract', () => {
    assert.equal(check(current, released).ok, true);
  });

  it('fails when a response field is removed', () => {
    const result = check(edited(removeCancelledAt), released);
    assert.equal(result.ok, false);
    assert.ok(result.breaking.length > 0);
  });

  it('fails when an optional request field becomes required', () => {
    assert.equal(check(edited(requireCustomerName), released).ok, false);
  });

  it('passes a breaking edit when info.version\'s major is raised', () => {
    const result = check(edited((doc) => { removeCancelledAt(doc); raiseMajor(doc); }), released);
    assert.equal(result.ok, true);
    assert.ok(result.breaking.length > 0, 'the break is still reported');
  });

  // Issue 24: X-Test-Scenario went from `anyOf: [string enum, string]` to one `type: string` (the
  // same values accepted; Redoc showed the anyOf as "Any of: string / string (2)").
  it('an anyOf with a branch that takes every string is that string: no break; narrowing it is one', () => {
    const scenario = (doc: Doc) => doc.components.parameters.TestScenario.schema;
    assert.deepEqual(scenario(parse(current) as Doc).type, 'string');
    assert.equal(scenario(parse(current) as Doc).anyOf, undefined);
    assert.equal(check(current, released).ok, true);
    const narrowed = edited((doc) => {
      scenario(doc).maxLength = 64;
    });
    assert.equal(check(narrowed, released).ok, false);
  });

  // Issue 33: an event's object was any JSON object and is now one of the resource schemas,
  // discriminated by `object`; in an answer that promises less, so it is no break. In a request it is.
  it('an answer\'s free-form object made a oneOf of objects is no break; a request body\'s is one', () => {
    const freeForm = { type: 'object', description: 'Anything.', additionalProperties: true };
    const releasedFreeForm = edited((doc) => {
      doc.components.schemas.EventObject = freeForm;
      doc.components.schemas.RedeliverBody.properties.note = freeForm;
    });
    assert.ok((parse(current) as Doc).components.schemas.EventObject.oneOf, 'EventObject is a oneOf');
    const narrowedBoth = edited((doc) => {
      doc.components.schemas.RedeliverBody.properties.note = { oneOf: [{ $ref: '#/components/schemas/PingObject' }] };
    });
    const result = check(narrowedBoth, releasedFreeForm);
    assert.equal(result.ok, false, 'the request body\'s narrowing breaks');
    assert.ok(result.breaking.every((d) => (d as { path: string[] }).path.includes('requestBody')), JSON.stringify(result.breaking).slice(0, 2000));
  });

  // Event types are added in minor versions (issue 39 added webhook_endpoint.*): EventType and
  // EventObject are marked `x-extensible`, and a value or a branch added to them in an answer is no break.
  it('an event type or event object kind added to an answer is no break; to an unmarked enum it is one', () => {
    const spec = parse(current) as Doc;
    assert.equal(spec.components.schemas.EventType['x-extensible'], true);
    assert.equal(spec.components.schemas.EventObject['x-extensible'], true);
    const newType = edited((doc) => doc.components.schemas.EventType.enum.push('invoice.created'));
    assert.deepEqual(check(newType, current).breaking, []);
    const unmarked = edited((doc) => {
      delete doc.components.schemas.EventType['x-extensible'];
      doc.components.schemas.EventType.enum.push('invoice.created');
    });
    assert.equal(check(unmarked, current).ok, false);
  });

  it('passes additive edits: a response field, an optional header, a new operation, a new error code', () => {
    const additive = edited((doc) => {
      doc.components.schemas.Service.properties.report_id = { type: 'string', description: 'New.' };
      doc.paths['/api/v1/service-create'].post.parameters.push({
        name: 'Idempotency-Key', in: 'header', required: false, description: 'New.', schema: { type: 'string' },
      });
      doc.paths['/api/v1/things/{thing_id}'] = {
        get: {
          operationId: 'getThing', summary: 'New.', description: 'New.',
          parameters: [{ name: 'thing_id', in: 'path', required: true, description: 'New.', schema: { type: 'string' } }],
          responses: { '200': { description: 'New.' } },
        },
      };
      doc.components.schemas.ListServicesError400.properties.error.properties.code.enum.push('idempotency_conflict');
      doc.components.schemas.CreateServiceError400.properties.error.oneOf.push({
        type: 'object', description: 'New.', required: ['code', 'message'],
        properties: { code: { type: 'string', const: 'idempotency_conflict' }, message: { type: 'string' } },
      });
    });
    const result = check(additive, released);
    assert.deepEqual(result.breaking, []);
    assert.equal(result.ok, true);
  });
});
