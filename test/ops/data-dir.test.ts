/**
 * Everything under $DATA_DIR is the owner's alone (files 0600, directories 0700), whatever the
 * umask the server was started with: the embedded database's files, the credentials key, the outbox
 * e-mails and the report workbooks, and files an earlier run left more open.
 */
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { connectForCli } from '../../src/db/client.ts';
import { apiKey } from '../helpers/factories.ts';
import { startRole, tmpDir, waitUntil, type RoleProcess } from './helpers.ts';
import { writingClient } from '../helpers/db.ts';

const data = tmpDir('capi-ops-perms-');
let child: RoleProcess | undefined;
after(async () => {
  await child?.kill('SIGKILL');
  data.remove();
});

function everything(root: string): Array<{ file: string; mode: number; dir: boolean }> {
  const out: Array<{ file: string; mode: number; dir: boolean }> = [];
  const stack = [root];
  while (stack.length > 0) {
    const current = stack.pop()!;
    const info = lstatSync(current);
    if (info.isSymbolicLink()) continue;
    out.push({ file: current, mode: info.mode & 0o777, dir: info.isDirectory() });
    if (info.isDirectory()) for (const name of readdirSync(current)) stack.push(path.join(current, name));
  }
  return out;
}

test('umask 0022: nothing under DATA_DIR is readable or writable by group or others', async () => {
  const previous = process.umask(0o022);
  try {
    // A file an earlier run (or a copy by hand) left world-readable.
    mkdirSync(path.join(data.dir, 'outbox'), { recursive: true, mode: 0o755 });
    writeFileSync(path.join(data.dir, 'outbox', 'old.eml'), 'Subject: old\r\n\r\nnew password: x\r\n', { mode: 0o644 });
    child = await startRole('all', { DATA_DIR: data.dir });
  } finally {
    process.umask(previous);
  }
  // A report writes a workbook under tmp/ and an e-mail under outbox/.
  const db = await connectForCli({ dataDir: data.dir });
  try {
    const key = await apiKey(writingClient(db.prisma), { scopes: ['reports:generate'] });
    const res = await fetch(`${child.url}/api/v1/reports/services`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key.key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ recipients: ['perms@broker.example'] }),
    });
    assert.equal(res.status, 200, await res.text());
  } finally {
    await db.close();
  }
  await waitUntil(() => readdirSync(path.join(data.dir, 'outbox')).filter((f) => f.endsWith('.eml')).length === 2, 20_000, 'the report e-mail');

  const entries = everything(data.dir);
  assert.ok(entries.some((e) => e.file.includes(`${path.sep}db${path.sep}`)), 'the embedded database files were checked');
  const open = entries.filter((e) => (e.mode & 0o077) !== 0).map((e) => `${e.file} ${e.mode.toString(8)}`);
  assert.deepEqual(open, [], 'group or other permissions');
  for (const e of entries) if (e.dir) assert.equal(e.mode, 0o700, e.file);
});
