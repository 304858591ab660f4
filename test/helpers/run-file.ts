import { execFile } from 'node:child_process';

export interface FileRun {
  /** The exit code; -1 when there is none (killed, timed out, not started). */
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end; never rejects, so a test asserts on its code and output. */
export function runFile(file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<FileRun> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: options.cwd, env: options.env, timeout: options.timeoutMs }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}
