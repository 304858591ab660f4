/**
 * The console's build (console/build.mjs, `npm run build:console`): its sources type-check, what
 * dist/console holds is their build, the page loads nothing from another origin, and its scripts
 * and styles together, uPlot's charts included (issue 48), stay within 150 KB gzipped (issue 41).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { ROOT_DIR } from '../../src/root.ts';
import { CONSOLE_BUILD as CONSOLE_DIR } from '../../src/app.ts';

const BUDGET = 150 * 1024;
let fresh: string;

const files = (dir: string): string[] => readdirSync(dir, { recursive: true }).map(String).filter((f) => /\.\w+$/.test(f)).sort();

before(() => {
  fresh = mkdtempSync(path.join(os.tmpdir(), 'console-build-'));
  execFileSync(process.execPath, [path.join(ROOT_DIR, 'console', 'build.mjs'), fresh], { stdio: 'pipe' });
});
after(() => rmSync(fresh, { recursive: true, force: true }));

test('the console sources type-check against the client typed from openapi.yaml', () => {
  execFileSync(process.execPath, [path.join(ROOT_DIR, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT_DIR, 'console', 'tsconfig.json')], { stdio: 'pipe' });
});

test('dist/console is the build of console/ as it is (npm run build:console)', () => {
  assert.deepEqual(files(CONSOLE_DIR), files(fresh));
  for (const f of files(fresh)) {
    assert.ok(readFileSync(path.join(CONSOLE_DIR, f)).equals(readFileSync(path.join(fresh, f))), `dist/console/${f} is stale: run npm run build:console`);
  }
});

test('scripts and styles together are at most 150 KB gzipped', () => {
  const assets = files(path.join(fresh, 'assets')).filter((f) => /\.(js|css)$/.test(f));
  assert.deepEqual(assets, ['console-style.css', 'console.js']);
  const gzipped = assets.reduce((sum, f) => sum + gzipSync(readFileSync(path.join(fresh, 'assets', f)), { level: 9 }).length, 0);
  assert.ok(gzipped <= BUDGET, `${gzipped} bytes gzipped, over ${BUDGET}`);
});

test("uPlot and its stylesheet are inside the console's two files, at the version package.json pins", () => {
  const script = readFileSync(path.join(fresh, 'assets', 'console.js'), 'utf8');
  const style = readFileSync(path.join(fresh, 'assets', 'console-style.css'), 'utf8');
  assert.match(script, /["']uplot["']/, "uPlot (its root's class name) is bundled into console.js");
  assert.match(style, /\.uplot\s*\{/, "uPlot's stylesheet is bundled into console-style.css");
  assert.doesNotMatch(style, /@import/);
  const pkg = JSON.parse(readFileSync(path.join(ROOT_DIR, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const installed = JSON.parse(readFileSync(path.join(ROOT_DIR, 'node_modules', 'uplot', 'package.json'), 'utf8')) as { version: string };
  assert.equal(pkg.dependencies.uplot, installed.version);
});

test('the page names no other origin: no CDN, so it works offline', () => {
  for (const f of files(fresh)) {
    const text = readFileSync(path.join(fresh, f), 'utf8');
    const urls = [...text.matchAll(/(?:src|href)\s*=\s*["'](?!\/console\/)([^"']+)/g)].map((m) => m[1]);
    assert.deepEqual(urls, [], f);
    assert.doesNotMatch(text, /@import\s+url\(|<script>(?!<\/script>)/, f);
  }
});
