// The build's parse of openapi.yaml (scripts/build-contract.mjs, dist/openapi.json) is the very
// document the YAML parses to, and a process uses it only for the text it was made from: another
// text, or a file that is not the build's, falls back to parsing the YAML.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { parse } from 'yaml';
import { BUILT_CONTRACT_PATH, builtDocument, loadContract, OPENAPI_PATH } from '../../src/http/contract.ts';
import { ROOT_DIR } from '../../src/root.ts';
import { tmpDir } from '../ops/helpers.ts';

const work = tmpDir('capi-contract-built-');
after(() => work.remove());

test('the build writes the document the YAML parses to, and it is used for that text only', () => {
  const out = path.join(work.dir, 'openapi.json');
  execFileSync(process.execPath, [path.join(ROOT_DIR, 'scripts', 'build-contract.mjs'), out]);
  const yaml = readFileSync(OPENAPI_PATH, 'utf8');
  const fromBuild = builtDocument(yaml, out);
  assert.deepEqual(fromBuild, parse(yaml));
  assert.equal(builtDocument(`${yaml}\n# changed\n`, out), undefined, 'another text is parsed, not taken from the build');
  writeFileSync(out, '{"sha256":');
  assert.equal(builtDocument(yaml, out), undefined, 'a broken file is ignored');
  assert.equal(builtDocument(yaml, path.join(work.dir, 'none.json')), undefined, 'no build: the YAML is parsed');
  assert.equal(path.relative(ROOT_DIR, BUILT_CONTRACT_PATH), path.join('dist', 'openapi.json'));
});

test('the contract a process loads is the same with or without a build', () => {
  const contract = loadContract();
  assert.deepEqual(contract.document, parse(readFileSync(OPENAPI_PATH, 'utf8')));
});
