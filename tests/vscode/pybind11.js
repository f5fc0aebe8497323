// A pybind11 module built with -g, in a real VS Code: a breakpoint set by clicking the gutter of
// the .cpp stops; Step Over moves one line; the DEBUG CONSOLE evaluates at that native stop; Step
// Out twice lands in the native caller, then on the Python caller's line.
// Arguments (JSON): R, url, folder, shots, cpp, script (relative to folder), lines: {first, second,
// call, pycall}, evaluate: {expression, result}.
'use strict';
const path = require('path');
const { main } = require('./workbench');

const esc = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

main(async (wb, args, steps) => {
  const cpp = path.basename(args.cpp);
  const script = path.basename(args.script);
  const at = (fn, file, line) => new RegExp(`${esc(fn)}.*${esc(file)} ${line}:`);
  await wb.openFile(args.cpp);
  await wb.clickGutter(args.lines.first);
  await wb.shot('gutter-breakpoint');
  await wb.openFile(args.script);
  await wb.focusEditor();
  await wb.page.keyboard.press('F5');

  steps.hit = await wb.waitForTop(at('add_twice', cpp, args.lines.first));
  steps.hitTop = (await wb.topFrame()).text;
  steps.hitEditor = await wb.editorPosition();
  await wb.shot('stopped-at-gutter-breakpoint');

  steps.next = await wb.debugKey('F10', at('add_twice', cpp, args.lines.second));
  steps.nextTop = (await wb.topFrame()).text;
  steps.nextEditor = await wb.editorPosition();
  steps.locals = await wb.variables();
  steps.evaluated = await wb.evaluate(args.evaluate.expression, new RegExp(`^${esc(args.evaluate.result)}$`));
  await wb.shot('stepped-over-and-evaluated');

  steps.out1 = await wb.debugKey('Shift+F11', at('call_add', cpp, args.lines.call));
  steps.out1Top = (await wb.topFrame()).text;
  await wb.shot('stepped-out-to-native-caller');
  // Where it lands in Python is checked by the test (any line of the script ends the wait).
  steps.out2 = await wb.debugKey('Shift+F11', at('<module>', script, '\\d+'));
  steps.out2Top = (await wb.topFrame()).text;
  steps.out2Editor = await wb.editorPosition();
  await wb.shot('stepped-out-to-python-caller');

  steps.continues = await wb.continueToEnd();
  await wb.shot('session-ended');
});
