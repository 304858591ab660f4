// Input the JSON Schema validator lets through but the service must refuse as 400, one row each.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { isCalendarDate, isDateTime } from '../../src/shared/dates.ts';
import { apiKey } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
let key: string;
before(async () => {
  t = await createTestApp({}, { workers: false });
  key = (await apiKey(t.prisma, { scopes: ['admin:full'] })).key;
});
after(async () => t.close());

const get = (path: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

describe('numbers, booleans and dates in paths and queries', () => {
  const rows: Array<[path: string, field: string, rule: string, why: string]> = [
    ['/api/v1/services?limit=1e1', 'limit', 'type', 'exponent notation'],
    ['/api/v1/services?offset=1e309', 'offset', 'type', 'overflows to Infinity'],
    ['/api/v1/services?offset=Infinity', 'offset', 'type', 'Infinity'],
    ['/api/v1/services?offset=0x10', 'offset', 'type', 'hexadecimal'],
    ['/api/v1/services?offset=99999999999999999999', 'offset', 'maximum', 'beyond a safe integer'],
    ['/api/v1/services?limit=007', 'limit', 'type', 'a leading zero'],
    ['/api/v1/services?limit=%2B5', 'limit', 'type', 'a plus sign'],
    ['/api/v1/services/Infinity', 'service_number', 'type', 'Infinity in the path'],
    ['/api/v1/services/1e3', 'service_number', 'type', 'exponent in the path'],
    ['/api/v1/services/007', 'service_number', 'type', 'a leading zero in the path'],
    ['/api/v1/services/0', 'service_number', 'minimum', 'below the minimum'],
    ['/api/v1/services/-5', 'service_number', 'minimum', 'negative'],
    ['/api/v1/services/9007199254740992', 'service_number', 'maximum', 'above the largest exact integer'],
    ['/api/v1/services/99999999999999999999', 'service_number', 'maximum', 'far above it'],
    ['/api/v1/services/-99999999999999999999', 'service_number', 'minimum', 'far below a safe integer'],
    ['/api/v1/services/-0', 'service_number', 'type', 'negative zero in the path'],
    ['/api/v1/services?offset=-0', 'offset', 'type', 'negative zero'],
    ['/api/v1/services?limit=101', 'limit', 'maximum', 'above the maximum'],
    ['/api/v1/services?limit=0', 'limit', 'minimum', 'below the minimum'],
    ['/api/v1/services?limit=1&limit=2', 'limit', 'type', 'given twice'],
    ['/api/v1/services?include_credentials=yes', 'include_credentials', 'type', 'not true/false'],
    ['/api/v1/services?include_credentials=1', 'include_credentials', 'type', 'a number for a boolean'],
    ['/api/v1/services?modified_since=0000-01-01', 'modified_since', 'format', 'year 0000'],
    ['/api/v1/services?modified_since=2026-02-30', 'modified_since', 'format', 'not a calendar date'],
    ['/api/v1/requests?date=0000-01-01', 'date', 'format', 'year 0000'],
    ['/api/v1/services?search=a%00b', 'search', 'characters', 'a NUL character'],
    ['/api/v1/services?colour=blue', 'colour', 'additionalProperties', 'an unknown query parameter'],
  ];
  for (const [path, field, rule, why] of rows) {
    it(`${path} (${why}) → 400 invalid_parameter naming ${field}, rule ${rule}`, async () => {
      const res = await get(path);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'invalid_parameter');
      assert.equal(res.body.error.details.field, field);
      assert.equal(res.body.error.details.rule, rule, JSON.stringify(res.body.error));
    });
  }

  it('a number past the largest exact integer names the bound it broke', async () => {
    const res = await get('/api/v1/services/9007199254740992');
    assert.equal(res.body.error.details.reason, 'must be <= 9007199254740991');
    assert.equal((await get('/api/v1/services?offset=99999999999999999999')).body.error.details.rule, 'maximum');
  });

  it('a NUL character inside a body text → 400 invalid_parameter naming the field', async () => {
    const res = await request(t.app)
      .post('/api/v1/services/123456789/cancel')
      .set('Authorization', `Bearer ${key}`)
      .send({ reason: 'x\u0000y' });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'invalid_parameter');
    assert.equal(res.body.error.details.field, 'reason');
  });

  it('plain values still pass (limit=10&offset=0&include_credentials=false&modified_since=2026-01-01T10:00:00Z)', async () => {
    const res = await get('/api/v1/services?limit=10&offset=0&include_credentials=false&modified_since=2026-01-01T10:00:00Z');
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });
});

describe('contract formats', () => {
  for (const [text, ok] of [['2024-02-29', true], ['2023-02-29', false], ['0001-01-01', true], ['0000-12-31', false], ['2026-13-01', false], ['2026-1-01', false]] as const) {
    it(`date ${text} → ${ok}`, () => assert.equal(isCalendarDate(text), ok));
  }
  for (const [text, ok] of [
    ['2026-11-22T10:00:00Z', true],
    ['2026-11-22T10:00:00.123+02:00', true],
    ['2026-11-22T24:00:00Z', false],
    ['2026-11-22T10:00:00', false],
    ['0001-01-01T00:00:00+05:00', false],
  ] as const) {
    it(`date-time ${text} → ${ok}`, () => assert.equal(isDateTime(text), ok));
  }
});
