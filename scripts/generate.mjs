#!/usr/bin/env node
// Writes what is generated from the sources of truth:
//   generated/api.ts    <- openapi.yaml (openapi-typescript; committed, checked fresh in CI)
//   clients/typescript/src/schema.ts <- the same types, for the TypeScript client package (committed, checked)
//   clients/typescript/package.json's version <- openapi.yaml's info.version (committed, checked)
//   clients/typescript/dist/ <- the client compiled (tsc: ESM .js + .d.ts) with openapi-fetch and
//                       standardwebhooks vendored in dist/vendor/, so the package has no dependencies
//                       (committed, checked fresh)
//   generated/prisma/   <- prisma/schema.prisma (prisma generate; build output, not committed)
// `--check` regenerates the API types and the client's build to a temporary place and fails if the
// committed copy differs.
// `--prisma` / `--api` limit the run to one of them.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { parse } from 'yaml';

const args = new Set(process.argv.slice(2));
const only = args.has('--prisma') ? 'prisma' : args.has('--api') ? 'api' : 'all';
const bin = (name) => path.join('node_modules', '.bin', name);
const CLIENT_DIR = 'clients/typescript';
const CLIENT_SCHEMA = `${CLIENT_DIR}/src/schema.ts`;
const CLIENT_DIST = `${CLIENT_DIR}/dist`;

function run(command, argv, env = {}) {
  const result = spawnSync(command, argv, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env } });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/**
 * standardwebhooks (MIT) and the two modules it needs (@stablelib/base64, MIT; fast-sha256, public
 * domain), CommonJS all three, bundled by esbuild into one ES module that exports what the client
 * uses. Paths are relative to this repository, so the bytes do not depend on where it is checked out.
 */
function standardWebhooksModule() {
  const { outputFiles } = buildSync({
    stdin: { contents: "export { Webhook } from 'standardwebhooks';", resolveDir: process.cwd(), sourcefile: 'standardwebhooks-entry.js' },
    absWorkingDir: process.cwd(),
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['main'],
    target: 'es2022',
    legalComments: 'inline',
    write: false,
    banner: { js: `// standardwebhooks ${JSON.parse(readFileSync('node_modules/standardwebhooks/package.json', 'utf8')).version} with @stablelib/base64 and fast-sha256, bundled by scripts/generate.mjs (licences beside this file).` },
  });
  return outputFiles[0].text;
}

/**
 * The client package's build into `outDir`: its sources compiled by tsc (clients/typescript/tsconfig.json),
 * and openapi-fetch (MIT, a single dependency-free ES module; its types need openapi-typescript-helpers'
 * types only) and standardwebhooks (bundled, standardWebhooksModule) in `vendor/`, so an integrator
 * installs the package offline, from a tarball, with nothing else to fetch.
 */
