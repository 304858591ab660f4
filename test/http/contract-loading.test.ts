/**
 * The validator loads the contract in the background once created; `appLoaded` (src/app.ts, over
 * `Validator.loaded` in src/http/validation.ts) lets a server listen, and a test start, only after
 * it, so no first request waits for that load or stalls the others meanwhile.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import express from 'express';
import { loadContract } from '../../src/http/contract.ts';
import { createValidator } from '../../src/http/validation.ts';

const contract = loadContract();

/** The path parameters the validator registers on an app once it has loaded the contract. */
const registeredParams = (app: express.Express): string[] => Object.keys((app.router as unknown as { params: Record<string, unknown> }).params);

test('loaded settles once the contract is loaded: its path parameters are on the app before any request', async () => {
  const app = express();
  const validator = createValidator(contract, true);
  assert.deepEqual(registeredParams(app), [], 'nothing before the load');
  await validator.loaded(app);
  assert.ok(registeredParams(app).includes('service_number'), `registered: ${registeredParams(app).join(', ')}`);
});

test('loaded rejects with the loading error when the contract cannot be loaded', async () => {
  const broken = { ...contract, document: { ...contract.document, paths: { '/api/v1/x': { get: { responses: { 200: { $ref: '#/components/responses/Nowhere' } } } } } } };
  const validator = createValidator(broken, false);
  await assert.rejects(validator.loaded(express()));
});
