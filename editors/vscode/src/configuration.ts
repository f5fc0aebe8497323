// Debug configurations of type mixdbg: F5 with no launch.json debugs the Python file in the
// editor; every launch first checks the interpreter (see machine.ts).
import * as vscode from 'vscode';
import { resolveInterpreter } from './interpreter';
import { readyToDebug } from './machine';

export const DEBUG_TYPE = 'mixdbg';

/** The configuration F5 uses when there is no launch.json (or it has no configuration). */
export function currentFileConfiguration(): vscode.DebugConfiguration {
  return {
    type: DEBUG_TYPE, request: 'launch', name: 'mixdbg: current file',
    program: '${file}', cwd: '${workspaceFolder}',
  };
}

/** Offered by "Run and Debug: Select and Start Debugging" when mixdbg is chosen. Registered for
 * the dynamic trigger only: VS Code appends what an initial provider returns to package.json's
 * initialConfigurations (what `mixdbg setup` writes) when it creates a launch.json. */
export class DynamicConfigurations implements vscode.DebugConfigurationProvider {
  provideDebugConfigurations(): vscode.DebugConfiguration[] {
    return [
      currentFileConfiguration(),
      { type: DEBUG_TYPE, request: 'attach', name: 'mixdbg: attach to a process', processId: '${command:mixdbg.pickProcess}' },
    ];
  }
}

/** Fills in F5 without launch.json, and checks the machine before the adapter starts. */
export class ConfigurationProvider implements vscode.DebugConfigurationProvider {
  /** An empty configuration (F5, no launch.json) becomes "debug the Python file in the editor";
   * Ctrl+F5 (Run Without Debugging) the same, run without the debugger (`noDebug` kept). */
  resolveDebugConfiguration(folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration): vscode.DebugConfiguration | undefined {
    if (config.type || config.request || config.name) {
      return config;
    }
    const document = vscode.window.activeTextEditor?.document;
    if (document?.languageId !== 'python') {
      void vscode.window.showInformationMessage(
        'mixdbg: open a Python file and press F5 to debug it, or add a mixdbg configuration to launch.json.');
      return undefined;
    }
    const resolved = currentFileConfiguration();
    if (config.noDebug) {
      resolved.noDebug = true;
    }
    if (!folder) {
      resolved.cwd = '${fileDirname}';
    }
    return resolved;
  }

  /** Runs last, after ${...} substitution: a missing mixdbg or a blocking problem stops here. */
  async resolveDebugConfigurationWithSubstitutedVariables(folder: vscode.WorkspaceFolder | undefined,
    config: vscode.DebugConfiguration): Promise<vscode.DebugConfiguration | undefined> {
    return (await readyToDebug(await resolveInterpreter(folder), !config.noDebug)) ? config : undefined;
  }
}

/** Starts `<python> -m mixdbg dap` (stdio) with the interpreter the user chose. */
export class AdapterFactory implements vscode.DebugAdapterDescriptorFactory {
  async createDebugAdapterDescriptor(session: vscode.DebugSession): Promise<vscode.DebugAdapterDescriptor> {
    const interpreter = await resolveInterpreter(session.workspaceFolder);
    return new vscode.DebugAdapterExecutable(interpreter.path, ['-m', 'mixdbg', 'dap']);
  }
}
