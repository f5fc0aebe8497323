// Attach by picker in a real VS Code, from the launch.json `mixdbg setup --kind mixdbg` wrote:
// the configuration "mixdbg: attach to a process" chosen in Run and Debug's list, Start, then the
// process picker (mixdbg ps --json); then Stop, which detaches.
// Arguments (JSON): R, url, folder, shots, filter (text typed into the picker), pid.
'use strict';
const { main, squash } = require('./workbench');

main(async (wb, args, steps) => {
  await wb.page.keyboard.press('Control+Shift+D');
  const list = wb.page.locator('.start-debug-action-item select').first();
  await list.waitFor({ timeout: 30000 });
  steps.configurations = (await list.locator('option').allInnerTexts()).map(squash);
  await list.selectOption({ label: 'mixdbg: attach to a process' });
  await wb.page.locator('.start-debug-action-item .codicon-debug-start').first().click();
  await wb.page.locator('.quick-input-widget', { hasText: 'attach to a Python process' }).waitFor({ timeout: 60000 });
  await wb.page.keyboard.type(args.filter);
  const item = wb.page.locator('.quick-input-list .monaco-list-row', { hasText: String(args.pid) }).first();
  await item.waitFor({ timeout: 15000 });
  steps.picked = squash(await item.innerText());
  await wb.shot('process-picker');
  await item.click();
  await wb.page.locator('.debug-toolbar').waitFor({ timeout: 120000 });
  const attached = wb.page.locator('.repl .monaco-list-row', { hasText: `PID ${args.pid}` }).first();
  await attached.waitFor({ timeout: 120000 });
  steps.console = squash(await attached.innerText());
  await wb.shot('attached');
  await wb.page.keyboard.press('Shift+F5');
  await wb.page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 60000 });
  await wb.shot('detached');
});
