// Which Python runs `mixdbg dap`: the mixdbg.python setting, else the Python extension's
// selected interpreter (when that optional extension is installed), else python3.
import * as vscode from 'vscode';

const PYTHON_EXTENSION = 'ms-python.python';
const FALLBACK = 'python3';
const API_TIMEOUT_MS = 10000;

/** Where the interpreter came from, for messages. */
export interface Interpreter {
  path: string;
  source: 'setting mixdbg.python' | 'the Python extension' | 'the default';
}

/** The interpreter for a session in `folder` (or the window when there is none). */
export async function resolveInterpreter(folder: vscode.WorkspaceFolder | undefined): Promise<Interpreter> {
  const setting = vscode.workspace.getConfiguration('mixdbg', folder?.uri).get<string>('python', '').trim();
  if (setting) {
    return { path: setting, source: 'setting mixdbg.python' };
  }
  const selected = await pythonExtensionInterpreter(folder?.uri);
  if (selected) {
    return { path: selected, source: 'the Python extension' };
  }
  return { path: FALLBACK, source: 'the default' };
}

/** The Python extension's active interpreter, or undefined if it is absent, slow or answers oddly. */
async function pythonExtensionInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension(PYTHON_EXTENSION);
  if (!extension) {
    return undefined;
  }
  try {
    const api: unknown = extension.isActive ? extension.exports : await withTimeout(extension.activate());
    return await withTimeout(activeEnvironmentPath(api, resource));
  } catch {
    return undefined;  // the extension is optional: any failure means "not chosen there"
  }
}

/** Reads `api.environments` (the Python extension's public API) without trusting its shape. */
async function activeEnvironmentPath(api: unknown, resource: vscode.Uri | undefined): Promise<string | undefined> {
  const environments = (api as { environments?: Record<string, unknown> } | undefined)?.environments;
  const getActive = environments?.getActiveEnvironmentPath;
  if (typeof getActive !== 'function') {
    return undefined;
  }
  const active = getActive.call(environments, resource) as { path?: unknown } | undefined;
  const resolve = environments?.resolveEnvironment;
  if (typeof resolve === 'function' && active) {
    const resolved = await resolve.call(environments, active) as
      { executable?: { uri?: { fsPath?: unknown } } } | undefined;
    const fsPath = resolved?.executable?.uri?.fsPath;
    if (typeof fsPath === 'string' && fsPath) {
      return fsPath;
    }
  }
  return typeof active?.path === 'string' && active.path ? active.path : undefined;
}

function withTimeout<T>(promise: Thenable<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), API_TIMEOUT_MS);
    promise.then((value) => { clearTimeout(timer); resolve(value); },
      (error: unknown) => { clearTimeout(timer); reject(error); });
  });
}
