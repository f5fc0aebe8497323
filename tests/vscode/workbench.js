// Drives a code-server workbench in headless Chromium (playwright-core from ../shared/vscode-real's
// setup) the way a person does: keyboard shortcuts, the views' own buttons and inputs. Every check
// reads the page's text (rows of CALL STACK, VARIABLES, the debug console), never pixels.
'use strict';
const fs = require('fs');
const path = require('path');

/** Opens `url` with `folder` in a fresh headless Chromium; returns the helpers a scenario uses. */
async function openWorkbench({ R, url, folder, shots }) {
  process.env.TMPDIR = path.join(R, 'tmp');
  fs.mkdirSync(process.env.TMPDIR, { recursive: true });
  fs.mkdirSync(shots, { recursive: true });
  const { chromium } = require(path.join(R, 'drive', 'node_modules', 'playwright-core'));
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    env: { ...process.env, XDG_CONFIG_HOME: path.join(shots, '.chromium-config'), XDG_CACHE_HOME: path.join(shots, '.chromium-cache') },
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const t0 = Date.now();
  const log = (...a) => console.error(`[${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 404/.test(m.text())) log('console.error:', m.text().slice(0, 200)); });
  let shotNumber = 0;
  const wb = {
    page, log, browser,
    /** Saves a screenshot NN-name.png in the output folder. */
    async shot(name) {
      shotNumber += 1;
      const file = path.join(shots, `${String(shotNumber).padStart(2, '0')}-${name}.png`);
      await page.screenshot({ path: file });
      log('screenshot', file);
    },
    /** Runs a command from the Command Palette by its title ("Category: Title"). */
    async command(title) {
      await page.keyboard.press('Control+Shift+P');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ timeout: 10000 });
      await input.fill(`>${title}`);
      const label = title.split(': ').pop();
      await page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor({ timeout: 10000 });
      await page.keyboard.press('Enter');
    },
    /** Opens a file of the folder with Quick Open (Ctrl+P) and waits for its editor. */
    async openFile(relative) {
      await page.keyboard.press('Control+P');
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ timeout: 10000 });
      await input.fill(relative);
      await page.locator('.quick-input-list .monaco-list-row', { hasText: path.basename(relative) }).first().waitFor({ timeout: 15000 });
      await page.keyboard.press('Enter');
      await page.locator('.tabs-container .tab.active', { hasText: path.basename(relative) }).waitFor({ timeout: 15000 });
      await page.locator('.editor-instance .monaco-editor .view-lines').first().waitFor({ timeout: 15000 });
    },
    /** Puts the keyboard focus into the active editor (F5, F10... go to the workbench from there). */
    async focusEditor() {
      await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
    },
    /** Adds a function breakpoint as typed into the BREAKPOINTS view's input. */
    async addFunctionBreakpoint(name) {
      // With Run and Debug open, the BREAKPOINTS view (hidden while there is no breakpoint and no
      // launch.json) appears with the new breakpoint's input focused.
      await page.keyboard.press('Control+Shift+D');
      await page.locator('.debug-pane, .welcome-view').first().waitFor({ timeout: 10000 });
      await wb.command('Debug: Add Function Breakpoint');
      const input = page.locator('.debug-breakpoints input[type="text"]').first();
      await input.waitFor({ timeout: 10000 });
      await input.fill(name);
      await page.keyboard.press('Enter');
      await page.locator('.debug-breakpoints .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 10000 });
    },
    /** The class of the icon of the BREAKPOINTS row showing `name`, once it is the verified one
     *  (`codicon-debug-breakpoint-function` for a function breakpoint) or after `timeout` ms:
     *  the adapter's "changed" event may be rendered a moment after the stop. */
    async breakpointIcon(name, timeout = 5000) {
      const icon = page.locator('.debug-breakpoints .monaco-list-row', { hasText: name }).first().locator('[class*="codicon-debug-breakpoint"]').first();
      await icon.waitFor({ timeout: 10000 });
      const end = Date.now() + timeout;
      let classes = await icon.getAttribute('class');
      while (/-unverified\b/.test(classes) && Date.now() < end) {
        await page.waitForTimeout(250);
        classes = await icon.getAttribute('class');
      }
      return classes;
    },
    /** Sets a string user setting in the Settings editor (Ctrl+,), as a person would, and closes
     *  it. (Writing settings.json from outside is not reliably picked up by code-server.) */
    async setUserSetting(id, value) {
      await page.keyboard.press('Control+Comma');
      await page.locator('.settings-editor').waitFor({ timeout: 15000 });
      await page.waitForTimeout(500);
      await page.keyboard.type(id);  // the search box has the focus
      const input = page.locator('.settings-editor .setting-item-contents', { hasText: id.split('.').pop() })
        .locator('.setting-item-control input').first();
      await input.waitFor({ timeout: 15000 });
      await input.fill(value);
      await page.keyboard.press('Tab');
      await page.waitForTimeout(1500);  // the Settings editor saves after a short delay
      await page.keyboard.press('Control+W');
      await page.waitForTimeout(500);
    },
    /** Clicks the glyph margin of `line` in the active editor (after revealing it): a breakpoint. */
    async clickGutter(line) {
      await wb.goToLine(line);
      const number = page.locator('.editor-group-container.active .margin-view-overlays .line-numbers', { hasText: new RegExp(`^${line}$`) }).first();
      const box = await number.boundingBox();
      const margin = await page.locator('.editor-group-container.active .margin').first().boundingBox();
      await page.mouse.click(margin.x + 8, box.y + box.height / 2);
      await page.locator('.editor-group-container.active .codicon-debug-breakpoint, .editor-group-container.active .codicon-debug-breakpoint-unverified').first().waitFor({ timeout: 10000 });
    },
    /** Right-clicks `row` and picks the enabled menu item `label` (a RegExp or text); returns
     *  the menu's item texts. A pick can land while the menu is still settling (the item shows
     *  focused, nothing runs): it is clicked again until the menu closes, as a person would. */
    async contextMenu(row, label, timeout = 15000) {
      await row.click({ button: 'right' });
      const menu = page.locator('.context-view .monaco-menu');
      await menu.waitFor({ timeout: 10000 });
      const item = menu.locator('.action-item:not(.disabled) .action-label', { hasText: label }).first();
      await item.waitFor({ timeout });
      const texts = (await menu.locator('.action-label').allInnerTexts()).map(squash).filter(Boolean);
      for (let attempt = 1; ; attempt += 1) {
        await item.click();
        try {
          await menu.waitFor({ state: 'hidden', timeout: 3000 });
          return texts;
        } catch (err) {
          if (attempt === 3) throw err;
          log(`the menu is still open after picking ${label}: picked again`);
        }
      }
    },
    /** Moves the cursor to `line` (Ctrl+G). */
    async goToLine(line) {
      await wb.focusEditor();
      await page.keyboard.press('Control+G');
      await page.locator('.quick-input-widget input').waitFor({ timeout: 10000 });
      await page.keyboard.type(String(line));
      await page.keyboard.press('Enter');
    },
    /** Texts of the CALL STACK rows (thread rows included), whitespace collapsed. */
    async callStack() {
      return rows(page, '.debug-call-stack .monaco-list-row');
    },
    /** Texts of the VARIABLES rows, whitespace collapsed. */
    async variables() {
      return rows(page, '.debug-variables .monaco-list-row');
    },
    /** Waits until a CALL STACK row matches `pattern` and no request is pending; returns the rows. */
    async waitForStack(pattern, timeout = 120000) {
      await page.waitForFunction(([source, flags]) => {
        const re = new RegExp(source, flags);
        return [...document.querySelectorAll('.debug-call-stack .monaco-list-row')].some((r) => re.test(r.innerText.replace(/\s+/g, ' ')));
      }, [pattern.source, pattern.flags], { timeout });
      await page.waitForTimeout(500);
      return wb.callStack();
    },
    /** What CALL STACK says the debuggee paused on: its header's message (one thread: VS Code
     *  shows no thread row) or else the first row's state label. */
    async pausedOn() {
      return page.evaluate(() => {
        const header = document.querySelector('.call-stack-state-message');
        const label = document.querySelector('.debug-call-stack .monaco-list-row .state');
        return ((header && !header.hidden && header.innerText) || (label && label.innerText) || '').trim();
      });
    },
    /** The first CALL STACK frame row (not a thread, session or "Show more" row) and its text. */
    async topFrame() {
      const all = await page.locator('.debug-call-stack .monaco-list-row').all();
      for (const row of all) {
        if (await row.locator('.stack-frame').count()) {
          return { row, text: squash(await row.innerText()) };
        }
      }
      throw new Error('no stack frame row in CALL STACK');
    },
    /** Expands every collapsed scope/variable row whose text matches `pattern` (e.g. /Locals|Arguments/). */
    async expandVariables(pattern) {
      for (const row of await page.locator('.debug-variables .monaco-list-row[aria-expanded="false"]').all()) {
        const text = await row.innerText({ timeout: 1000 }).catch(() => '');  // rows come and go as it renders
        if (text && pattern.test(squash(text))) {
          await row.click({ timeout: 1000 }).catch(() => {});
          await page.waitForTimeout(300);
        }
      }
    },
    /** Clicks the "Show N More Stack Frames" rows (VS Code folds subtle frames behind them)
     * until none is left or `limit` were clicked; returns the rows afterwards. */
    async showAllFrames(limit = 5) {
      for (let i = 0; i < limit; i += 1) {
        const more = page.locator('.debug-call-stack .monaco-list-row', { hasText: /^Show \d+ More/ }).first();
        if (!(await more.count())) break;
        await more.click();
        await page.waitForTimeout(800);
      }
      return wb.callStack();
    },
    /** Every CALL STACK row in order, scrolling through the list (it renders only what is in view). */
    async fullCallStack() {
      const seen = new Map();
      await callStackToTop();
      for (let unchanged = 0; unchanged < 2;) {
        const before = seen.size;
        for (const [index, text] of await indexedRows(page)) seen.set(index, text);
        unchanged = seen.size === before ? unchanged + 1 : 0;
        await scrollCallStack(300);
      }
      await callStackToTop();
      return [...seen.entries()].sort((a, b) => a[0] - b[0]).map(([, text]) => text);
    },
    /** Selects the CALL STACK frame row whose text matches `pattern` (a string it contains, or a
     * RegExp) as the keyboard does: the list focused, Home, Down to that row, Enter. (Clicking
     * needs the row in view, and the virtual list renders rows beyond its view: 1.139's did
     * not always scroll to it.) */
    async selectFrame(pattern) {
      await callStackToTop();
      const focused = page.locator('.debug-call-stack .monaco-list-row.focused').first();
      const wanted = (text) => (pattern instanceof RegExp ? pattern.test(text) : text.includes(pattern));
      for (let row = 0; row < 300; row += 1) {
        const text = squash(await focused.innerText({ timeout: 2000 }).catch(() => ''));
        if (wanted(text)) {
          await page.keyboard.press('Enter');
          await page.waitForTimeout(800);
          return;
        }
        await page.keyboard.press('ArrowDown');
        await page.waitForTimeout(30);
      }
      throw new Error(`no CALL STACK row matches ${pattern}`);
    },
    /** Waits for a VARIABLES row matching `pattern`, expanding on the way the collapsed rows
     *  that match `expand` (every row by default; a scope's name keeps the others folded, as
     *  a person leaves them, so that the row looked for stays in view). The tree re-renders
     *  as the adapter answers: a row expanded too early is expanded again. */
    async waitForVariable(pattern, timeout = 30000, expand = /./) {
      const end = Date.now() + timeout;
      while (Date.now() < end) {
        const found = (await wb.variables()).find((t) => pattern.test(t));
        if (found) return found;
        await wb.expandVariables(expand);
        await page.waitForTimeout(500);
      }
      throw new Error(`no VARIABLES row matches ${pattern}: ${JSON.stringify(await wb.variables())}`);
    },
    /** The active editor's tab title, and the line the debugger marks there (the arrow of the
     * top or the selected stack frame in the glyph margin), read as that line's line number. */
    async editorPosition() {
      // textContent of the name: 1.139 shows a file's stem and extension as separate blocks
      const tab = squash(await page.locator('.editor-group-container.active .tabs-container .tab.active .monaco-icon-label-container').first().textContent());
      await page.locator(`.editor-group-container.active ${FRAME_GLYPH}`).first().waitFor({ timeout: 15000 });
      const line = await page.evaluate((glyphSelector) => {
        const group = document.querySelector('.editor-group-container.active');
        const glyph = group.querySelector(glyphSelector).getBoundingClientRect();
        const middle = glyph.top + glyph.height / 2;
        const number = [...group.querySelectorAll('.line-numbers')].find((n) => {
          const box = n.getBoundingClientRect();
          return box.top <= middle && middle <= box.bottom;
        });
        return number ? Number(number.textContent.trim()) : null;
      }, FRAME_GLYPH);
      return { tab, line };
    },
    /** Evaluates `expression` in the DEBUG CONSOLE; waits for an output row matching `expect`
     * after the echoed expression and returns that row's text. */
    async evaluate(expression, expect, timeout = 30000) {
      await wb.command('Debug Console: Focus on Debug Console View');
      // Click the input's editor: 1.139's editors take keys through EditContext, not a textarea.
      const input = page.locator('.repl-input-wrapper .monaco-editor .view-lines').first();
      await input.waitFor({ timeout: 10000 });
      await input.click();
      await page.keyboard.type(expression);
      await page.keyboard.press('Enter');
      await page.waitForFunction(([source, flags]) => {
        const texts = [...document.querySelectorAll('.repl .monaco-list-row')].map((r) => r.innerText.replace(/\s+/g, ' ').trim());
        return texts.some((t) => new RegExp(source, flags).test(t));
      }, [expect.source, expect.flags], { timeout });
      const texts = await rows(page, '.repl .monaco-list-row');
      return texts.filter((t) => expect.test(t)).pop();
    },
    /** Waits until the first frame row of CALL STACK matches `pattern`; returns all rows. */
    async waitForTop(pattern, timeout = 120000) {
      await page.waitForFunction(([source, flags]) => {
        const top = [...document.querySelectorAll('.debug-call-stack .monaco-list-row')].find((r) => r.querySelector('.stack-frame'));
        return top !== undefined && new RegExp(source, flags).test(top.innerText.replace(/\s+/g, ' '));
      }, [pattern.source, pattern.flags], { timeout });
      await page.waitForTimeout(500);
      return wb.callStack();
    },
    /** Presses a debug key (F10, Shift+F11...) and waits for the next stop's top frame to match `pattern`. */
    async debugKey(key, pattern) {
      await page.keyboard.press(key);
      return wb.waitForTop(pattern);
    },
    /** Presses Continue until the session ends (the debug toolbar goes away); returns how many. */
    async continueToEnd(limit = 10) {
      for (let i = 0; i < limit; i += 1) {
        if (!(await page.locator('.debug-toolbar').isVisible())) return i;
        await page.keyboard.press('F5');
        await page.waitForTimeout(2000);
      }
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 60000 });
      return limit;
    },
  };
  /** Focuses CALL STACK on its first row (Home), which scrolls it there. */
  async function callStackToTop() {
    await page.locator('.debug-call-stack .monaco-list').first().focus();
    await page.keyboard.press('Home');
    await page.waitForTimeout(300);
  }
  /** Turns the mouse wheel over CALL STACK by `dy` pixels. */
  async function scrollCallStack(dy) {
    const box = await page.locator('.debug-call-stack').first().boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + Math.min(box.height / 2, 40));
    await page.mouse.wheel(0, dy);
    await page.waitForTimeout(150);
  }
  await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`);
  await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
  await page.waitForSelector('.explorer-folders-view .monaco-list-row', { timeout: 90000 });
  await page.waitForFunction(() => !document.body.innerText.includes('Activating Extensions'), null, { timeout: 60000 }).catch(() => log('still activating'));
  await page.waitForTimeout(1000);
  return wb;
}

