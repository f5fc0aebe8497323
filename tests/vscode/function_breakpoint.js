// A function breakpoint typed into the BREAKPOINTS view, then F5 on a Python file with no
// launch.json: CALL STACK as first shown and unfolded, the stop frame's VARIABLES, the editor at
// the <module> frame when it is clicked, then Continue to the end. At the stop, the class of the
// breakpoint's icon in BREAKPOINTS (verified or not).
// Arguments (JSON): R, url, folder, shots, script (relative to folder), breakpoint (as typed),
// frame (regexp source of the stop frame's row), variable (regexp source of a VARIABLES row there).
'use strict';
const path = require('path');
const { main } = require('./workbench');

main(async (wb, args, steps) => {
  const script = path.basename(args.script);
  const frame = new RegExp(args.frame || '.');
  await wb.shot('workbench');
  await wb.openFile(args.script);
  await wb.addFunctionBreakpoint(args.breakpoint);
  steps.breakpoints = (await wb.page.locator('.debug-breakpoints .monaco-list-row').allInnerTexts()).map((t) => t.trim());
  await wb.focusEditor();
  wb.log('F5');
  await wb.page.keyboard.press('F5');
  steps.shown = await wb.waitForStack(new RegExp(`<module> ${script.replace('.', '\\.')}`));
  steps.top = (await wb.topFrame()).text;
  steps.paused = await wb.pausedOn();
  steps.breakpointIcon = await wb.breakpointIcon(args.breakpoint);
  await wb.shot('stopped');
  // Frames the adapter marks subtle are folded; unfold them, as a person would to see them all.
  await wb.showAllFrames();
  steps.stack = await wb.fullCallStack();
  // VS Code focuses the first frame with a source; a library without one is selected by a click.
  if (args.variable) {
    await wb.selectFrame(frame);
    steps.variable = await wb.waitForVariable(new RegExp(args.variable));
    steps.variables = await wb.variables();
    await wb.shot('stop-frame-selected');
  }

  await wb.selectFrame(/<module>/);
  await wb.page.locator('.editor-group-container.active .tabs-container .tab.active', { hasText: script }).waitFor({ timeout: 15000 });
  await wb.page.waitForTimeout(1000);
  steps.moduleFrame = await wb.editorPosition();
  await wb.shot('module-frame-selected');

  steps.continues = await wb.continueToEnd();
  await wb.shot('session-ended');
});
