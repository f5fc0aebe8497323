// Ctrl+F5 (Run Without Debugging) on a Python file with no launch.json, a breakpoint set in its
// gutter, in a real VS Code: the program runs to its end without stopping.
// Arguments (JSON): R, url, folder, shots, script, line.
'use strict';
const { main } = require('./workbench');

main(async (wb, args, steps) => {
  await wb.openFile(args.script);
  await wb.clickGutter(args.line);
  await wb.focusEditor();
  await wb.page.keyboard.press('Control+F5');
  // the program is short: its session may be over before the toolbar could be seen
  await wb.page.locator('.debug-toolbar').waitFor({ timeout: 5000 }).catch(() => wb.log('session already over'));
  await wb.page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 120000 });
  steps.paused = (await wb.page.locator('.debug-call-stack').allInnerTexts()).join(' ').includes('PAUSED');
  await wb.shot('ran');
});
