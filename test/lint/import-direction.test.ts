// The import direction of src/ (docs/architecture.md, "Where things live"), checked by eslint.config.js: each
// row lints one import as if it were written in that file, and says whether the rule lets it in.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ESLint } from 'eslint';

const eslint = new ESLint({ cwd: path.resolve(import.meta.dirname, '../..') });

async function directionErrors(file: string, importPath: string): Promise<string[]> {
  const code = `import * as imported from '${importPath}';\nexport const used = imported;\n`;
  const [result] = await eslint.lintText(code, { filePath: path.resolve(import.meta.dirname, '../..', file) });
  return result!.messages.filter((m) => m.ruleId === 'import-x/no-restricted-paths').map((m) => m.message);
}

const rows: Array<[file: string, imports: string, allowed: boolean]> = [
  ['src/requests/use-cases.ts', '../services/store.ts', true],
  ['src/services/use-cases.ts', '../requests/store.ts', false],
  ['src/services/adapter.ts', '../reports/runs/limits.ts', false],
  ['src/reports/delivery/pipeline.ts', '../../jobs/index.ts', true],
  ['src/jobs/queues.ts', '../reports/delivery/pipeline.ts', false],
  ['src/jobs/queues.ts', '../ops/metrics.ts', false],
  ['src/http/operation.ts', '../services/store.ts', false],
  ['src/http/operation.ts', '../auth/keys.ts', false],
  ['src/auth/gate.ts', '../http/errors.ts', true],
  ['src/services/adapter.ts', '../http/errors.ts', true],
  ['src/services/store.ts', '../http/errors.ts', false],
  ['src/requests/use-cases.ts', '../http/errors.ts', false],
  ['src/reports/runs/present.ts', '../../http/operation.ts', false],
  ['src/shared/dates.ts', '../http/errors.ts', false],
  ['src/db/client.ts', '../services/store.ts', false],
  ['src/cli/keys.ts', '../http/errors.ts', false],
  ['src/cli/imports.ts', '../events/store.ts', true],
  // The demo writes the example endpoint with its event through the endpoints' store, as the API does.
  ['src/cli/demo-examples.ts', '../webhooks/endpoint-store.ts', true],
  ['src/cli/imports.ts', '../http/operation.ts', false],
  ['src/cli/console.ts', '../console/adapter.ts', false],
  ['src/cli/console.ts', '../console/index.ts', true],
  ['src/main/runtime.ts', '../services/store.ts', true],
  ['src/services/store.ts', '../events/store.ts', true],
  ['src/reports/runs/store.ts', '../../events/store.ts', true],
  ['src/events/store.ts', '../services/present.ts', false],
  ['src/events/store.ts', '../reports/runs/present.ts', false],
  ['src/auth/gate.ts', '../events/store.ts', false],
  ['src/requests/sandbox.ts', '../events/simulated.ts', true],
  ['src/events/simulated.ts', '../services/sandbox.ts', false],
  ['src/webhooks/sign.ts', '../shared/random.ts', true],
  ['src/webhooks/endpoint-store.ts', '../events/store.ts', true],
  ['src/webhooks/endpoint-adapter.ts', '../http/operation.ts', true],
  ['src/webhooks/endpoint-adapter.ts', '../config.ts', true],
  ['src/webhooks/endpoint-store.ts', '../db/client.ts', true],
  ['src/webhooks/endpoint-store.ts', '../http/errors.ts', false],
  ['src/webhooks/endpoint-use-cases.ts', '../services/present.ts', false],
  ['src/webhooks/endpoint-adapter.ts', '../reports/runs/present.ts', false],
  ['src/events/adapter.ts', '../webhooks/endpoint-store.ts', false],
  ['src/events/reads.ts', '../http/errors.ts', false],
  ['src/events/adapter.ts', '../http/operation.ts', true],
  ['src/services/store.ts', '../webhooks/endpoint-store.ts', false],
  ['src/webhooks/dispatcher.ts', '../config.ts', true],
  ['src/webhooks/dispatcher.ts', '../jobs/index.ts', true],
  ['src/webhooks/delivery-store.ts', '../events/store.ts', true],
  ['src/webhooks/dispatcher.ts', '../reports/delivery/pipeline.ts', false],
  ['src/webhooks/dispatcher.ts', '../services/store.ts', false],
  ['src/webhooks/sign.ts', '../redis.ts', false],
  ['src/jobs/queues.ts', '../webhooks/dispatcher.ts', false],
  ['src/events/store.ts', '../webhooks/dispatcher.ts', false],
  // src/request-logs reads what the gate writes, but is handed the flush: it imports no resource.
  ['src/request-logs/adapter.ts', '../http/operation.ts', true],
  ['src/request-logs/use-cases.ts', '../auth/api-log.ts', false],
  ['src/request-logs/store.ts', '../http/errors.ts', false],
  ['src/request-logs/adapter.ts', '../deps.ts', false],
  ['src/auth/gate.ts', '../request-logs/store.ts', false],
  ['src/background.ts', './request-logs/store.ts', true],
  // The resources, src/ops and the basics below the composition: a resource names the parts it takes.
  ['src/services/adapter.ts', '../deps.ts', false],
  ['src/auth/adapter.ts', '../routes.ts', false],
  ['src/reports/delivery/downloads.ts', '../../deps.ts', false],
  ['src/ops/health.ts', '../deps.ts', false],
  ['src/services/adapter.ts', '../http/resource.ts', true],
  ['src/routes.ts', './deps.ts', true],
  ['src/main/runtime.ts', '../deps.ts', true],
  ['src/config.ts', './webhooks/schedule.ts', false],
  ['src/logger.ts', './app.ts', false],
  ['src/config.ts', './shared/text.ts', true],
  ['src/webhooks/schedule.ts', '../config.ts', true],
];

describe('import direction (eslint-plugin-import-x no-restricted-paths)', () => {
  for (const [file, imports, allowed] of rows) {
    test(`${file} imports ${imports}: ${allowed ? 'allowed' : 'refused'}`, async () => {
      const errors = await directionErrors(file, imports);
      assert.equal(errors.length === 0, allowed, errors.join('\n') || 'no error');
    });
  }
});
