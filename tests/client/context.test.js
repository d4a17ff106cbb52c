'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { JSDOM } = require('jsdom');
const vscode = require('vscode');
const model = require('../../client/out/chatModel.js');
const chips = require('../../client/out/contextChips.js');
const panels = require('../../client/out/webview/panels.js');
const render = require('../../client/out/webview/render.js');
const { activeEditorContext } = require('../../client/out/chat/editorContext.js');
const { parseWebviewMessage } = require('../../client/out/webview/messages.js');
const { uiStrings } = require('../../client/out/chat/strings.js');
const { OpenBufferSync, isMemoryFile } = require('../../client/out/common/bufferSync.js');

const strings = uiStrings();
const sel = (sl, sc, el, ec) => ({ start: { line: sl, character: sc }, end: { line: el, character: ec }, isEmpty: sl === el && sc === ec });

test('chip labels use 1-based lines; a selection ending at column 0 does not count that line', () => {
    assert.equal(chips.chipLabel('src/a.ts'), 'src/a.ts');
    assert.equal(chips.chipLabel('src/a.ts', { start: { line: 0, character: 2 }, end: { line: 0, character: 9 } }), 'src/a.ts:1');
    assert.equal(chips.chipLabel('src/a.ts', { start: { line: 9, character: 0 }, end: { line: 19, character: 4 } }), 'src/a.ts:10-20');
    assert.equal(chips.chipLabel('src/a.ts', { start: { line: 9, character: 0 }, end: { line: 12, character: 0 } }), 'src/a.ts:10-12');
});

test('an editor gives one chip per non-empty selection, or the whole file; the wire shape keeps LSP positions', () => {
    const uri = 'file:///w/src/a.ts';
    const whole = chips.chipsFromSelections(uri, 'src/a.ts', [sel(3, 4, 3, 4)]);
    assert.deepEqual(whole, [{ id: uri, uri, label: 'src/a.ts' }]);
    const two = chips.chipsFromSelections(uri, 'src/a.ts', [sel(0, 0, 2, 0), sel(5, 1, 5, 1), sel(7, 3, 9, 8)]);
    assert.deepEqual(two.map((c) => c.label), ['src/a.ts:1-2', 'src/a.ts:8-10']);
    assert.deepEqual(chips.toContextRefs(two), [
        { uri, range: { start: { line: 0, character: 0 }, end: { line: 2, character: 0 } } },
        { uri, range: { start: { line: 7, character: 3 }, end: { line: 9, character: 8 } } },
    ]);
    assert.deepEqual(chips.toContextRefs(whole), [{ uri }]);
    assert.notEqual(two[0].id, two[1].id);
});

test('reducer: chips are deduplicated, capped, removable, and move onto the turn that sends them', () => {
    const c = (i) => ({ id: `u${i}`, uri: `file:///w/${i}.ts`, label: `${i}.ts` });
    let s = model.reduce(model.initialState(), { type: 'sessionStarted', sessionId: 's1', folderName: 'w', memory: true });
    s = model.reduce(s, { type: 'attach', chips: [c(1), c(1), c(2)] });
    s = model.reduce(s, { type: 'attach', chips: [c(2)] });
    assert.deepEqual(s.attachments.map((x) => x.id), ['u1', 'u2']);
    s = model.reduce(s, { type: 'detach', id: 'u1' });
    assert.deepEqual(s.attachments.map((x) => x.id), ['u2']);
    const many = model.reduce(s, { type: 'attach', chips: Array.from({ length: 20 }, (_, i) => c(i + 10)) });
    assert.equal(many.attachments.length, model.MAX_ATTACHMENTS);
    // New chat keeps them (a draft for the next message).
    s = model.reduce(s, { type: 'sessionStarted', sessionId: 's2', folderName: 'w', memory: true });
    assert.deepEqual(s.attachments.map((x) => x.id), ['u2']);
    s = model.reduce(s, { type: 'userSent', text: 'explain', context: s.attachments });
    assert.deepEqual(s.attachments, []);
    assert.deepEqual(s.turns[0].context.map((x) => x.label), ['2.ts']);
    // The transcript shows what was attached (no remove button there).
    const doc = new JSDOM(`<body>${render.renderTurn(s.turns[0], strings, render.createMarkdown(), (h) => h)}</body>`).window.document;
    assert.match(doc.querySelector('.sent-context').textContent, /Attached:\s*2\.ts/);
    assert.equal(doc.querySelectorAll('.sent-context button').length, 0);
});

test('waiting chips render with a labelled remove button each, escaped', () => {
    assert.equal(panels.renderAttachments([], strings), '');
    const html = panels.renderAttachments([{ id: 'x"><img>', uri: 'file:///w/<b>.ts', label: '<img src=x onerror=1>.ts:1-2' }], strings);
    const doc = new JSDOM(`<body>${html}</body>`).window.document;
    assert.equal(doc.querySelectorAll('img').length, 0);
    const button = doc.querySelector('button.chip-remove');
    assert.equal(button.dataset.action, 'detach');
    assert.equal(button.dataset.chipId, 'x"><img>');
    assert.equal(button.getAttribute('aria-label'), 'Remove <img src=x onerror=1>.ts:1-2');
    assert.equal(doc.querySelector('ul.chips').getAttribute('aria-label'), 'Context for the next message');
    assert.deepEqual(parseWebviewMessage({ type: 'detach', id: 'x' }), { type: 'detach', id: 'x' });
    assert.equal(parseWebviewMessage({ type: 'detach' }), undefined);
    assert.deepEqual(parseWebviewMessage({ type: 'attach', uri: 'file:///etc/passwd' }), { type: 'attach' }, 'the webview cannot choose the file');
});

