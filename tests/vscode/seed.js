// The seed run in a real VS Code: function breakpoint at::native::randn typed into the BREAKPOINTS
// view, F5 on examples/testdebug.py with no launch.json, then CALL STACK, the editor and VARIABLES.
// Arguments (JSON): R, url, folder, shots, script (relative to folder), line (of the randn call).
'use strict';
const { main } = require('./workbench');

main(async (wb, args, steps) => {
  await wb.shot('workbench');
  await wb.openFile(args.script);
  await wb.addFunctionBreakpoint('at::native::randn');
  steps.breakpoints = (await wb.page.locator('.debug-breakpoints .monaco-list-row').allInnerTexts()).map((t) => t.trim());
  await wb.focusEditor();
  wb.log('F5');
  await wb.page.keyboard.press('F5');
  steps.shown = await wb.waitForStack(/<module> testdebug\.py/);
  steps.top = (await wb.topFrame()).text;
  await wb.shot('stopped');
  // Frames the adapter marks subtle are folded; unfold them, as a person would to see them all.
  await wb.showAllFrames();
  steps.stack = await wb.fullCallStack();
  // VS Code focuses the first frame with a source; torch has none, so select randn's frame as a person would.
  await wb.selectFrame(/at::native::randn/);
  steps.size = await wb.waitForVariable(/^size\b/);
  steps.variables = await wb.variables();
  await wb.shot('stopped-in-randn');

  await wb.selectFrame(/<module>/);
  await wb.page.locator('.editor-group-container.active .tabs-container .tab.active', { hasText: 'testdebug.py' }).waitFor({ timeout: 15000 });
  await wb.page.waitForTimeout(1000);
  steps.moduleFrame = await wb.editorPosition();
  await wb.shot('module-frame-selected');

  steps.continues = await wb.continueToEnd();
  await wb.shot('session-ended');
});
