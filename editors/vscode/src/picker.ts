// `${command:mixdbg.pickProcess}`: choose a running Python process from `mixdbg ps --json`.
import * as vscode from 'vscode';
import { Interpreter } from './interpreter';
import { mixdbgMissing, pipInstallCommand, runMixdbg } from './cli';

/** One row of `mixdbg ps --json`. */
interface PythonProcess {
  pid: number;
  role: string;
  cmdline: string;
  program?: string;
}

interface ProcessItem extends vscode.QuickPickItem {
  pid: number;
}

/** Debuggees first (the likeliest choice), then plain Python processes, then debugpy's helpers. */
const ROLE_ORDER = ['debuggee', 'other', 'debugpy launcher', 'debugpy adapter'];

/** The PID the user picked, as a string (VS Code substitutes it), or undefined to cancel the launch. */
export async function pickProcess(interpreter: Interpreter): Promise<string | undefined> {
  const result = await runMixdbg(interpreter.path, ['ps', '--json']);
  if (result.code !== 0) {
    const why = mixdbgMissing(result)
      ? `mixdbg is not installed in ${interpreter.path}. Install it: ${pipInstallCommand(interpreter.path)}`
      : `mixdbg ps failed: ${(result.startError ?? result.stderr).trim().split('\n').pop() ?? ''}`;
    void vscode.window.showErrorMessage(why);
    return undefined;
  }
  const processes = parseProcesses(result.stdout);
  if (processes === undefined) {
    void vscode.window.showErrorMessage(
      `mixdbg ps --json printed something that is not a list of processes: ${firstLine(result.stdout)}`);
    return undefined;
  }
  if (processes.length === 0) {
    void vscode.window.showInformationMessage('mixdbg: no Python process is running that you may debug.');
    return undefined;
  }
  const rank = (p: PythonProcess): number => {
    const at = ROLE_ORDER.indexOf(p.role);
    return at < 0 ? ROLE_ORDER.length : at;
  };
  const items: ProcessItem[] = [...processes].sort((a, b) => rank(a) - rank(b) || b.pid - a.pid).map((p) => ({
    pid: p.pid,
    label: p.program || p.cmdline,
    description: `${p.pid} · ${p.role}`,
    detail: p.program && p.program !== p.cmdline ? p.cmdline : undefined,
  }));
  const picked = await vscode.window.showQuickPick(items, {
    title: 'mixdbg: attach to a Python process', placeHolder: 'Type to filter by command line or PID',
    matchOnDescription: true, matchOnDetail: true,
  });
  return picked ? String(picked.pid) : undefined;
}

/** The rows of `mixdbg ps --json`, or undefined when its output is not a JSON list. */
function parseProcesses(stdout: string): PythonProcess[] | undefined {
  try {
    const parsed: unknown = JSON.parse(stdout);
    return Array.isArray(parsed) ? parsed as PythonProcess[] : undefined;
  } catch {
    return undefined;
  }
}

/** The first non-empty line of `text`, shortened for a message. */
function firstLine(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 120 ? `${line.slice(0, 117)}...` : line || '(no output)';
}
