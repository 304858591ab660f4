#!/usr/bin/env node
// `npm run build:console`: the console's front end (console/src, Preact) bundled by esbuild into
// dist/console/: index.html (the page the server fills in, src/console/static.ts) and assets/
// with one script and one stylesheet. No CDN and no inline script, so the page runs offline under
// the console's Content-Security-Policy. An argument names another folder (the tests build there).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(process.argv[2] ?? path.join(here, '..', 'dist', 'console'));

rmSync(out, { recursive: true, force: true });
mkdirSync(path.join(out, 'assets'), { recursive: true });
await build({
  entryPoints: { console: path.join(here, 'src', 'main.tsx'), 'console-style': path.join(here, 'src', 'console.css') },
  outdir: path.join(out, 'assets'),
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
copyFileSync(path.join(here, 'index.html'), path.join(out, 'index.html'));