test('activeEditorContext: the active editor inside a workspace folder, with clear reasons otherwise', () => {
    vscode.__test.reset();
    vscode.__test.state.folders = [vscode.__test.folder('/w', 'w')];
    assert.match(activeEditorContext().error, /Open a file in the editor first/);
    vscode.__test.state.activeEditor = { uri: vscode.Uri.parse('untitled:Untitled-1') };
    assert.match(activeEditorContext().error, /Only files saved in the workspace can be attached \(this editor is untitled\)/);
    vscode.__test.state.activeEditor = { uri: vscode.Uri.file('/etc/hosts') };
    assert.match(activeEditorContext().error, /\/etc\/hosts is outside the workspace folders/);
    vscode.__test.state.activeEditor = { uri: vscode.Uri.file('/w/src/app.ts'), selections: [sel(4, 0, 6, 3)] };
    const ok = activeEditorContext();
    assert.deepEqual(ok.chips.map((c) => [c.label, c.uri]), [['src/app.ts:5-7', 'file:///w/src/app.ts']]);
});

// ---- open files mirrored to the server -----------------------------------------------------------------------

test('isMemoryFile matches exactly what the language client syncs itself', () => {
    assert.equal(isMemoryFile('/w/.my_agent_core/memory/MEMORY.md'), true);
    assert.equal(isMemoryFile('/w/.my_agent_core/memory/USER.md'), true);
    assert.equal(isMemoryFile('/w/.my_agent_core/memory/NOTES.md'), false);
    assert.equal(isMemoryFile('/w/memory/MEMORY.md'), false);
    assert.equal(isMemoryFile('/w/src/MEMORY.md'), false);
});

test('open workspace files reach the server as didOpen/didChange/didClose (unsaved text), memory files and others do not', () => {
    vscode.__test.reset();
    vscode.__test.state.folders = [vscode.__test.folder('/w', 'w')];
    const doc = (p, text, version = 1) => ({ uri: vscode.Uri.file(p), languageId: 'typescript', version, getText: () => text });
    const app = doc('/w/src/app.ts', 'const a = 1;\n');
    vscode.__test.state.textDocuments = [app, doc('/w/.my_agent_core/memory/MEMORY.md', 'x'), doc('/elsewhere/b.ts', 'y'), doc('/w/.git/HEAD', 'ref')];
    const sent = [];
    const sync = new OpenBufferSync({ sendNotification: (method, params) => sent.push([method, params]) }, 1000);
    sync.start();
    assert.deepEqual(sent, [
        ['textDocument/didOpen', { textDocument: { uri: 'file:///w/src/app.ts', languageId: 'typescript', version: 1, text: 'const a = 1;\n' } }],
    ]);
    // Typing (unsaved) is mirrored as incremental changes.
    const range = { start: { line: 0, character: 10 }, end: { line: 0, character: 11 } };
    vscode.__test.docEvents.change.fire({ document: { ...app, version: 2 }, contentChanges: [{ range, rangeLength: 1, text: '2' }] });
    assert.deepEqual(sent[1], [
        'textDocument/didChange',
        { textDocument: { uri: 'file:///w/src/app.ts', version: 2 }, contentChanges: [{ range, rangeLength: 1, text: '2' }] },
    ]);
    // A dirty-state-only event sends nothing; opening the same document twice announces it once.
    vscode.__test.docEvents.change.fire({ document: app, contentChanges: [] });
    vscode.__test.docEvents.open.fire(app);
    assert.equal(sent.length, 2);
    // Too big to mirror: left to the server's disk read.
    vscode.__test.docEvents.open.fire(doc('/w/big.txt', 'x'.repeat(1001)));
    assert.equal(sent.length, 2);
    const small = doc('/w/small.txt', 'ok');
    vscode.__test.docEvents.open.fire(small);
    vscode.__test.docEvents.change.fire({ document: small, contentChanges: [{ range, rangeLength: 0, text: 'y'.repeat(2000) }] });
    assert.deepEqual(sent.slice(-1)[0], ['textDocument/didClose', { textDocument: { uri: 'file:///w/small.txt' } }]);
    vscode.__test.docEvents.close.fire(app);
    assert.deepEqual(sent.slice(-1)[0], ['textDocument/didClose', { textDocument: { uri: 'file:///w/src/app.ts' } }]);
    assert.equal(sync.size, 0);
    sync.dispose();
    vscode.__test.docEvents.open.fire(doc('/w/late.ts', 'z'));
    assert.equal(sent.at(-1)[0], 'textDocument/didClose', 'nothing after dispose');
});
