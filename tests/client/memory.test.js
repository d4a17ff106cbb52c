'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const budget = require('../../client/out/common/budget.js');
const tree = require('../../client/out/memoryTree.js');
const { MemoryModel, applyChange } = require('../../client/out/memoryModel.js');

const store = (over = {}) => ({
    target: 'memory',
    path: '/ws/.my_agent_core/memory/MEMORY.md',
    used: 100,
    limit: 2200,
    entries: ['Project uses pnpm\nnot npm', 'Tests: pytest -q'],
    available: true,
    ...over,
});
const storeNode = (s) => ({ kind: 'store', folderUri: 'file:///ws', store: s });

test('budget levels: ok below the share, near from share*limit, over above the limit', () => {
    assert.equal(budget.budgetLevel(100, 2200, 0.9), 'ok');
    assert.equal(budget.budgetLevel(1980, 2200, 0.9), 'near');
    assert.equal(budget.budgetLevel(2200, 2200, 0.9), 'near');
    assert.equal(budget.budgetLevel(2201, 2200, 0.9), 'over');
    assert.equal(budget.worst(['ok', 'near']), 'near');
    assert.equal(budget.worst(['near', 'over', 'ok']), 'over');
});

test('store item: file name label, usage description, budget icon', () => {
    const ok = tree.storeTreeItem(storeNode(store()), 0.9);
    assert.equal(ok.label, 'MEMORY.md');
    assert.equal(ok.description, '100/2200 (5%)');
    assert.equal(ok.iconPath.id, 'notebook');
    assert.equal(ok.contextValue, 'myAgent.store');
    assert.equal(ok.collapsibleState, vscode.TreeItemCollapsibleState.Expanded);

    const near = tree.storeTreeItem(storeNode(store({ target: 'user', used: 1300, limit: 1375 })), 0.9);
    assert.equal(near.label, 'USER.md');
    assert.equal(near.iconPath.id, 'warning');
    assert.equal(near.iconPath.color.id, 'list.warningForeground');
    assert.match(near.tooltip, /Near budget/);

    const over = tree.storeTreeItem(storeNode(store({ used: 2300 })), 0.9);
    assert.equal(over.iconPath.id, 'error');
    assert.equal(over.iconPath.color.id, 'list.errorForeground');
    assert.match(over.tooltip, /2300\/2200/);

    const bad = tree.storeTreeItem(storeNode(store({ available: false, error: 'symlink' })), 0.9);
    assert.equal(bad.description, 'unavailable');
    assert.equal(bad.iconPath.id, 'error');
    assert.match(bad.tooltip, /symlink/);

    const empty = tree.storeTreeItem(storeNode(store({ entries: [], used: 0 })), 0.9);
    assert.equal(empty.collapsibleState, vscode.TreeItemCollapsibleState.None);
});

test('entry items: first line as label, full text as tooltip, open command', () => {
    const nodes = tree.entryNodes(storeNode(store()));
    assert.equal(nodes.length, 2);
    const item = tree.entryTreeItem(nodes[0]);
    assert.equal(item.label, 'Project uses pnpm');
    assert.equal(item.tooltip, 'Project uses pnpm\nnot npm');
    assert.equal(item.description, '2 lines');
    assert.equal(item.contextValue, 'myAgent.entry');
    assert.equal(item.command.command, 'myAgent.memory.openEntry');
    assert.equal(item.command.arguments[0], nodes[0]);
    assert.notEqual(tree.entryTreeItem(nodes[1]).id, item.id);
    const long = budget.entryLabel('x'.repeat(200));
    assert.equal(long.length, 80);
    assert.ok(long.endsWith('…'));
});

