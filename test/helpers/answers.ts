import assert from 'node:assert/strict';
import type request from 'supertest';

/** An error answer in the envelope (openapi.yaml, "Errors") with this status and code; returns its details. */
export function assertError(res: request.Response, status: number, code: string): Record<string, unknown> {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.success, false);
  assert.equal(res.body.error.code, code, JSON.stringify(res.body));
  assert.equal(typeof res.body.error.message, 'string');
  assert.ok(res.headers['x-request-id']);
  return (res.body.error.details ?? {}) as Record<string, unknown>;
}
