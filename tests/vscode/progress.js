// mixdbg dap's progress events as VS Code shows them: a function breakpoint in a library gdb
// reads for seconds, F5, and the notification that names the library while gdb reads it; then
// the stop and Continue to the end.
// Arguments (JSON): R, url, folder, shots, script (relative to folder), breakpoint (as typed),
// progress (text the notification must hold).
'use strict';
const { main } = require('./workbench');

main(async (wb, args, steps) => {
  await wb.openFile(args.script);
  await wb.addFunctionBreakpoint(args.breakpoint);
  await wb.focusEditor();
  wb.log('F5');
  await wb.page.keyboard.press('F5');
  const toast = wb.page.locator('.notifications-toasts .notification-toast', { hasText: args.progress }).first();
  await toast.waitFor({ timeout: 180000 });
  steps.notification = (await toast.innerText()).trim();
  await wb.shot('progress-notification');
  steps.shown = await wb.waitForStack(/<module>/);
  steps.top = (await wb.topFrame()).text;
  await wb.shot('stopped');
  steps.continues = await wb.continueToEnd();
});