/** The glyphs VS Code puts in the margin of the top stack frame's line and of the selected frame's. */
const FRAME_GLYPH = '.codicon-debug-stackframe-focused, .codicon-debug-stackframe';

function squash(text) {
  return text.replace(/\s+/g, ' ').trim();
}

/** The rendered CALL STACK rows as [list index, text] pairs. */
async function indexedRows(page) {
  return page.locator('.debug-call-stack .monaco-list-row').evaluateAll((all) =>
    all.map((r) => [Number(r.getAttribute('data-index')), r.innerText.replace(/\s+/g, ' ').trim()]));
}

/** The texts of the rows `selector` finds, each on one line. */
async function rows(page, selector) {
  return (await page.locator(selector).allInnerTexts()).map(squash);
}

/** The Hex Editor's row at `offset` (its webview is a frame of the page), as "OFFSET HH HH ...". */
async function hexRow(page, offset, timeout = 30000) {
  const end = Date.now() + timeout;
  while (Date.now() < end) {
    for (const frame of page.frames()) {
      const text = await frame.evaluate(() => (document.body ? document.body.innerText : '')).catch(() => '');
      const match = new RegExp(`${offset}((?:\\s+[0-9A-F]{2}){16})`).exec(text);
      if (match) return squash(`${offset}${match[1]}`);
    }
    await page.waitForTimeout(500);
  }
  throw new Error(`the memory view shows no row ${offset}`);
}

/** Runs `scenario(wb, args)`; prints its result as the last line of stdout (JSON); exit 1 on failure. */
async function main(scenario) {
  const args = JSON.parse(process.argv[2]);
  const wb = await openWorkbench(args);
  const result = { ok: false, steps: {} };
  try {
    await scenario(wb, args, result.steps);
    result.ok = true;
  } catch (error) {
    result.error = String(error && error.message ? error.message.split('\n')[0] : error);
    wb.log('FAILED:', result.error);
    result.steps.failureStack = await wb.callStack().catch(() => []);
    result.steps.failureVariables = await wb.variables().catch(() => []);
    await wb.shot('failure').catch(() => {});
    process.exitCode = 1;
  } finally {
    await wb.browser.close();
  }
  console.log(JSON.stringify(result));
}

module.exports = { hexRow, main, rows, squash };
