#!/usr/bin/env node
// A Playwright driver the Python e2e tests talk to over stdio (one JSON object per line each way), so
// one browser stays open across a whole test module. Requests: {id, op, ...}; answers: {id, ok, result}
// or {id, ok: false, error}. Ops: launch, eval, screenshot, close. `eval` runs an async function body
// with (page, h, args) in scope, where h holds the workbench helpers below.
'use strict';
const path = require('path');
const readline = require('readline');

const toolsDir = process.env.MY_AGENT_VSCODE_DIR;
const { chromium } = require(path.join(toolsDir, 'node_modules', 'playwright-core'));

let browser = null;
let page = null;
const consoleErrors = [];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Workbench helpers: keyboard-first, robust selectors (aria labels, .monaco-list-row, .markers-panel).
const h = {
  sleep,

  async waitFor(fn, { timeout = 30000, interval = 200, what = 'condition' } = {}) {
    const end = Date.now() + timeout;
    let last;
    while (Date.now() < end) {
      try {
        last = await fn();
        if (last) return last;
      } catch (e) {
        last = e;
      }
      await sleep(interval);
    }
    throw new Error(`timed out after ${timeout} ms waiting for ${what} (last: ${String(last)})`);
  },

  async dismissNotifications() {
    // Toasts steal focus; clear them through the command, not by clicking.
    await page.keyboard.press('Escape');
  },

  async quickInputRows() {
    return page.$$eval('.quick-input-widget .quick-input-list .monaco-list-row', (rows) =>
      rows.map((r) => r.getAttribute('aria-label') || r.textContent || ''),
    );
  },

  // Runs a command by its palette title (F1, type, pick the row whose label matches exactly, else first).
  // With `wait` (ms), a command not listed yet (its extension's contributions still registering) is looked
  // for again, the palette reopened, until it is listed.
  async palette(title, { timeout = 15000, wait = 0 } = {}) {
    const end = Date.now() + wait;
    for (;;) {
      await page.keyboard.press('Escape');
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input.input');
      await input.waitFor({ state: 'visible', timeout });
      await input.fill('>' + title);
      const rows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
      await h.waitFor(async () => (await rows.count()) > 0, { timeout, what: `palette rows for "${title}"` });
      const labels = await h.quickInputRows();
      const want = title.toLowerCase();
      let idx = labels.findIndex((l) => l.toLowerCase().split(',')[0].trim().endsWith(want));
      if (idx < 0) idx = labels.findIndex((l) => l.toLowerCase().includes(want));
      if (idx >= 0) {
        await rows.nth(idx).click();
        await input.waitFor({ state: 'hidden', timeout }).catch(() => {});
        return labels[idx];
      }
      if (Date.now() >= end) throw new Error(`command "${title}" not in the palette; rows: ${JSON.stringify(labels)}`);
      await page.keyboard.press('Escape');
      await sleep(300);
    }
  },

  // Opens a workspace file by its relative path through Quick Open (Ctrl+P).
  async openFile(rel, { timeout = 20000 } = {}) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input.input');
    await input.waitFor({ state: 'visible', timeout });
    await input.fill(rel);
    const base = rel.split('/').pop();
    const rows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
    await h.waitFor(
      async () => {
        const labels = await h.quickInputRows();
        return labels.some((l) => l.includes(base));
      },
      { timeout, what: `quick open result for ${rel}` },
    );
    // Pick the row whose description holds the folder path, when several files share the name.
    const labels = await h.quickInputRows();
    const dir = rel.split('/').slice(0, -1).join('/');
    let idx = labels.findIndex((l) => l.includes(base) && (!dir || l.includes(dir)));
    if (idx < 0) idx = labels.findIndex((l) => l.includes(base));
    await rows.nth(idx).click();
    await h.waitFor(
      async () => {
        const tab = await page.$(`.tabs-container .tab.active[aria-label*="${base}"]`);
        return tab !== null;
      },
      { timeout, what: `editor tab ${base}` },
    );
    await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
  },

  // Text of every row of the Problems panel (the aria labels carry severity, message, source and code).
  async problems() {
    return page.$$eval('.markers-panel .monaco-list-row', (rows) =>
      rows.map((r) => (r.getAttribute('aria-label') || '') + ' || ' + (r.textContent || '')),
    );
  },

  // Status-bar problem counters: {errors, warnings}.
  async problemCounts() {
    const label = await page
      .locator('#status\\.problems, .statusbar-item[id="status.problems"]')
      .first()
      .getAttribute('aria-label')
      .catch(() => '');
    const num = (re) => Number(((label || '').match(re) || [])[1] || 0);
    // "Errors: 1, Warnings: 2" (or "No Problems").
    return { errors: num(/errors?:\s*(\d+)/i), warnings: num(/warnings?:\s*(\d+)/i), label };
  },

  // The whole text of the active editor (select all + copy + read the clipboard): Monaco renders only the
  // visible lines, so reading the DOM would miss the rest of a long document.
  async editorFullText() {
    await page.evaluate(() => navigator.clipboard.writeText('\u0000'));
    await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Control+C');
    const text = await h.waitFor(
      async () => {
        const t = await page.evaluate(() => navigator.clipboard.readText());
        return t !== '\u0000' ? { t } : null;
      },
      { timeout: 5000, what: 'the clipboard to receive the editor text' },
    );
    await page.keyboard.press('Escape');
    return text.t;
  },

  async editorText() {
    return page.evaluate(() => {
      const lines = [...document.querySelectorAll('.editor-group-container.active .view-lines .view-line')];
      return lines.map((l) => l.textContent).join('\n');
    });
  },

  // Text of every row of a tree/list view whose pane header matches `title` (e.g. the Memory view).
  async viewRows(title) {
    return page.evaluate((title) => {
      const panes = [...document.querySelectorAll('.pane')];
      const pane = panes.find((p) => {
        const head = p.querySelector('.pane-header');
        return head && (head.getAttribute('aria-label') || head.textContent || '').toLowerCase().includes(title.toLowerCase());
      });
      if (!pane) return null;
      return [...pane.querySelectorAll('.monaco-list-row')].map(
        (r) => (r.getAttribute('aria-label') || '') + ' || ' + (r.textContent || ''),
      );
    }, title);
  },

  // The frame of a webview view/panel whose document contains `selector`.
  async webviewFrame(selector, { timeout = 30000 } = {}) {
    return h.waitFor(
      async () => {
        for (const f of page.frames()) {
          if (f === page.mainFrame()) continue;
          const el = await f.$(selector).catch(() => null);
          if (el) return f;
        }
        return null;
      },
      { timeout, what: `a webview holding ${selector}` },
    );
  },

  // ---- the chat webview (ids and classes: docs/extension.md) -------------------------------------------
  // The chat's frame (the webview whose document has the message box).
  async chatFrame(opts) {
    return h.webviewFrame('textarea#input', opts);
  },

  // Approval cards in the transcript: [{callId, kind, status, title, buttons: [action...]}].
  async approvalCards(frame) {
    return frame.$$eval('.approval:not(.report)', (cards) =>
      cards.map((c) => ({
        callId: c.dataset.callId,
        kind: ([...c.classList].find((x) => x.startsWith('approval-')) || '').slice('approval-'.length),
        status: ['pending', 'approved', 'denied', 'cancelled'].find((x) => c.classList.contains(x)) || '',
        title: (c.querySelector('.approval-title') || {}).textContent || '',
        buttons: [...c.querySelectorAll('button[data-action]')].map((b) => b.dataset.action),
      })),
    );
  },

  // Waits for a card (by call id, or the first one) to reach a status; returns it.
  async waitForCard(frame, { callId, status = 'pending', timeout = 30000 } = {}) {
    return h.waitFor(
      async () => {
        const cards = await h.approvalCards(frame);
        return cards.find((c) => (!callId || c.callId === callId) && c.status === status) || null;
      },
      { timeout, what: `an approval card${callId ? ' ' + callId : ''} that is ${status}` },
    );
  },

  // Presses a card's button (approve | deny | openDiff) the way a keyboard user does: focus it, press Enter.
  // With {mouse: true} it clicks instead. Call ids are matched through the DOM, never spliced into a selector.
  async pressCardButton(frame, callId, action, { mouse = false } = {}) {
    const handle = await frame.evaluateHandle(
      ({ callId, action }) =>
        [...document.querySelectorAll('.approval button[data-action]')].find(
          (b) => b.dataset.action === action && (!callId || b.dataset.callId === callId),
        ) || null,
      { callId, action },
    );
    const button = handle.asElement();
    if (!button) throw new Error(`no ${action} button on card ${callId}`);
    if (mouse) {
      await button.click();
    } else {
      await button.focus();
      await button.press('Enter');
    }
  },

  // Tool rows and approval cards with what their call did: [{callId, card, summary, state, status, elapsed, output,
  // note}] (`state`: done, running, waiting, failed, denied, stopped, timed-out; `status`: the words shown for it).
  async toolRows(frame) {
    return frame.$$eval('.tool[data-call-id], .approval[data-call-id]:not(.report)', (els) =>
      els.map((el) => {
        const text = (sel) => ((el.querySelector(sel) || {}).textContent || '').trim();
        return {
          callId: el.dataset.callId,
          card: el.classList.contains('approval'),
          summary: text('.tool-summary'),
          state: el.dataset.state || '',
          status: text('.status'),
          elapsed: text('.elapsed'),
          output: (el.querySelector('pre.output') || {}).textContent || '',
          note: text('.change-note'),
        };
      }),
    );
  },

  // What has the focus inside the chat: {callId, tag, id} of document.activeElement.
  async chatFocus(frame) {
    return frame.evaluate(() => {
      const a = document.activeElement;
      return a ? { callId: a.dataset.callId || '', tag: a.tagName, id: a.id || '' } : null;
    });
  },

  // The labels of the active editor group's title-bar actions (the diff editor's Approve / Deny).
  async editorTitleActions() {
    return page.$$eval('.editor-group-container.active .editor-actions .action-label', (els) =>
      els.map((e) => e.getAttribute('aria-label') || e.getAttribute('title') || ''),
    );
  },

  // The status bar's cursor position ("Ln 2, Col 5 (27 selected)").
  async cursorPosition() {
    return page.locator('.statusbar-item[id="status.editor.selection"]').first().innerText().catch(() => '');
  },

  // The context chips waiting for the next message (their labels).
  async chatChips(frame) {
    return frame.$$eval('#chips .chip .chip-label', (els) => els.map((e) => e.textContent));
  },

  // Rows of the History panel: [{sessionId, title, current}] (opens the panel when it is closed).
  async historyRows(frame, { timeout = 15000 } = {}) {
    if (await frame.locator('#history-panel').isHidden()) await frame.locator('button#history').click();
    await h.waitFor(async () => (await frame.locator('#history-panel').getAttribute('aria-busy')) === 'false',
      { timeout, what: 'the history panel to load' });
    return frame.$$eval('#history-panel button[data-action="resume"]', (rows) =>
      rows.map((r) => ({
        sessionId: r.dataset.sessionId,
        title: (r.querySelector('.history-title') || {}).textContent || '',
        current: r.getAttribute('aria-current') === 'true',
      })),
    );
  },

  // The cache meter as shown: {text, na, dropped} (null before the first request).
  async cacheMeter(frame) {
    return frame.evaluate(() => {
      const m = document.querySelector('#session .cache');
      return m ? { text: m.textContent, na: m.classList.contains('na'), dropped: m.classList.contains('dropped') } : null;
    });
  },

  consoleErrors() {
    return consoleErrors.slice();
  },
};

