// The extension's own messages in a real VS Code: optionally first "mixdbg: Check this machine"
// (mixdbg doctor in the Output panel); then, case by case, the interpreter set in the Settings
// editor, F5 pressed (or a command run), the notification it shows read, and, once that is
// dismissed, whether a debug session started.
// Arguments (JSON): R, url, folder, shots, script, settings (the user settings.json path), doctor
// (true: run "Check this machine" first), cases: [{name, python (the mixdbg.python to set; absent:
// leave it), command (a Command Palette title; absent: F5), expect (text the notification contains)}].
// Steps: doctor (the Output panel's text), and for each case, by name: {message, sessionStarted}.
'use strict';
const fs = require('fs');
const { main, squash } = require('./workbench');

/** Runs "mixdbg: Check this machine"; returns the Output panel's text once doctor has ended. */
async function checkMachine(wb) {
  await wb.command('mixdbg: Check this machine');
  const panel = wb.page.locator('.part.panel');
  // Monaco renders spaces as no-break spaces: \s matches both.
  await panel.getByText(/mixdbg\s(can\sdebug\shere|doctor\sexited)|Python\sinterpreter/).first().waitFor({ timeout: 60000 });
  await wb.command('View: Toggle Maximized Panel');  // the output is an editor: only what is in view is rendered
  await wb.page.waitForTimeout(1000);
  const text = squash(await panel.locator('.view-lines').first().innerText());
  await wb.command('View: Toggle Maximized Panel');
  return text;
}

main(async (wb, args, steps) => {
  await wb.openFile(args.script);
  if (args.doctor) {
    steps.doctor = await checkMachine(wb);
    await wb.shot('check-this-machine');
  }
  for (const which of args.cases) {
    if (which.python) {
      await wb.setUserSetting('mixdbg.python', which.python);
      const saved = JSON.parse(fs.readFileSync(args.settings, 'utf8'))['mixdbg.python'];
      if (saved !== which.python) throw new Error(`${which.name}: settings.json has mixdbg.python ${saved}`);
    }
    wb.log('case', which.name);
    if (which.command) {
      await wb.command(which.command);
    } else {
      await wb.focusEditor();
      await wb.page.keyboard.press('F5');
    }
    const toasts = wb.page.locator('.notifications-toasts .notification-toast');
    try {
      await toasts.filter({ hasText: which.expect }).first().waitFor({ timeout: 60000 });
    } catch (error) {
      throw new Error(`${which.name}: no notification with "${which.expect}"; shown: ${JSON.stringify((await toasts.allInnerTexts()).map(squash))}`);
    }
    const message = squash(await toasts.filter({ hasText: which.expect }).first().innerText());
    await wb.shot(which.name);
    // Dismissed: the launch is refused (or the picker cancelled); no session may start after it.
    await wb.command('Notifications: Clear All Notifications');
    await wb.page.waitForTimeout(3000);
    steps[which.name] = { message, sessionStarted: await wb.page.locator('.debug-toolbar').isVisible() };
  }
});
