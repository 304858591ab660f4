// Fuzz properties of auth-check, requests and reports (see operations.ts for what every request
// must satisfy), and the check that the fuzz files cover every operation of openapi.yaml.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { loadContract } from '../../src/http/contract.ts';
import { OPERATIONS } from './arbitraries.ts';
import { fuzzOperations, SERVICE_OPERATIONS, WEBHOOK_OPERATIONS } from './operations.ts';

const OTHER_OPERATIONS = [
  'getAuthCheck',
  'postAuthCheck',
  'createConsoleSession',
  'listRequests',
  'manageRequest',
  'sendServicesReport',
  'sendInvoicesReport',
  'getReport',
  'listReports',
  'listRequestLogs',
  'getRequestLog',
  'getRequestStats',
];

// downloadReport (outside /api, no key) has a property of its own: downloads.test.ts.
const OWN_FILE = ['downloadReport GET /downloads/reports/{token}'];

it('the fuzz operations are exactly the operations of openapi.yaml, with their methods and paths', () => {
  const contract = loadContract()
    .operations.map((o) => `${o.operationId} ${o.method} ${o.pathTemplate}`)
    .filter((o) => !OWN_FILE.includes(o))
    .sort();
  assert.equal(loadContract().operations.length, contract.length + OWN_FILE.length);
  assert.deepEqual(OPERATIONS.map((o) => `${o.operationId} ${o.method} ${o.template}`).sort(), contract);
  assert.deepEqual([...SERVICE_OPERATIONS, ...OTHER_OPERATIONS, ...WEBHOOK_OPERATIONS].sort(), OPERATIONS.map((o) => o.operationId).sort());
});

fuzzOperations('fuzz: auth-check, request and report operations, live and sandbox keys', OTHER_OPERATIONS);
