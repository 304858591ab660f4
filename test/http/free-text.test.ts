/**
 * Free text that reaches an e-mail, a workbook or another system refuses control characters
 * (`400 invalid_parameter`), and a reason that shows nothing once white space and invisible
 * characters are taken out is missing (`400 missing_parameter`). One case per field and form.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { apiKey } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { isBlank } from '../../src/shared/text.ts';

let t: TestApp;
let key: string;
let brokerId: string;

before(async () => {
  t = await createTestApp({}, { workers: false });
  const k = await apiKey(t.prisma, { scopes: ['admin:full'], rateLimit: 10_000 });
  key = k.key;
  brokerId = k.brokerId;
});
after(async () => t.close());

const post = (path: string, body: object) => request(t.app).post(path).set('Authorization', `Bearer ${key}`).send(body);

const CONTROLS = ['\r\n', '\n', '\r', '\t', '\u0007', '\u001b', '\u007f', '\u0085', '\u009b'];
/** Issue 21 row 9: bidirectional controls and the line and paragraph separators. */
const BIDI_AND_SEPARATORS = ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u200e', '\u200f', '\u061c', '\u2028', '\u2029'];

describe('control characters are refused (invalid_parameter), nothing changes', () => {
  test('password: "Aa1!\\r\\nBcc: x@y" and every other control character', async () => {
    const s = await service(t, { brokerId });
    const before = await t.prisma.service.findUniqueOrThrow({ where: { id: s.id } });
    for (const control of [...CONTROLS, ...BIDI_AND_SEPARATORS]) {
      const res = await post(`/api/v1/services/${s.serviceNumber}/password`, { password: `Aa1!${control}Bcc: x@y.example${control}Subject: hi` });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'invalid_parameter');
      assert.equal(res.body.error.details.field, 'password');
      assert.match(res.body.error.details.reason, /control characters/);
    }
    const after = await t.prisma.service.findUniqueOrThrow({ where: { id: s.id } });
    assert.equal(after.passwordEnc, before.passwordEnc);
  });

  const cases: Array<[string, (control: string) => Promise<request.Response>, string]> = [
    ['service-create customer_name', (c) => post('/api/v1/service-create', { plan: 'Basic VPS', hostname: 'web01.example.com', customer_email: 'a@b.example', customer_name: `Client${c}Ltd` }), 'customer_name'],
    ['cancel reason', async (c) => post(`/api/v1/services/${(await service(t, { brokerId })).serviceNumber}/cancel`, { reason: `moving${c}away` }), 'reason'],
    ['manage denial_reason', (c) => post('/api/v1/requests/REQ-000001/manage', { action: 'deny', denial_reason: `no${c}way` }), 'denial_reason'],
  ];
  for (const [name, call, field] of cases) {
    test(name, async () => {
      const services = await t.prisma.service.count();
      const requests = await t.prisma.serviceRequest.count();
      for (const control of ['\r\n', '\t', '\u0000'.replace('\u0000', '\u0001'), '\u009b', ...BIDI_AND_SEPARATORS]) {
        const res = await call(control);
        assert.equal(res.status, 400, `${JSON.stringify(control)}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error.code, 'invalid_parameter');
        assert.equal(res.body.error.details.field, field);
      }
      assert.equal(await t.prisma.serviceRequest.count(), requests, 'no request recorded');
      assert.ok((await t.prisma.service.count()) >= services);
    });
  }
});

describe('a reason made only of invisible characters is missing', () => {
  const INVISIBLE = [
    '\u200b\u200b', '\u200c', '\u2060', '\u00ad', '\u3164', '\ufeff', ' \u200b\t'.replace('\t', ' '), '\u115f\u1160', '\uffa0', '\u2800',
    // Issue 21 row 4: the six that passed (default-ignorable, object replacement), unassigned and
    // private-use code points. (A lone surrogate is no text at all: invalid_parameter, issue 32 row 5.)
    '\u034f\u034f\u034f', '\ufe0f', '\u17b4', '\u{e01ef}', '\ufffc', '\u0378', '\ue000', '\u{f0000}\u{10fffd}',
  ];
  test('isBlank, one row per character', () => {
    for (const text of [...INVISIBLE, '\ud800', '\udc00 \ud800']) assert.equal(isBlank(text), true, JSON.stringify(text));
    for (const text of ['a', 'é', '\u200bx', '-', 'e\u0301', '\u{1f600}', '\ufffd', '\u034fa']) assert.equal(isBlank(text), false, JSON.stringify(text));
  });

  test('cancel reason: 400 missing_parameter', async () => {
    const s = await service(t, { brokerId });
    for (const reason of INVISIBLE) {
      const res = await post(`/api/v1/services/${s.serviceNumber}/cancel`, { reason });
      assert.equal(res.status, 400, `${JSON.stringify(reason)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.code, 'missing_parameter');
      assert.deepEqual(res.body.error.details.missing, ['reason']);
    }
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: s.id } }), 0, 'no cancellation requested');
  });

  test('denial_reason: 400 missing_parameter', async () => {
    for (const denial_reason of INVISIBLE) {
      const res = await post('/api/v1/requests/REQ-000001/manage', { action: 'deny', denial_reason });
      assert.equal(res.status, 400, `${JSON.stringify(denial_reason)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.code, 'missing_parameter');
      assert.deepEqual(res.body.error.details.missing, ['denial_reason']);
    }
  });
});
