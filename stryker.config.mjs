// `npm run mutate:events` (issue 46, bench/README.md "Mutation: every write's event"): StrykerJS
// mutates the write module (src/events/writes.ts) and every event its changes return (the `events`
// of each writeWithEvents change, found with the TypeScript compiler), and test/events/every-write.ts
// must kill each mutant: every change once, then a mirror built from the feed alone must equal the
// records, so an event removed or changed leaves it unlike one. Its runner (scripts/mutate-events-runner.mjs)
// keeps the modules loaded in each worker and runs it per mutant on a PostgreSQL database copied
// from the migrated template (test/helpers/db.ts; MUTATE_DATABASE_URL, default the machine's server).
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** `file:line:col-line:col` of every `events` property a writeWithEvents change returns, in src/. */
function eventRanges() {
  const ranges = [];
  const files = readdirSync('src', { recursive: true }).map(String).filter((f) => f.endsWith('.ts')).map((f) => path.join('src', f));
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    if (!/writeWithEvents|endpointChange\(/.test(text) || file.endsWith(path.join('events', 'writes.ts'))) continue;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (ts.isPropertyAssignment(node) && node.name.getText(source) === 'events' && ts.isObjectLiteralExpression(node.parent) && node.parent.properties.some((p) => p.name?.getText(source) === 'value')) {
        const start = source.getLineAndCharacterOfPosition(node.initializer.getStart(source));
        const end = source.getLineAndCharacterOfPosition(node.initializer.getEnd());
        ranges.push(`${file}:${start.line + 1}:${start.character}-${end.line + 1}:${end.character}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return ranges;
}

export default {
  mutate: ['src/events/writes.ts', ...eventRanges()],
  appendPlugins: ['./scripts/mutate-events-runner.mjs'],
  testRunner: 'every-write',
  // Types are not checked per mutant (tsx strips them); the test is the judge.
  disableTypeChecks: 'src/**/*.ts',
  // The dry run's coverage tells Stryker no mutant runs at import, so a worker needs no restart between mutants.
  coverageAnalysis: 'perTest',
  concurrency: 2,
  // A mutant's run may take this much longer than the run without one before it counts as hung (killed).
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress'],
  thresholds: { high: 100, low: 100, break: 100 },
  tempDirName: 'var/stryker-tmp',
  cleanTempDir: 'always',
  ignorePatterns: ['var', 'dist', 'docs', 'coverage', 'clients/*/dist', 'console', 'bench', '.git'],
};