function buildClient(outDir) {
  rmSync(outDir, { recursive: true, force: true });
  run(bin('tsc'), ['-p', path.join(CLIENT_DIR, 'tsconfig.json'), '--outDir', outDir]);
  const vendor = path.join(outDir, 'vendor');
  mkdirSync(vendor);
  const fetchDir = 'node_modules/openapi-fetch';
  const helpersDir = 'node_modules/openapi-typescript-helpers';
  const copy = (from, to, edit = (text) => text) => writeFileSync(path.join(vendor, to), edit(readFileSync(from, 'utf8')));
  copy(path.join(fetchDir, 'dist/index.mjs'), 'openapi-fetch.js', (text) => text.replace(/\n\/\/# sourceMappingURL=.*\n?$/, '\n'));
  copy(path.join(fetchDir, 'dist/index.d.mts'), 'openapi-fetch.d.ts', (text) =>
    text.replaceAll("from 'openapi-typescript-helpers'", "from './openapi-typescript-helpers.js'"));
  copy(path.join(helpersDir, 'dist/index.d.mts'), 'openapi-typescript-helpers.d.ts');
  // The helpers' module itself: empty at run time, here so the .d.ts's import names a file.
  writeFileSync(path.join(vendor, 'openapi-typescript-helpers.js'), 'export {};\n');
  copy(path.join(fetchDir, 'LICENSE'), 'LICENSE.openapi-fetch');
  copy(path.join(helpersDir, 'LICENSE'), 'LICENSE.openapi-typescript-helpers');
  // Used by webhooks.js only, whose .d.ts names none of its types: no .d.ts of its own.
  writeFileSync(path.join(vendor, 'standardwebhooks.js'), standardWebhooksModule());
  // The package ships no licence file; its repository's (libraries/LICENSE) is kept in scripts/licenses/.
  copy('scripts/licenses/standardwebhooks.LICENSE', 'LICENSE.standardwebhooks');
  copy('node_modules/@stablelib/base64/LICENSE', 'LICENSE.stablelib-base64');
  copy('node_modules/fast-sha256/LICENSE', 'LICENSE.fast-sha256');
  for (const file of readdirSync(outDir).filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'))) {
    const target = path.join(outDir, file);
    const text = readFileSync(target, 'utf8');
    writeFileSync(target, text
      .replaceAll("from 'openapi-fetch'", "from './vendor/openapi-fetch.js'")
      .replaceAll("from 'standardwebhooks'", "from './vendor/standardwebhooks.js'")
      .replace(/from '\.\/(\w+)\.ts'/g, "from './$1.js'"));
    // The package's command (its `bin`, cli.js) runs from a checkout too, so it is executable in git.
    chmodSync(target, file.endsWith('.js') && text.startsWith('#!') ? 0o755 : 0o644);
  }
}

/** Every file under `dir` (relative paths) with its bytes. */
function tree(dir) {
  if (!existsSync(dir)) return new Map();
  const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  return new Map(files.map((entry) => {
    const file = path.join(entry.parentPath, entry.name);
    return [path.relative(dir, file), readFileSync(file)];
  }));
}

const CLIENT_MANIFEST = `${CLIENT_DIR}/package.json`;

/** The client's package.json with its version set to the contract's `info.version`: a client version names the contract it was typed from. */
function clientManifest() {
  const { version } = parse(readFileSync('openapi.yaml', 'utf8')).info;
  const text = readFileSync(CLIENT_MANIFEST, 'utf8');
  return text.replace(/^( {2}"version": )"[^"]*"/m, `$1${JSON.stringify(version)}`);
}

function apiTypes(target) {
  // Not the default: a request field with a `default` (billing_cycle, when) stays optional.
  run(bin('openapi-typescript'), ['openapi.yaml', '--output', target, '--silent', '--default-non-nullable', 'false']);
}

if (args.has('--check')) {
  const fresh = path.join(mkdtempSync(path.join(os.tmpdir(), 'capi-gen-')), 'api.ts');
  apiTypes(fresh);
  for (const file of ['generated/api.ts', CLIENT_SCHEMA]) {
    const committed = existsSync(file) ? readFileSync(file, 'utf8') : '';
    if (readFileSync(fresh, 'utf8') !== committed) {
      console.error(`${file} is stale: run \`npm run generate\` and commit the result`);
      process.exit(1);
    }
  }
  if (clientManifest() !== readFileSync(CLIENT_MANIFEST, 'utf8')) {
    console.error(`${CLIENT_MANIFEST}'s version is not openapi.yaml's info.version: run \`npm run generate\` and commit the result`);
    process.exit(1);
  }
  const built = path.join(path.dirname(fresh), 'client-dist');
  buildClient(built);
  const [want, have] = [tree(built), tree(CLIENT_DIST)];
  const differs = [...new Set([...want.keys(), ...have.keys()])].filter((f) => !(want.has(f) && have.has(f) && want.get(f).equals(have.get(f))));
  if (differs.length > 0) {
    console.error(`${CLIENT_DIST} is stale (${differs.join(', ')}): run \`npm run generate\` and commit the result`);
    process.exit(1);
  }
  console.log('generated/api.ts and the TypeScript client\'s schema and build are up to date with openapi.yaml');
  process.exit(0);
}

if (only !== 'prisma') {
  apiTypes('generated/api.ts');
  copyFileSync('generated/api.ts', CLIENT_SCHEMA);
  writeFileSync(CLIENT_MANIFEST, clientManifest());
  buildClient(CLIENT_DIST);
}
if (only !== 'api') {
  // prisma generate needs no engine, but its CLI insists a schema-engine path exists; no download
  // can happen here, so point it at any existing file (the node binary).
  run(bin('prisma'), ['generate'], {
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
  });
}
