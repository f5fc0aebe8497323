// Before a session starts: is mixdbg installed in the chosen interpreter, and does
// `mixdbg doctor` see anything that blocks debugging (gdb, ptrace)? Also the
// "mixdbg: Check this machine" command.
import * as vscode from 'vscode';
import { Interpreter } from './interpreter';
import { mixdbgMissing, pipInstallCommand, RunResult, runMixdbg } from './cli';

/** One check of `mixdbg doctor --json`. */
interface DoctorCheck {
  name: string;
  status: 'ok' | 'warn' | 'fail' | string;
  summary: string;
  fix: string | null;
}

const CHECK_MACHINE = 'Check this machine';
const DEBUG_ANYWAY = 'Debug anyway';
const COPY_COMMAND = 'Copy command';

/** Interpreters whose doctor found nothing blocking, so later sessions start without asking again. */
const healthy = new Set<string>();

/** True when a session may start with `interpreter`; otherwise one message said why and what to do.
 * Run Without Debugging (`debugging` false) needs mixdbg only: what blocks gdb does not matter. */
export async function readyToDebug(interpreter: Interpreter, debugging = true): Promise<boolean> {
  if (healthy.has(interpreter.path)) {
    return true;
  }
  const result = await runMixdbg(interpreter.path, ['doctor', '--json']);
  if (!(await usable(interpreter, result))) {
    return false;
  }
  if (!debugging) {
    return true;
  }
  const blocking = parseChecks(result.stdout).filter((check) => check.status === 'fail');
  if (blocking.length === 0) {
    healthy.add(interpreter.path);
    return true;
  }
  const first = blocking[0];
  const fix = first.fix ? ` Fix: ${first.fix}` : '';
  const choice = await vscode.window.showErrorMessage(
    `mixdbg cannot debug here (${first.name}): ${first.summary}.${fix}`, CHECK_MACHINE, DEBUG_ANYWAY);
  if (choice === CHECK_MACHINE) {
    await vscode.commands.executeCommand('mixdbg.checkMachine');
  }
  return choice === DEBUG_ANYWAY;
}

/** The "mixdbg: Check this machine" command: `mixdbg doctor` in an output channel. */
export async function checkMachine(interpreter: Interpreter, channel: vscode.OutputChannel): Promise<void> {
  channel.clear();
  channel.show(true);
  channel.appendLine(`$ ${interpreter.path} -m mixdbg doctor    (interpreter from ${interpreter.source})`);
  const result = await runMixdbg(interpreter.path, ['doctor']);
  if (!(await usable(interpreter, result))) {
    channel.appendLine(result.startError ?? result.stderr);
    return;
  }
  channel.appendLine(result.stdout.trimEnd());
  if (result.stderr.trim()) {
    channel.appendLine(result.stderr.trimEnd());
  }
  channel.appendLine(result.code === 0 ? 'mixdbg can debug here.' : `mixdbg doctor exited with ${result.code}: see the fix above.`);
}

/** False (after one message) when the interpreter cannot be started or has no mixdbg. */
async function usable(interpreter: Interpreter, result: RunResult): Promise<boolean> {
  if (result.startError) {
    await vscode.window.showErrorMessage(
      `mixdbg: cannot start the Python interpreter '${interpreter.path}' (from ${interpreter.source}): ` +
      `${result.startError}. Set "mixdbg.python" to an interpreter that has mixdbg installed.`);
    return false;
  }
  if (mixdbgMissing(result)) {
    const command = pipInstallCommand(interpreter.path);
    const choice = await vscode.window.showErrorMessage(
      `mixdbg is not installed in ${interpreter.path} (from ${interpreter.source}). Install it: ${command}`,
      COPY_COMMAND);
    if (choice === COPY_COMMAND) {
      await vscode.env.clipboard.writeText(command);
    }
    return false;
  }
  return true;
}

/** The checks of a doctor JSON document; none when it cannot be read (the session then starts). */
function parseChecks(stdout: string): DoctorCheck[] {
  try {
    const document = JSON.parse(stdout) as { checks?: unknown };
    return Array.isArray(document.checks) ? document.checks as DoctorCheck[] : [];
  } catch {
    return [];
  }
}
