// The "mixdbg: module" configuration `mixdbg setup --kind mixdbg` wrote, in a real VS Code: chosen
// in Run and Debug's list and started, it asks for the module; the session runs python -m MODULE.
// Arguments (JSON): R, url, folder, shots, module.
'use strict';
const { main, squash } = require('./workbench');

main(async (wb, args, steps) => {
  await wb.page.keyboard.press('Control+Shift+D');
  const list = wb.page.locator('.start-debug-action-item select').first();
  await list.waitFor({ timeout: 30000 });
  await list.selectOption({ label: 'mixdbg: module' });
  await wb.page.locator('.start-debug-action-item .codicon-debug-start').first().click();
  const question = wb.page.locator('.quick-input-widget', { hasText: 'python -m MODULE' });
  await question.waitFor({ timeout: 30000 });
  steps.question = squash(await question.innerText());
  await wb.page.keyboard.type(args.module);
  await wb.shot('module-asked');
  await wb.page.keyboard.press('Enter');
  await wb.page.locator('.debug-toolbar').waitFor({ timeout: 60000 }).catch(() => wb.log('session already over'));
  await wb.page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 120000 });
  await wb.shot('module-ran');
});
