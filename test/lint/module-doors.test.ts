// One door per module (eslint.config.js, `moduleDoors`): outside src/reports, src/ imports the
// module only through src/reports/index.ts; inside, its files import each other freely.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ESLint } from 'eslint';

const ROOT = path.resolve(import.meta.dirname, '../..');
const eslint = new ESLint({ cwd: ROOT });

async function restrictedPathErrors(file: string, importPath: string): Promise<string[]> {
  const code = `import * as imported from '${importPath}';\nexport const used = imported;\n`;
  const [result] = await eslint.lintText(code, { filePath: path.resolve(ROOT, file) });
  return result!.messages.filter((m) => m.ruleId === 'import-x/no-restricted-paths').map((m) => m.message);
}

const rows: Array<[file: string, imports: string, allowed: boolean]> = [
  ['src/app.ts', './reports/index.ts', true],
  ['src/main/runtime.ts', '../reports/index.ts', true],
  ['src/cli/demo-examples.ts', '../reports/index.ts', true],
  ['src/app.ts', './reports/delivery/downloads.ts', false],
  ['src/routes.ts', './reports/adapter.ts', false],
  ['src/background.ts', './reports/jobs.ts', false],
  ['src/deps.ts', './reports/workbook/store.ts', false],
  ['src/main/runtime.ts', '../reports/workbook/gc.ts', false],
  ['src/cli/demo-examples.ts', '../reports/types.ts', false],
  ['src/cli/demo-examples.ts', '../reports/kinds/registry.ts', false],
  ['src/reports/delivery/pipeline.ts', '../runs/store.ts', true],
  ['src/reports/use-cases.ts', './delivery/pipeline.ts', true],
];

describe('the reports module has one door (eslint-plugin-import-x no-restricted-paths)', () => {
  for (const [file, imports, allowed] of rows) {
    test(`${file} imports ${imports}: ${allowed ? 'allowed' : 'refused'}`, async () => {
      const errors = await restrictedPathErrors(file, imports);
      assert.equal(errors.length === 0, allowed, errors.join('\n') || 'no error');
      if (!allowed) assert.match(errors.join('\n'), /src\/reports\/index\.ts/);
    });
  }
});
