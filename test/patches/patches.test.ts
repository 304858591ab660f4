// Every patch in patches/ is applied to the installed package it names: postinstall runs
// `patch-package --error-on-fail --error-on-warn`, and this test fails when a patch no longer
// applies (a package updated under it, a patch edited by hand, an install that skipped it).
// What each patch does is tested where it matters: sonic-boom in test/ops/log-destination.test.ts,
// express-openapi-validator by every HTTP test, yazl by every workbook a test reads back (a wrong
// CRC and no reader opens the zip), nodemailer in test/patches/smtp-data-stream.test.ts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../..');
const patches = readdirSync(path.join(ROOT, 'patches')).filter((f) => f.endsWith('.patch')).sort();

/** `sonic-boom+4.2.1.patch` → sonic-boom, 4.2.1 (`@scope+name+1.2.3.patch` → @scope/name). */
function packageOf(file: string): { name: string; version: string } {
  const parts = file.replace(/\.patch$/, '').split('+');
  const version = parts.pop()!;
  return { name: parts.join('/'), version };
}

describe('patches/ are applied', () => {
  test('there are patches, and postinstall applies them strictly', () => {
    assert.ok(patches.length >= 3, patches.join(', '));
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.match(pkg.scripts.postinstall!, /^patch-package --error-on-fail --error-on-warn /);
  });

  for (const file of patches) {
    const { name, version } = packageOf(file);
    test(`${file}: ${name} is at ${version} and carries the patch`, () => {
      const installed = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string };
      assert.equal(installed.version, version, `${name} ${installed.version} is installed; the patch is for ${version}`);
      // The patch reverses cleanly only if every hunk of it is in the installed files.
      execFileSync('git', ['apply', '--check', '--reverse', path.join('patches', file)], { cwd: ROOT, stdio: 'pipe' });
    });
  }
});
