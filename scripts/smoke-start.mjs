/**
 * CI smoke test of what `npm start` runs: the compiled server (dist/, built by `npm ci`'s
 * postinstall; prestart only checks the build's stamp) starts on a fresh data directory, answers
 * /readyz and an /api request in the envelope, and stops cleanly on SIGTERM. The test suite runs the TypeScript sources through tsx; this
 * proves the build of those sources runs too.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';

const port = await new Promise((resolve, reject) => {
  const s = createServer();
  s.once('error', reject);
  s.listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-smoke-'));
const server = spawn('npm', ['start', '--silent'], {
  env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'inherit', 'inherit'],
  detached: true,
});
const exited = new Promise((resolve) => server.once('exit', (code, signal) => resolve({ code, signal })));
const base = `http://127.0.0.1:${port}`;

async function fail(message) {
  console.error(`smoke: ${message}`);
  try { process.kill(-server.pid, 'SIGKILL'); } catch { /* gone */ }
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(1);
}

const deadline = Date.now() + 120_000;
let ready = false;
while (!ready && Date.now() < deadline) {
  ready = await fetch(`${base}/readyz`).then((r) => r.status === 200, () => false);
  if (!ready) await new Promise((r) => setTimeout(r, 500));
}
if (!ready) await fail('npm start did not answer /readyz with 200 within 120 s');
const res = await fetch(`${base}/api/v1/auth-check`);
const body = await res.json().catch(() => null);
if (res.status !== 401 || body?.success !== false || body?.error?.code !== 'authentication_failed') {
  await fail(`GET /api/v1/auth-check without a key answered ${res.status} ${JSON.stringify(body)}`);
}
// npm forwards nothing reliably: signal the whole process group (npm, sh, node).
process.kill(-server.pid, 'SIGTERM');
const timer = setTimeout(() => void fail('the server did not stop within 30 s of SIGTERM'), 30_000);
const { code, signal } = await exited;
clearTimeout(timer);
rmSync(dataDir, { recursive: true, force: true });
console.log(`smoke: npm start served ${base} (readyz 200, auth-check 401 in the envelope) and stopped (${signal ?? `exit ${code}`})`);
