// Comments say why in a sentence or two (issue 31): no comment block over 10 lines in src, and no
// measured figure in a comment, since figures go stale there; they live in bench/README.md.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';

const MAX_BLOCK_LINES = 10;
const UNIT = String.raw`(?:ns|µs|us|ms|s|min|h|B|KB|KiB|MB|MiB|GB|GiB|%|x|×)`;
const NUM = String.raw`\d[\d,]*(?:\.\d+)?`;
/** What a quoted measurement looks like; a default or a bound ("(default 10 s)") is none of these. */
const FIGURES: Array<[kind: string, re: RegExp]> = [
  ['an approximate number', new RegExp(String.raw`~\s?\d`)],
  ['a range with a unit', new RegExp(String.raw`\b${NUM}\s?(?:-|–|to)\s?${NUM}\s?${UNIT}(?![\w])`)],
  ['a size in MB or GB', new RegExp(String.raw`\b${NUM}\s?(?:MB|GB)\b`)],
  // A jitter of ±10 % is a setting.
  ['a percentage', new RegExp(String.raw`(?<!±\s?)\b${NUM}\s?%`)],
  ['"measured" with a number', /\bmeasured\b.*\d|\d.*\bmeasured\b/i],
];

interface Comment {
  /** 1-based lines. */
  start: number;
  end: number;
  text: string;
  /** A `//` comment alone on its line: consecutive ones make one block. */
  ownLine: boolean;
  kind: ts.SyntaxKind;
}

function commentsOf(fileName: string, text: string): Comment[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const seen = new Map<number, Comment>();
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const collect = (ranges: readonly ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) {
      if (seen.has(r.pos)) continue;
      const lineStart = text.lastIndexOf('\n', r.pos - 1) + 1;
      seen.set(r.pos, {
        start: lineOf(r.pos),
        end: lineOf(r.end),
        text: text.slice(r.pos, r.end),
        ownLine: text.slice(lineStart, r.pos).trim() === '',
        kind: r.kind,
      });
    }
  };
  const visit = (node: ts.Node) => {
    // A JSDoc is itself a node here; what is inside it is no comment of its own.
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    collect(ts.getLeadingCommentRanges(text, node.pos));
    collect(ts.getTrailingCommentRanges(text, node.end));
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return [...seen.values()].sort((a, b) => a.start - b.start);
}

/** Problems in one file, each as `file:line: what`. */
function commentProblems(fileName: string, text: string): string[] {
  const problems: string[] = [];
  const comments = commentsOf(fileName, text);
  // Blocks: one `/* */` comment, or a run of own-line `//` comments on consecutive lines.
  const blocks: Array<{ start: number; end: number }> = [];
  let run: { start: number; end: number } | undefined;
  for (const c of comments) {
    const single = c.kind === ts.SyntaxKind.SingleLineCommentTrivia && c.ownLine;
    if (single && run && c.start === run.end + 1) {
      run.end = c.end;
      continue;
    }
    if (run) blocks.push(run);
    run = single ? { start: c.start, end: c.end } : undefined;
    if (!single) blocks.push({ start: c.start, end: c.end });
  }
  if (run) blocks.push(run);
  for (const b of blocks) {
    const lines = b.end - b.start + 1;
    if (lines > MAX_BLOCK_LINES) problems.push(`${fileName}:${b.start}: comment block of ${lines} lines (at most ${MAX_BLOCK_LINES})`);
  }
  for (const c of comments) {
    c.text.split('\n').forEach((line, i) => {
      for (const [kind, re] of FIGURES) {
        if (re.test(line)) {
          problems.push(`${fileName}:${c.start + i}: ${kind} in a comment (figures go in bench/README.md): ${line.trim()}`);
          break;
        }
      }
    });
  }
  return problems;
}

const root = path.resolve(import.meta.dirname, '../..');

describe('comments in src', () => {
  test('no block over 10 lines, no measured figure', () => {
    const files = readdirSync(path.join(root, 'src'), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join('src', f))
      .sort();
    assert.ok(files.length > 0);
    const problems = files.flatMap((f) => commentProblems(f, readFileSync(path.join(root, f), 'utf8')));
    assert.deepEqual(problems, []);
  });
});

describe('the comment check itself', () => {
  const lines = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix} line ${i}`).join('\n');
  const check = (text: string) => commentProblems('fixture.ts', text);

  test('a run of 10 // lines passes, 11 fail, naming the first line', () => {
    assert.deepEqual(check(`const a = 1;\n${lines(10, '//')}\nconst b = 2;\n`), []);
    const problems = check(`const a = 1;\n${lines(11, '//')}\nconst b = 2;\n`);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^fixture\.ts:2: comment block of 11 lines/);
  });

  test('a code line or a blank line ends a // run', () => {
    assert.deepEqual(check(`${lines(6, '//')}\nconst a = 1;\n${lines(6, '//')}\n`), []);
    assert.deepEqual(check(`${lines(6, '//')}\n\n${lines(6, '//')}\n`), []);
  });

  test('a JSDoc or /* */ block over 10 lines fails', () => {
    assert.deepEqual(check(`/**\n${lines(8, ' *')}\n */\nconst a = 1;\n`), []);
    assert.match(check(`/**\n${lines(9, ' *')}\n */\nconst a = 1;\n`)[0]!, /fixture\.ts:1: comment block of 11 lines/);
    assert.match(check(`function f() {\n  /*\n${lines(10, '  ')}\n  */\n}\n`)[0]!, /fixture\.ts:2: comment block of 12 lines/);
  });

  test('a // inside a string is no comment', () => {
    assert.deepEqual(check(Array.from({ length: 12 }, (_, i) => `const u${i} = 'http://x/${i}';`).join('\n')), []);
  });

  test('measured figures are caught, each kind', () => {
    const cases: Array<[string, RegExp]> = [
      ['// takes ~3 s here', /:1: an approximate number/],
      ['// took 191-225 MB of RSS', /:1: a range with a unit/],
      ['/** between 2–5 s */', /:1: a range with a unit/],
      ['// an idle server is 120 MB larger', /:1: a size in MB or GB/],
      ['// 1.5 GB of heap', /:1: a size in MB or GB/],
      ['// 13 % fewer requests', /:1: a percentage/],
      ['// Measured: 40 requests a second', /:1: "measured" with a number/],
      ['const a = 1; // trailing, ~5 ms', /:1: an approximate number/],
      ['/**\n * fine\n * loads in ~0.5 s\n */', /:3: an approximate number/],
    ];
    for (const [text, expected] of cases) {
      const problems = check(`${text}\n`);
      assert.equal(problems.length, 1, `${text}: ${problems.join('; ')}`);
      assert.match(problems[0]!, expected);
    }
  });

  test('settings and bounds are no measurement', () => {
    for (const text of [
      '/** How long close() waits (default 10 s). */',
      '// The start of the body (at most 1 KiB, as UTF-8).',
      '// headers over 16 KiB are refused by Node',
      '// the operating contract refuses bodies over 1 MiB',
      '// each delay is moved at random by up to ±10 % of itself',
      '// see bench/README.md for the figures',
      '// ids are 9-digit numbers',
    ]) {
      assert.deepEqual(check(`${text}\n`), [], text);
    }
  });

  test('figures in code are not comments', () => {
    assert.deepEqual(check("const note = '~3 s, 120 MB, 13 %';\n"), []);
  });
});
