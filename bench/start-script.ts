import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');

/**
 * An npm start script of package.json (`[NAME=value …] node <flags> dist/src/main/<role>.js`) in
 * its parts, so a bench runs the server without npm in between (the pid measured is the server's
 * own) yet with the script's environment settings and Node flags.
 */
export function startScript(script: string): { env: Record<string, string>; flags: string[]; entry: string[] } {
  const scripts = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const words = (scripts[script] ?? '').split(/\s+/).filter(Boolean);
  const env: Record<string, string> = {};
  while (words.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(words[0]!)) {
    const setting = words.shift()!;
    env[setting.slice(0, setting.indexOf('='))] = setting.slice(setting.indexOf('=') + 1);
  }
  if (words[0] !== 'node') throw new Error(`npm script ${script} does not run node: ${scripts[script]}`);
  const rest = words.slice(1);
  return { env, flags: rest.filter((w) => w.startsWith('--')), entry: rest.filter((w) => !w.startsWith('--')) };
}
