// The launch.json `mixdbg setup` wrote, open in a real VS Code with the mixdbg extension: the
// PROBLEMS view lists what VS Code's own schema validation flags in it (nothing, if every
// configuration is valid against its type's schema).
// Arguments (JSON): R, url, folder, shots.
'use strict';
const { main, squash } = require('./workbench');

main(async (wb, args, steps) => {
  await wb.openFile('.vscode/launch.json');
  await wb.page.waitForTimeout(4000);  // the JSON language service validates after a pause
  await wb.page.keyboard.press('Control+Shift+M');
  await wb.page.locator('.markers-panel, .pane-body.markers-panel').first().waitFor({ timeout: 10000 }).catch(() => {});
  await wb.page.waitForTimeout(1500);
  steps.problems = (await wb.page.locator('.markers-panel .monaco-list-row').allInnerTexts()).map(squash);
  steps.status = squash(await wb.page.locator('.statusbar-item[id*="problems"], .statusbar-item .codicon-error').first().innerText().catch(() => ''));
  await wb.shot('launch-json-problems');
});
