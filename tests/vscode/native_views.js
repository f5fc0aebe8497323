// The native views of VS Code on a C extension built -g (memlab.c), in one session: a breakpoint
// clicked in the gutter stops in fill(); "View Binary Data" on the buffer's pointer in VARIABLES
// opens the memory view (the Hex Editor) and shows the 16 bytes fill() wrote; a step in the
// Disassembly view moves one instruction; "Break on Value Change" on the C global memlab_counter
// (Globals scope) stops where bump() changes it.
// Arguments (JSON): R, url, folder, shots, source, script, lines: {filled, bump, afterBump}.
'use strict';
const path = require('path');
const { hexRow, main, rows } = require('./workbench');

main(async (wb, args, steps) => {
  const { page } = wb;
  const source = path.basename(args.source);
  await wb.openFile(args.source);
  await wb.clickGutter(args.lines.filled);
  await wb.openFile(args.script);
  await wb.focusEditor();
  await page.keyboard.press('F5');
  await wb.waitForTop(new RegExp(`fill.*${source} ${args.lines.filled}:`));
  steps.stopTop = (await wb.topFrame()).text;
  await wb.shot('stopped-in-fill');

  // View Binary Data on the pointer: the Hex Editor opens on the debuggee's memory
  const pointer = page.locator('.debug-variables .monaco-list-row', { hasText: /^bytes\b/ }).first();
  await wb.waitForVariable(/^bytes\b/);
  await pointer.hover();
  const view = pointer.locator('.action-label[aria-label="View Binary Data"], .action-label[title="View Binary Data"]').first();
  await view.waitFor({ timeout: 10000 });
  await view.click();
  steps.memoryRow = await hexRow(page, '00000000');
  await wb.shot('memory-view');

  // The Disassembly view (from the frame's menu in CALL STACK): a step there (F10 with the view
  // focused) is one instruction
  await wb.contextMenu((await wb.topFrame()).row, 'Open Disassembly View');
  const disassembly = page.locator('.disassembly-view');
  await disassembly.waitFor({ timeout: 30000 });
  await page.locator('.disassembly-view .monaco-list-row .codicon-debug-stackframe').first().waitFor({ timeout: 30000 });
  const before = await currentInstruction(page);
  steps.instructionBefore = before.current;
  steps.instructionNext = before.next;
  await wb.shot('disassembly-view');
  await disassembly.click();
  await page.keyboard.press('F10');
  await page.waitForFunction((address) => {
    const row = [...document.querySelectorAll('.disassembly-view .monaco-list-row')].find((r) => r.querySelector('.codicon-debug-stackframe'));
    return row !== undefined && !row.innerText.includes(address);
  }, before.current.split(' ')[0], { timeout: 60000 });
  steps.instructionAfter = (await currentInstruction(page)).current;
  steps.pausedOnStep = await wb.pausedOn();
  steps.stepTop = (await wb.topFrame()).text;
  await wb.shot('disassembly-one-instruction-on');

  // Break on Value Change on the C global memlab_counter, in the frame's Globals scope
  await wb.waitForVariable(/^memlab_counter = 0$/, 30000, /^Globals$/);
  // (the item is enabled once the adapter answered dataBreakpointInfo for it)
  const counter = page.locator('.debug-variables .monaco-list-row', { hasText: 'memlab_counter' }).first();
  steps.valueMenu = await wb.contextMenu(counter, 'Break on Value Change');
  await page.locator('.debug-breakpoints .monaco-list-row', { hasText: 'memlab_counter' }).first().waitFor({ timeout: 15000 });
  // the line's breakpoint off (its checkbox in BREAKPOINTS), then Continue
  await page.locator('.debug-breakpoints .monaco-list-row', { hasText: source }).first()
    .locator('input[type="checkbox"]').first().click();
  steps.breakpoints = await rows(page, '.debug-breakpoints .monaco-list-row');
  await wb.shot('break-on-value-change-set');
  await page.locator('.editor-group-container .monaco-editor .view-lines').first().click();
  await page.keyboard.press('F5');
  steps.changed = await wb.waitForTop(new RegExp(`bump.*${source} (${args.lines.bump}|${args.lines.afterBump}):`));
  steps.changedTop = (await wb.topFrame()).text;
  steps.pausedOnChange = await wb.pausedOn();
  steps.counter = await wb.waitForVariable(/^memlab_counter = /).catch(() => '');
  await wb.shot('stopped-where-memlab_counter-changed');
  steps.continues = await wb.continueToEnd();
});

/** The instruction the debugger marks in the Disassembly view (its address and text), and the
 *  row after it. */
async function currentInstruction(page) {
  return page.evaluate(() => {
    const all = [...document.querySelectorAll('.disassembly-view .monaco-list-row')];
    const at = all.findIndex((r) => r.querySelector('.codicon-debug-stackframe'));
    const text = (row) => (row ? row.innerText.replace(/\s+/g, ' ').trim() : '');
    return { current: text(all[at]), next: text(all[at + 1]) };
  });
}

