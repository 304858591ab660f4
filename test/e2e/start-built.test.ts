/**
 * `npm run start:api` on a built tree runs what `npm run build` built and compiles nothing: it is
 * ready on PostgreSQL with no compiler, bundler or generator among the processes it starts, and
 * leaves dist/ as it was. A tree whose sources changed after the build is refused by every start
 * script, naming the build as stale and what changed. The time to ready is printed, not asserted.
 *
 * It works on a copy of the tree (node_modules linked), so changing a source there disturbs no
 * other test; a copy of a stale tree is built first.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, cpSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { createPgDatabase, freePort, postgresAvailable, ROOT, startTcpRedis, tmpDir, type PgDatabase, type TcpRedis } from '../ops/helpers.ts';

const skip = !(await postgresAvailable()) && 'no PostgreSQL at DATABASE_URL or 127.0.0.1:5432';

const work = tmpDir('capi-start-built-');
const tree = path.join(work.dir, 'tree');
const argvLog = path.join(work.dir, 'argv.log');
let pgdb: PgDatabase;
let redis: TcpRedis;
let smtp: TestSmtp;
let env: NodeJS.ProcessEnv;

/** Everything a clone holds after `npm ci`, but node_modules (linked) and what runs leave behind. */
function copyTree(): void {
  const skipped = new Set(['node_modules', '.git', 'var', 'coverage']);
  for (const entry of readdirSync(ROOT)) {
    if (skipped.has(entry)) continue;
    cpSync(path.join(ROOT, entry), path.join(tree, entry), { recursive: true, filter: (src) => !src.includes(`${path.sep}bench${path.sep}results`) });
  }
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(tree, 'node_modules'));
}

/** Each file under dist/ with its size and modification time: a compile at start would change them. */
function distSnapshot(): string {
  const dist = path.join(tree, 'dist');
  return (readdirSync(dist, { recursive: true }) as string[])
    .sort()
    .map((f) => {
      const s = statSync(path.join(dist, f));
      return `${f} ${s.size} ${s.mtimeMs}`;
    })
    .join('\n');
}

/** Every Node process started since the log was cleared (npm's, the check's, the server's, a compiler's): its pid and script. */
function nodeProcesses(): { pid: number; script: string }[] {
  return readFileSync(argvLog, 'utf8').trim().split('\n').filter(Boolean).map((line) => {
    const { pid, argv } = JSON.parse(line) as { pid: number; argv: string[] };
    return { pid, script: argv[1] ?? '' };
  });
}

function nodeScripts(): string[] {
  return nodeProcesses().map((p) => p.script);
}

/** CPU seconds (user + system) a process has used, from /proc (Linux): the machine's load does not inflate it as it does the time to ready. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

function npmRun(script: string, extra: NodeJS.ProcessEnv = {}) {
  writeFileSync(argvLog, '');
  const started = performance.now();
  const child = spawn('npm', ['run', '--silent', script], { cwd: tree, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.resume();
  // npm itself gets the group's SIGTERM too: it ends by that signal, the server with status 0.
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return {
    started,
    exited,
    stderr: () => stderr,
    // npm forwards signals unreliably: the whole group (npm, sh, node).
    stop: async () => {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        /* gone */
      }
      return exited;
    },
  };
}

/** Milliseconds from the spawn of `npm run <script>` to its first /readyz 200; the process keeps running. */
async function readyAfter(run: ReturnType<typeof npmRun>, port: number): Promise<number> {
  let code: number | string | null | undefined;
  void run.exited.then((c) => (code = c));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (code !== undefined) throw new Error(`exited (${code}) before it was ready:\n${run.stderr()}`);
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) return performance.now() - run.started;
    await new Promise((r) => setTimeout(r, 20));
  }
  await run.stop();
  throw new Error(`not ready within 60 s:\n${run.stderr()}`);
}

