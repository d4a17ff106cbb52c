'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { statusView } = require('../../client/out/statusBar.js');

const stores = (memUsed, userUsed) => [
    { target: 'memory', path: '/m', used: memUsed, limit: 2200, entries: [] },
    { target: 'user', path: '/u', used: userUsed, limit: 1375, entries: [] },
];

test('status bar shows both files as percentages and the figures in the tooltip', () => {
    const v = statusView(stores(1100, 275), 0.9, 'proj');
    assert.equal(v.text, '$(notebook) Memory 50% · User 20%');
    assert.equal(v.level, 'ok');
    assert.match(v.tooltip, /proj/);
    assert.match(v.tooltip, /MEMORY\.md: 1100\/2200/);
    assert.match(v.tooltip, /USER\.md: 275\/1375/);
});

test('status bar warns near budget and errors over budget', () => {
    assert.equal(statusView(stores(2000, 10), 0.9).level, 'near');
    assert.ok(statusView(stores(2000, 10), 0.9).text.startsWith('$(warning)'));
    const over = statusView(stores(10, 1400), 0.9);
    assert.equal(over.level, 'over');
    assert.ok(over.text.startsWith('$(error)'));
    assert.match(over.text, /User 102%/);
});

test('status bar before the first state', () => {
    const v = statusView([], 0.9);
    assert.equal(v.text, '$(notebook) Memory');
    assert.equal(v.level, 'ok');
});

// ---- one figure: the unsaved buffer's while the file has unsaved edits, else the disk's -------------------

const cp = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const rpc = require('vscode-jsonrpc/node');
const vscode = require('vscode');
const { ResponseError } = require('vscode-languageclient/node');
const { shownFigure } = require('../../client/out/common/budget.js');
const { MemoryModel, BUFFER_FIGURE_MS } = require('../../client/out/memoryModel.js');
const tree = require('../../client/out/memoryTree.js');
const { Methods } = require('../../client/out/protocol.js');

const MEM = '/ws/.my_agent_core/memory/MEMORY.md';
const diskStores = () => [
    { target: 'memory', path: MEM, used: 2024, limit: 2200, entries: ['a'], available: true },
    { target: 'user', path: '/ws/.my_agent_core/memory/USER.md', used: 20, limit: 1375, entries: [], available: true },
];

