// `npm run mutate:events` (issue 46, bench/README.md "Mutation: every write's event"): StrykerJS
// mutates the write module (src/events/writes.ts) and every event its changes return (the `events`
// of each writeWithEvents change, found with the TypeScript compiler), and the mirror property test
// (test/events/mirror.test.ts) must kill each mutant: an event removed or changed leaves the feed's
// mirror unlike what the GETs answer. The command runner runs node's own test runner per mutant;
// MIRROR_RUNS=1 keeps each run to the every-write sequences and one random one per mode.
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
  testRunner: 'command',
  commandRunner: { command: 'NODE_ENV=test LOG_LEVEL=silent MIRROR_RUNS=1 node --import tsx --test --test-concurrency=1 --test-timeout=300000 test/events/mirror.test.ts' },
  // Types are not checked per mutant (tsx strips them); the mirror test is the judge.
  disableTypeChecks: 'src/**/*.ts',
  coverageAnalysis: 'off',
  concurrency: 1,
  timeoutMS: 240_000,
  reporters: ['clear-text', 'progress'],
  thresholds: { high: 100, low: 100, break: 100 },
  tempDirName: 'var/stryker-tmp',
  cleanTempDir: 'always',
  ignorePatterns: ['var', 'dist', 'docs', 'coverage', 'clients/*/dist', '.git'],
};