test('locateEntry finds the line of an entry (CRLF, BOM, repeated text, fallback by delimiters)', () => {
    const text = '\uFEFFfirst\r\n§\r\nsecond line\r\nmore\r\n§\r\nthird\r\n';
    const entries = ['first', 'second line\nmore', 'third'];
    assert.equal(budget.locateEntry(text, entries, 0), 0);
    assert.equal(budget.locateEntry(text, entries, 1), 2);
    assert.equal(budget.locateEntry(text, entries, 2), 5);
    const dup = 'same\n§\nsame\n';
    assert.equal(budget.locateEntry(dup, ['same', 'same'], 1), 2);
    // The state says something the file no longer holds: count delimiters instead.
    assert.equal(budget.locateEntry('a\n§\nb\n§\nc', ['x', 'y', 'z'], 2), 4);
});

test('multi-line entries survive the one-line input box', () => {
    const entry = 'line one\nline two\n- item';
    const shown = budget.toSingleLine(entry);
    assert.equal(shown.includes('\n'), false);
    assert.equal(budget.fromSingleLine(shown), entry);
    assert.equal(budget.fromSingleLine('a⏎b'), 'a\nb');
});

test('memory/changed replaces one store in place; state is never polled', () => {
    const stores = [store(), store({ target: 'user', path: '/ws/.my_agent_core/memory/USER.md', entries: [] })];
    const next = applyChange(stores, {
        folder: 'file:///ws',
        target: 'user',
        path: '/ws/.my_agent_core/memory/USER.md',
        used: 12,
        limit: 1375,
        entries: ['Prefers tabs'],
        source: 'agent',
    });
    assert.equal(next.length, 2);
    assert.deepEqual(next[1].entries, ['Prefers tabs']);
    assert.equal(next[1].used, 12);
    assert.equal(next[0], stores[0]);
    const added = applyChange([], { ...next[1], target: 'memory', folder: 'file:///ws', source: 'disk' });
    assert.equal(added.length, 1);
});

test('tree: one folder shows its files at the top; several folders get folder nodes', async () => {
    vscode.__test.reset();
    const a = vscode.__test.folder('/ws');
    vscode.__test.state.folders = [a];
    const model = new MemoryModel();
    const provider = new tree.MemoryTreeProvider(model, () => 0.9);
    let fired = 0;
    provider.onDidChangeTreeData(() => fired++);

    assert.equal(provider.getChildren()[0].kind, 'message'); // waiting for the server
    const requests = [];
    model.setClient({
        sendRequest: async (method, params) => {
            requests.push([method, params]);
            return { folder: params.folder, stores: [store(), store({ target: 'user', entries: [] })] };
        },
    });
    await model.refresh();
    assert.deepEqual(requests, [['myAgent/memory/state', { folder: 'file:///ws' }]]);
    const top = provider.getChildren();
    assert.deepEqual(top.map((n) => n.kind), ['store', 'store']);
    assert.equal(provider.getChildren(top[0]).length, 2);
    assert.ok(fired >= 1);

    model.onChanged({
        folder: 'file:///ws',
        target: 'memory',
        path: '/ws/.my_agent_core/memory/MEMORY.md',
        used: 5,
        limit: 2200,
        entries: ['new'],
        source: 'agent',
    });
    assert.deepEqual(provider.getChildren(provider.getChildren()[0]).map((n) => n.text), ['new']);

    vscode.__test.state.folders = [a, vscode.__test.folder('/other', 'other', 1)];
    assert.deepEqual(provider.getChildren().map((n) => n.kind), ['folder', 'folder']);
    provider.dispose();
    model.dispose();
    vscode.__test.reset();
});

test('a failing memory/state shows the error in the tree', async () => {
    vscode.__test.reset();
    vscode.__test.state.folders = [vscode.__test.folder('/ws')];
    const model = new MemoryModel();
    model.setClient({ sendRequest: async () => { throw new Error('unknown folder'); } });
    await model.refresh();
    const provider = new tree.MemoryTreeProvider(model, () => 0.9);
    const [node] = provider.getChildren();
    assert.equal(node.kind, 'message');
    assert.equal(node.error, true);
    assert.equal(provider.getTreeItem(node).iconPath.id, 'error');
    vscode.__test.reset();
});