test('one figure: an unsaved buffer is shown, labelled, with the disk figure in the tooltip; else the disk', () => {
    const unsaved = (s) => (s.target === 'memory' ? shownFigure(s, { used: 2398, limit: 2200 }) : shownFigure(s));
    const v = statusView(diskStores(), 0.9, 'proj', unsaved);
    assert.equal(v.text, '$(error) Memory 109% unsaved · User 1%');
    assert.equal(v.level, 'over', 'the level follows the figure shown');
    assert.match(v.tooltip, /MEMORY\.md: 2398\/2200 \(109%\), unsaved edits in the editor \(on disk: 2024\/2200, 92%\)/);
    const disk = statusView(diskStores(), 0.9, 'proj');
    assert.equal(disk.text, '$(warning) Memory 92% · User 1%');
    assert.doesNotMatch(disk.tooltip, /unsaved/);

    // The Memory view's file row says the same figure, the same way.
    const node = { kind: 'store', folderUri: 'file:///ws', store: diskStores()[0], figure: unsaved(diskStores()[0]) };
    const item = tree.storeTreeItem(node, 0.9);
    assert.equal(item.description, 'unsaved · 2398/2200 (109%)');
    assert.equal(item.iconPath.id, 'error');
    assert.match(item.tooltip, /Unsaved edits: this is the editor's figure, the one its diagnostics show\. On disk: 2024\/2200 \(92%\)\./);
    assert.match(item.tooltip, /2398\/2200 characters, 1 entry\./, '"1 entry", not "1 entries"');
    const plain = tree.storeTreeItem({ ...node, figure: undefined }, 0.9);
    assert.equal(plain.description, '2024/2200 (92%)');
});

/** A memory document as the stub's workspace holds it. */
function memoryDoc(fsPath, version, isDirty) {
    const uri = vscode.Uri.file(fsPath);
    return { uri, version, isDirty, isClosed: false, getText: () => '' };
}

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

test('the model asks the server for an unsaved file\'s figure, follows its versions, and drops it on save or close', async () => {
    vscode.__test.reset();
    const calls = [];
    let server = { version: 1, used: 2398 };
    const model = new MemoryModel();
    model.setClient({
        sendRequest: async (method, params) => {
            calls.push({ method, params });
            assert.equal(method, Methods.memoryBuffer);
            return { uri: params.uri, version: server.version, target: 'memory', used: server.used, limit: 2200 };
        },
    });
    const store = diskStores()[0];
    let doc = memoryDoc(MEM, 1, true);
    vscode.__test.state.textDocuments = [doc];
    vscode.__test.docEvents.change.fire({ document: doc, contentChanges: [] });
    vscode.__test.docEvents.change.fire({ document: doc, contentChanges: [] });
    await wait(BUFFER_FIGURE_MS + 60);
    assert.equal(calls.length, 1, 'typing is debounced');
    assert.equal(calls[0].params.uri, vscode.Uri.file(MEM).toString());
    assert.deepEqual(model.figure(store), { used: 2398, limit: 2200, unsaved: true, disk: { used: 2024, limit: 2200 } });

    // The editor is at version 3 but the server answers for 2: asked again until it has seen 3.
    doc = memoryDoc(MEM, 3, true);
    vscode.__test.state.textDocuments = [doc];
    server = { version: 2, used: 2300 };
    vscode.__test.docEvents.change.fire({ document: doc, contentChanges: [] });
    await wait(BUFFER_FIGURE_MS + 40);
    server = { version: 3, used: 2100 };
    await wait(BUFFER_FIGURE_MS * 2 + 60);
    assert.equal(model.figure(store).used, 2100);

    // Saved: the disk's figure again (memory/changed brings the new disk state).
    doc.isDirty = false;
    vscode.__test.docEvents.save.fire(doc);
    assert.deepEqual(model.figure(store), { used: 2024, limit: 2200, unsaved: false });
    // Dirty again, then closed without saving (reverted): the disk's.
    doc.isDirty = true;
    vscode.__test.docEvents.change.fire({ document: doc, contentChanges: [] });
    await wait(BUFFER_FIGURE_MS + 60);
    assert.equal(model.figure(store).unsaved, true);
    vscode.__test.docEvents.close.fire(doc);
    assert.equal(model.figure(store).unsaved, false);
    // Other files are none of its business.
    const before = calls.length;
    vscode.__test.docEvents.change.fire({ document: memoryDoc('/ws/notes/MEMORY.md', 1, true), contentChanges: [] });
    await wait(BUFFER_FIGURE_MS + 40);
    assert.equal(calls.length, before);
    model.dispose();
});

test('an older server without memory/buffer: the disk figure stays, nothing breaks', async () => {
    vscode.__test.reset();
    const model = new MemoryModel();
    model.setClient({ sendRequest: async () => Promise.reject(new ResponseError(-32601, 'Unhandled method myAgent/memory/buffer')) });
    const doc = memoryDoc(MEM, 2, true);
    vscode.__test.state.textDocuments = [doc];
    vscode.__test.docEvents.change.fire({ document: doc, contentChanges: [] });
    await wait(BUFFER_FIGURE_MS + 60);
    assert.deepEqual(model.figure(diskStores()[0]), { used: 2024, limit: 2200, unsaved: false });
    model.dispose();
});

const root = path.join(__dirname, '..', '..');
const python = process.env.MY_AGENT_PYTHON || path.join(root, '.venv', 'bin', 'python');
const skip = fs.existsSync(python) ? false : `no Python with my_agent_core at ${python} (set MY_AGENT_PYTHON)`;

test('against the real server: the status bar, the Memory view, the code lens and the diagnostics tell one figure', { skip, timeout: 60_000 }, async (t) => {
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-figure-'));
    const memDir = path.join(workspace, '.my_agent_core', 'memory');
    fs.mkdirSync(memDir, { recursive: true });
    const file = path.join(memDir, 'MEMORY.md');
    const disk = 'Tests run with uv run pytest -q\n§\n' + 'd'.repeat(1990) + '\n'; // 31 + 3 + 1990 = 2024 (92%)
    fs.writeFileSync(file, disk);
    const proc = cp.spawn(python, ['-m', 'my_agent_core', 'serve'], { cwd: workspace, env: { ...process.env, PYTHONUTF8: '1' }, stdio: ['pipe', 'pipe', 'inherit'] });
    const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
    const diagnostics = [];
    connection.onRequest('workspace/configuration', (p) => p.items.map(() => null));
    connection.onRequest('client/registerCapability', () => null);
    connection.onNotification('textDocument/publishDiagnostics', (p) => diagnostics.push(p));
    connection.onNotification(() => undefined);
    connection.listen();
    t.after(async () => {
        await connection.sendRequest('shutdown').catch(() => undefined);
        await Promise.resolve(connection.sendNotification('exit')).catch(() => undefined);
        connection.dispose();
        proc.kill();
        fs.rmSync(workspace, { recursive: true, force: true });
    });
    const folderUri = vscode.Uri.file(workspace).toString();
    await connection.sendRequest('initialize', {
        processId: process.pid,
        rootUri: folderUri,
        workspaceFolders: [{ uri: folderUri, name: 'ws' }],
        capabilities: { textDocument: { publishDiagnostics: {} } },
        initializationOptions: { myAgent: { memory: { memoryCharLimit: 2200, userCharLimit: 1375, nearBudgetShare: 0.9 } } },
    });
    connection.sendNotification('initialized', {});

    vscode.__test.reset();
    vscode.__test.state.folders = [vscode.__test.folder(workspace, 'ws')];
    const model = new MemoryModel();
    model.setClient({ sendRequest: (method, params) => connection.sendRequest(method, params) });
    await model.refresh();
    const store = () => model.get(vscode.__test.state.folders[0]).stores[0];
    assert.equal(store().used, 2024);

    // The user types 374 characters into the open file and does not save: 2,398 (109%) in the editor.
    const uri = vscode.Uri.file(file).toString();
    const unsaved = disk.replace('Tests run', 'Tests run ' + 'u'.repeat(373));
    connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'markdown', version: 1, text: disk } });
    connection.sendNotification('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: unsaved }] });
    const doc = memoryDoc(file, 2, true);
    vscode.__test.state.textDocuments = [doc];
    vscode.__test.docEvents.change.fire({ document: doc, contentChanges: [] });
    await wait(BUFFER_FIGURE_MS + 400);

    const [lens] = await connection.sendRequest('textDocument/codeLens', { textDocument: { uri } });
    assert.equal(lens.command.title, '2,398 / 2,200 chars · 109% · over budget');
    const over = diagnostics.filter((d) => d.uri === uri).at(-1)?.diagnostics.find((d) => d.code === 'over-budget');
    assert.match(over.message, /over budget: 2398\/2200 chars/);
    const status = statusView(model.get(vscode.__test.state.folders[0]).stores, 0.9, 'ws', (s) => model.figure(s));
    assert.match(status.text, /Memory 109% unsaved/);
    assert.match(status.tooltip, /MEMORY\.md: 2398\/2200 \(109%\), unsaved edits in the editor \(on disk: 2024\/2200, 92%\)/);
    const [node] = tree.storeNodes(model.get(vscode.__test.state.folders[0]), undefined, (s) => model.figure(s));
    assert.equal(tree.storeTreeItem(node, 0.9).description, 'unsaved · 2398/2200 (109%)');

    // Saved: the disk holds the buffer's text, and every figure is the disk's again, unlabelled.
    fs.writeFileSync(file, unsaved);
    connection.sendNotification('textDocument/didSave', { textDocument: { uri }, text: unsaved });
    connection.sendNotification('workspace/didChangeWatchedFiles', { changes: [{ uri, type: 2 }] });
    doc.isDirty = false;
    vscode.__test.docEvents.save.fire(doc);
    await model.refresh();
    const saved = statusView(model.get(vscode.__test.state.folders[0]).stores, 0.9, 'ws', (s) => model.figure(s));
    assert.match(saved.text, /Memory 109%(?! unsaved)/);
    assert.match(saved.tooltip, /MEMORY\.md: 2398\/2200 \(109%\)$/m);
    model.dispose();
});
