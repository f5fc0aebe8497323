// The extension's own messages in a real VS Code: "mixdbg: Check this machine" shows mixdbg doctor
// in the Output panel; F5 with an interpreter that lacks mixdbg shows the exact pip install command.
// Arguments (JSON): R, url, folder, shots, script, settings (the user settings.json path), python
// (an interpreter without mixdbg).
'use strict';
const fs = require('fs');
const { main, squash } = require('./workbench');

main(async (wb, args, steps) => {
  await wb.openFile(args.script);
  await wb.command('mixdbg: Check this machine');
  const panel = wb.page.locator('.part.panel');
  // Monaco renders spaces as no-break spaces: \s matches both.
  await panel.getByText(/mixdbg\s(can\sdebug\shere|doctor\sexited)/).first().waitFor({ timeout: 60000 });
  await wb.command('View: Toggle Maximized Panel');  // the output is an editor: only what is in view is rendered
  await wb.page.waitForTimeout(1000);
  steps.doctor = squash(await panel.locator('.view-lines').first().innerText());
  await wb.shot('check-this-machine');
  await wb.command('View: Toggle Maximized Panel');

  const settings = JSON.parse(fs.readFileSync(args.settings, 'utf8'));
  fs.writeFileSync(args.settings, JSON.stringify({ ...settings, 'mixdbg.python': args.python }));
  await wb.page.waitForTimeout(2000);  // VS Code reloads the user settings file when it changes
  await wb.focusEditor();
  await wb.page.keyboard.press('F5');
  const toast = wb.page.locator('.notifications-toasts .notification-toast', { hasText: 'pip install' }).first();
  await toast.waitFor({ timeout: 60000 });
  steps.missing = squash(await toast.innerText());
  steps.sessionStarted = await wb.page.locator('.debug-toolbar').isVisible();
  await wb.shot('mixdbg-missing');
});
