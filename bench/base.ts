/**
 * A/B support shared by the benches: another commit's build, to measure the API before a change.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';

/**
 * A checkout of `rev` under var/bench-base/ (BENCH_BASE_CACHE), built with its own dependencies:
 * the commit's package-lock.json installed by `npm ci` with its postinstall (its patches, its Prisma
 * client, its tsc build), so a commit that needed a package since removed still builds. The
 * installed node_modules is kept per lockfile and patches, so another commit with the same
 * dependencies, or a second run, only links it and builds.
 */
export function buildBase(root: string, rev: string): string {
  const sha = spawnSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: root, encoding: 'utf8' }).stdout.trim();
  if (!sha) throw new Error(`BENCH_BASE: no commit ${rev}`);
  const cache = path.resolve(root, process.env.BENCH_BASE_CACHE ?? path.join('var', 'bench-base'));
  const dir = path.join(cache, sha.slice(0, 12));
  const step = (command: string, args: string[], cwd: string) => {
    const r = spawnSync(command, args, { cwd, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed in ${cwd}`);
  };
  if (!existsSync(path.join(dir, 'dist', 'src', 'main', 'runtime.js'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    // git archive: the commit's files only, no worktree bookkeeping left in this repository.
    const tar = spawnSync('git', ['archive', '--format=tar', sha], { cwd: root, maxBuffer: 1 << 30 });
    if (tar.status !== 0) throw new Error(`git archive ${sha} failed`);
    const untar = spawnSync('tar', ['-x', '-C', dir], { input: tar.stdout });
    if (untar.status !== 0) throw new Error('tar failed');
    // Named node_modules itself: Node resolves a package's own imports from its real path upwards.
    const deps = path.join(cache, `deps-${dependencyKey(dir)}`, 'node_modules');
    if (existsSync(deps)) {
      // Installed and patched for this very lockfile and patches: the rest of the postinstall.
      symlinkSync(deps, path.join(dir, 'node_modules'));
      step(process.execPath, ['scripts/generate.mjs', '--prisma'], dir);
      step(process.execPath, [path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], dir);
    } else {
      step('npm', ['ci', '--no-audit', '--no-fund'], dir);
      // Kept for the next commit with the same dependencies; the checkout reaches it by a link.
      mkdirSync(path.dirname(deps), { recursive: true });
      renameSync(path.join(dir, 'node_modules'), deps);
      symlinkSync(deps, path.join(dir, 'node_modules'));
    }
  }
  console.error(`bench: base ${rev} (${sha.slice(0, 12)}) built with its own dependencies in ${path.relative(root, dir)}`);
  return dir;
}

/** What an install depends on: the lockfile and the patches its postinstall applies. */
function dependencyKey(dir: string): string {
  const hash = createHash('sha256').update(readFileSync(path.join(dir, 'package-lock.json')));
  const patches = path.join(dir, 'patches');
  if (existsSync(patches)) {
    for (const name of readdirSync(patches).sort()) hash.update(name).update(readFileSync(path.join(patches, name)));
  }
  return hash.digest('hex').slice(0, 16);
}
