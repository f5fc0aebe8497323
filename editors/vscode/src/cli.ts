// Running mixdbg's own CLI (`<python> -m mixdbg ...`) in the interpreter the user chose.
import { execFile } from 'child_process';

/** What one run of a command gave: its exit code (null when it could not start) and output. */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Set when the program could not be started at all (e.g. ENOENT for a missing interpreter). */
  startError?: string;
}

/** Runs `python -m mixdbg ARGS` with a timeout; never rejects. */
export function runMixdbg(python: string, args: string[], timeoutMs = 60000): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(python, ['-m', 'mixdbg', ...args], { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const failure = error as (NodeJS.ErrnoException & { code?: number | string }) | null;
        if (failure && typeof failure.code === 'string') {
          resolve({ code: null, stdout, stderr, startError: `${failure.code}: ${failure.message}` });
          return;
        }
        const code = failure ? (typeof failure.code === 'number' ? failure.code : 1) : 0;
        resolve({ code, stdout, stderr });
      });
  });
}

/** True when the run failed because the interpreter has no mixdbg package. */
export function mixdbgMissing(result: RunResult): boolean {
  return result.code !== 0 && /No module named mixdbg\b/.test(result.stderr);
}

/** The exact command that installs mixdbg into `python`. */
export function pipInstallCommand(python: string): string {
  const quoted = /^[\w@%+=:,./-]+$/.test(python) ? python : `'${python.replace(/'/g, `'\\''`)}'`;
  return `${quoted} -m pip install mixdbg`;
}