async function launch({ url, width = 1400, height = 1000, executablePath, timeout = 90000 }) {
  browser = await chromium.launch({
    executablePath: executablePath || process.env.CHROMIUM || '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
  const context = await browser.newContext({ viewport: { width, height } });
  const origin = new URL(url).origin;
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin }).catch(() => {});
  page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  const t0 = Date.now();
  await page.goto(url, { timeout });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout });
  // The explorer (or any part) rendering means the workbench finished restoring.
  await page.locator('.part.sidebar, .part.editor').first().waitFor({ state: 'visible', timeout });
  return { workbenchMs: Date.now() - t0 };
}

const ops = {
  launch,
  async eval({ code, args }) {
    const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
    const fn = new AsyncFunction('page', 'h', 'args', code);
    return fn(page, h, args || {});
  },
  async screenshot({ path: p, fullPage = false }) {
    if (!page) return null;
    await page.screenshot({ path: p, fullPage, timeout: 15000 });
    return p;
  },
  async close() {
    if (browser) await browser.close().catch(() => {});
    browser = null;
    page = null;
    return true;
  },
};

const rl = readline.createInterface({ input: process.stdin });
let chain = Promise.resolve();
rl.on('line', (line) => {
  chain = chain.then(async () => {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (e) {
      return;
    }
    const reply = { id: msg.id };
    try {
      const op = ops[msg.op];
      if (!op) throw new Error(`unknown op ${msg.op}`);
      reply.result = (await op(msg)) ?? null;
      reply.ok = true;
    } catch (e) {
      reply.ok = false;
      reply.error = (e && e.stack) || String(e);
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  });
});
rl.on('close', async () => {
  await chain;
  if (browser) await browser.close().catch(() => {});
  process.exit(0);
});
