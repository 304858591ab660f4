/**
 * A/B support shared by the benches: another commit's build, to measure the API before a change.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';

/**
 * A checkout of `rev` under var/bench-base/ with its own build (node_modules shared with this
 * checkout), for an A/B of the API before and after a change.
 */
export function buildBase(root: string, rev: string): string {
  const sha = spawnSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: root, encoding: 'utf8' }).stdout.trim();
  if (!sha) throw new Error(`BENCH_BASE: no commit ${rev}`);
  const dir = path.join(root, 'var', 'bench-base', sha.slice(0, 12));
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
    symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
    step(process.execPath, ['scripts/generate.mjs', '--prisma'], dir);
    step(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], dir);
  }
  console.error(`bench: base ${rev} (${sha.slice(0, 12)}) built in ${path.relative(root, dir)}`);
  return dir;
}
