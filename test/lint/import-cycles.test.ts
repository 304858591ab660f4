// No import circle between the files of src/, type-only imports included: import-x/no-cycle skips
// `import type`, so this builds the graph itself with the TypeScript compiler's own scanner and
// resolver, and names each circle as a chain of files.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '../..');

type Graph = Map<string, string[]>;

/** Every .ts file under `dir` → the files under `dir` it imports (import, import type, export … from, import()). */
function importGraph(dir: string): Graph {
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
  };
  const files = readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => path.join(dir, f));
  const graph: Graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = new Set<string>();
    for (const { fileName } of importedFiles) {
      const resolved = ts.resolveModuleName(fileName, file, options, ts.sys).resolvedModule?.resolvedFileName;
      if (resolved && !path.relative(dir, resolved).startsWith('..') && !resolved.includes('node_modules')) {
        targets.add(path.resolve(resolved));
      }
    }
    graph.set(path.resolve(file), [...targets].sort());
  }
  return graph;
}

/** The shortest import path from `from` to `to` (both included), or undefined. */
function shortestPath(graph: Graph, from: string, to: string): string[] | undefined {
  const previous = new Map<string, string>([[from, from]]);
  const queue = [from];
  while (queue.length > 0) {
    const node = queue.shift()!;
    if (node === to) {
      const chain = [to];
      while (chain[0] !== from) chain.unshift(previous.get(chain[0]!)!);
      return chain;
    }
    for (const next of graph.get(node) ?? []) {
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return undefined;
}

/**
 * Every import that lies on a circle, each named by the shortest circle through it, as
 * `a.ts → b.ts → a.ts` relative to `base`; a circle found through several of its imports is named once.
 */
function importCycles(graph: Graph, base: string): string[] {
  const cycles = new Map<string, string>();
  for (const [file, targets] of graph) {
    for (const target of targets) {
      const back = shortestPath(graph, target, file);
      if (!back) continue;
      const ring = [file, ...back.slice(0, -1)].map((f) => path.relative(base, f));
      // The same circle entered at another file: rotate it to start at its smallest name.
      const start = ring.indexOf([...ring].sort()[0]!);
      const rotated = [...ring.slice(start), ...ring.slice(0, start)];
      cycles.set(rotated.join(' '), [...rotated, rotated[0]].join(' → '));
    }
  }
  return [...cycles.values()].sort();
}

describe('import cycles', () => {
  test('no file of src/ reaches itself through its imports (type imports included)', () => {
    const cycles = importCycles(importGraph(path.join(root, 'src')), root);
    if (cycles.length > 0) assert.fail(`import circles (each import on one, by the shortest circle through it):\n${cycles.join('\n')}`);
  });

  test('a circle made only of type imports and type re-exports is found and named', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'import-cycles-'));
    try {
      mkdirSync(path.join(dir, 'http'));
      writeFileSync(path.join(dir, 'routes.ts'), "import type { Resource } from './resource.ts';\nexport type Register = () => void;\nexport type All = Resource[];\n");
      writeFileSync(path.join(dir, 'resource.ts'), "import type { Register } from './http/types.ts';\nexport type Resource = { register: Register };\n");
      writeFileSync(path.join(dir, 'http/types.ts'), "export type { Register } from '../routes.ts';\n");
      writeFileSync(path.join(dir, 'leaf.ts'), "import type { Register } from './http/types.ts';\nexport type Leaf = Register;\n");
      assert.deepEqual(importCycles(importGraph(dir), dir), [
        `${path.join('http', 'types.ts')} → routes.ts → resource.ts → ${path.join('http', 'types.ts')}`,
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
