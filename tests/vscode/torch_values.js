// A user's custom PyTorch operator built with -g, in a real VS Code: a breakpoint clicked in the
// gutter of its kernel's loop line, F5 on the script that calls it; at the stop VARIABLES shows the
// tensor argument `a` in one line, expanded to its fields, and "View Binary Data" on its data.
// Arguments (JSON): R, url, folder, shots, cpp, script (relative to folder), line (the loop line).
'use strict';
const path = require('path');
const { hexRow, main, squash } = require('./workbench');

const esc = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

main(async (wb, args, steps) => {
  const cpp = path.basename(args.cpp);
  await wb.openFile(args.cpp);
  await wb.clickGutter(args.line);
  await wb.openFile(args.script);
  await wb.focusEditor();
  wb.log('F5');
  await wb.page.keyboard.press('F5');
  steps.hit = await wb.waitForTop(new RegExp(`scaled_add_cpu.*${esc(cpp)} ${args.line}:`), 240000);
  steps.top = (await wb.topFrame()).text;
  steps.a = await wb.waitForVariable(/^a\s*[=:]\s*tensor/);
  await wb.shot('stopped-at-the-kernel');

  // Expand a: its fields, as gdb's tensor printers give them
  await wb.expandVariables(/^a\s*[=:]\s*tensor/);
  steps.data = await wb.waitForVariable(/^data\s*[=:]\s*0x/);
  steps.variables = await wb.variables();
  await wb.shot('a-expanded');

  // "View Binary Data" on data: an inline action of the row when the adapter can read memory
  const row = wb.page.locator('.debug-variables .monaco-list-row', { hasText: /^\s*data\s*[=:]/ }).first();
  await row.hover();
  await wb.page.waitForTimeout(500);
  const action = row.locator('.action-label[aria-label="View Binary Data"], .action-label[title="View Binary Data"]');
  steps.viewBinaryData = (await action.count()) > 0;
  await wb.shot('data-hovered');
  if (steps.viewBinaryData) {
    await action.first().click();
    await wb.page.waitForTimeout(3000);
    steps.binaryTab = squash(await wb.page.locator('.editor-group-container.active .tabs-container .tab.active').first().innerText());
    steps.memoryRow = await hexRow(wb.page, '00000000');
    await wb.shot('binary-data');
  }
  steps.continues = await wb.continueToEnd();
  await wb.shot('session-ended');
});
