// The mixdbg extension: contributes the debug type `mixdbg`, served by `mixdbg dap`.
import * as vscode from 'vscode';
import { AdapterFactory, ConfigurationProvider, DEBUG_TYPE, DynamicConfigurations } from './configuration';
import { resolveInterpreter } from './interpreter';
import { checkMachine } from './machine';
import { pickProcess } from './picker';

/** The workspace folder of the active editor, else the first one. */
function currentFolder(): vscode.WorkspaceFolder | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return (uri && vscode.workspace.getWorkspaceFolder(uri)) ?? vscode.workspace.workspaceFolders?.[0];
}

/** Registers the configuration providers, the adapter factory and the commands. */
export function activate(context: vscode.ExtensionContext): void {
  const channel = vscode.window.createOutputChannel('mixdbg');
  context.subscriptions.push(
    channel,
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, new ConfigurationProvider()),
    vscode.debug.registerDebugConfigurationProvider(DEBUG_TYPE, new DynamicConfigurations(),
      vscode.DebugConfigurationProviderTriggerKind.Dynamic),
    vscode.debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new AdapterFactory()),
    vscode.commands.registerCommand('mixdbg.pickProcess',
      async () => pickProcess(await resolveInterpreter(currentFolder()))),
    vscode.commands.registerCommand('mixdbg.askModule', () => vscode.window.showInputBox({
      title: 'mixdbg: python -m MODULE', prompt: 'The module to run and debug', placeHolder: 'package.module',
      ignoreFocusOut: true,
    })),
    vscode.commands.registerCommand('mixdbg.checkMachine',
      async () => checkMachine(await resolveInterpreter(currentFolder()), channel)),
  );
}