before(async () => {
  if (skip) return;
  copyTree();
  if (spawnSync(process.execPath, ['scripts/build-stamp.mjs', '--check'], { cwd: tree }).status !== 0) {
    // A working tree changed since its build: build the copy, as `npm ci` or `npm run build` would.
    const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: tree, stdio: ['ignore', 'ignore', 'pipe'] });
    assert.equal(built.status, 0, built.stderr.toString());
  }
  const logger = path.join(work.dir, 'log-argv.cjs');
  writeFileSync(logger, `require('node:fs').appendFileSync(${JSON.stringify(argvLog)}, JSON.stringify({ pid: process.pid, argv: process.argv }) + '\\n');\n`);
  [pgdb, redis, smtp] = await Promise.all([createPgDatabase(), startTcpRedis(), startTestSmtp()]);
  // Every setting a process apart may be refused without (docs/running-apart.md), so only the
  // build decides whether it starts.
  env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATABASE_URL: pgdb.url,
    REDIS_URL: redis.url,
    SMTP_URL: smtp.url,
    HOST: '127.0.0.1',
    CREDENTIALS_KEY: randomBytes(32).toString('hex'),
    PUBLIC_BASE_URL: 'http://127.0.0.1:1',
    DATA_DIR: path.join(work.dir, 'data'),
    LOG_LEVEL: 'warn',
    SHUTDOWN_DELAY_MS: '0',
    NODE_OPTIONS: `--require ${logger}`,
  };
});

after(async () => {
  await smtp?.stop();
  await redis?.stop();
  await pgdb?.drop();
  work.remove();
});

describe('npm run start:api on a built tree', { skip }, () => {
  test('is ready on PostgreSQL without compiling anything', async (ctx) => {
    const before = distSnapshot();
    const times: number[] = [];
    // The first start migrates the new database; the second is a restart in place.
    for (const what of ['first start, migrating an empty database', 'restart on the migrated database']) {
      const port = await freePort();
      const run = npmRun('start:api', { PORT: String(port) });
      const ms = await readyAfter(run, port);
      times.push(ms);
      const server = nodeProcesses().find((p) => p.script.endsWith('dist/src/main/api.js'));
      const cpu = server && cpuSeconds(server.pid);
      const figure = `npm run start:api ready in ${(ms / 1000).toFixed(2)} s, the server's CPU ${cpu?.toFixed(2) ?? '?'} s (${what}, PostgreSQL, load ${os.loadavg()[0]!.toFixed(1)})`;
      ctx.diagnostic(figure);
      console.log(`start-built: ${figure}`);
      const scripts = nodeScripts();
      assert.ok([0, 'SIGTERM'].includes((await run.stop()) ?? -1), run.stderr());
      assert.ok(scripts.some((s) => s.endsWith('scripts/build-stamp.mjs')), `the build's stamp was checked: ${scripts.join(', ')}`);
      assert.ok(scripts.some((s) => s.endsWith('dist/src/main/api.js')), `the built server ran: ${scripts.join(', ')}`);
      const compilers = scripts.filter((s) => /typescript|\btsc$|tsx|esbuild|console\/build\.mjs|generate\.mjs|prisma/.test(s));
      assert.deepEqual(compilers, [], 'nothing is compiled, bundled or generated at start');
    }
    assert.equal(distSnapshot(), before, 'dist/ is left as the build wrote it');
    assert.equal(times.length, 2);
  });

  test('every start script refuses a build of another tree, naming it and what changed', async () => {
    appendFileSync(path.join(tree, 'src', 'root.ts'), '// changed after the build\n');
    for (const script of ['start', 'start:api', 'start:worker']) {
      const port = await freePort();
      const run = npmRun(script, { PORT: String(port) });
      assert.equal(await run.exited, 1, `${script}: ${run.stderr()}`);
      assert.match(run.stderr(), /^client-api-v1: dist\/ was built from another tree \(changed since the build: src\/root\.ts\): run npm run build$/m, script);
      assert.ok(!nodeScripts().some((s) => s.includes('dist/src/main/')), `${script} ran no server`);
    }
  });

  test('a tree never built is refused too', async () => {
    const stamp = path.join(tree, 'dist', 'build-stamp.json');
    cpSync(stamp, `${stamp}.kept`);
    try {
      writeFileSync(stamp, 'not json');
      const run = npmRun('start:api', { PORT: String(await freePort()) });
      assert.equal(await run.exited, 1, run.stderr());
      assert.match(run.stderr(), /dist\/ holds no build of this tree .*: run npm run build/);
      assert.ok(!nodeScripts().some((s) => s.includes('dist/src/main/')));
    } finally {
      cpSync(`${stamp}.kept`, stamp);
    }
  });
});
