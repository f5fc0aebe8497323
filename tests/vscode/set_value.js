// Set Value in the VARIABLES view of a real VS Code: a gutter breakpoint stops the script, the
// variable's row is changed through its context menu's "Set Value" (typed into the row's input),
// VARIABLES shows the new value, and Continue runs the program on with it (the test reads what
// it wrote; the terminal's text is kept when VS Code renders it as text).
// Arguments (JSON): R, url, folder, shots, script, line, name, value.
'use strict';
const path = require('path');
const { main, squash } = require('./workbench');

const esc = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

main(async (wb, args, steps) => {
  const page = wb.page;
  const script = path.basename(args.script);
  await wb.openFile(args.script);
  await wb.clickGutter(args.line);
  await wb.focusEditor();
  await page.keyboard.press('F5');
  steps.stop = await wb.waitForTop(new RegExp(`${esc(script)} ${args.line}:`));
  const before = new RegExp(`^${esc(args.name)}\\b`);
  steps.before = await wb.waitForVariable(before, 30000, /^Locals$/);
  await wb.shot('stopped-variable-shown');

  // Set Value, as a person does it: right-click the row, pick the menu item, type, Enter.
  const row = page.locator('.debug-variables .monaco-list-row', { hasText: before }).first();
  await wb.contextMenu(row, /^Set Value$/);
  const input = page.locator('.debug-variables .monaco-inputbox input').first();
  await input.waitFor({ timeout: 10000 });
  await input.fill(args.value);
  await wb.shot('new-value-typed');
  await page.keyboard.press('Enter');
  steps.after = await wb.waitForVariable(new RegExp(`^${esc(args.name)}\\b.*\\b${esc(args.value)}$`), 30000, /^Locals$/);
  steps.variables = await wb.variables();
  await wb.shot('value-set');

  steps.continues = await wb.continueToEnd();
  await page.keyboard.press('Control+Backquote').catch(() => {});
  await page.waitForTimeout(1000);
  steps.terminal = squash((await page.locator('.xterm-rows').allInnerTexts().catch(() => [])).join(' '));
  await wb.shot('program-ran-on');
});
