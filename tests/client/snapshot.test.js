'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { storeMarks, folderMarks, isUnmarked } = require('../../client/out/snapshotDiff.js');
const tree = require('../../client/out/memoryTree.js');

const FOLDER = 'file:///ws';
const store = (target, entries, over = {}) => ({
    target,
    path: `/ws/.my_agent_core/memory/${target === 'memory' ? 'MEMORY' : 'USER'}.md`,
    used: 10,
    limit: 2200,
    entries,
    available: true,
    ...over,
});
const snapshot = (memory, user = [], over = {}) => ({
    sessionId: 's1',
    folder: FOLDER,
    memory: true,
    stores: [
        { target: 'memory', entries: memory },
        { target: 'user', entries: user },
    ],
    ...over,
});
const folderMemory = (stores) => ({ folder: { uri: vscode.Uri.parse(FOLDER), name: 'ws', index: 0 }, stores, loaded: true });

test('storeMarks: a live entry missing from the snapshot is fresh, a frozen one gone from disk is removed', () => {
    const marks = storeMarks(['uses uv', 'lint with ruff'], ['uses uv', 'old note']);
    assert.deepEqual(marks, { fresh: [false, true], removed: ['old note'] });
    assert.equal(isUnmarked(marks), false);
});

test('storeMarks: identical entries (any order) mark nothing; no snapshot means no marks', () => {
    const same = storeMarks(['a', 'b'], ['b', 'a']);
    assert.deepEqual(same, { fresh: [false, false], removed: [] });
    assert.equal(isUnmarked(same), true);
    assert.equal(storeMarks(['a'], undefined), undefined);
    assert.equal(isUnmarked(undefined), true);
});

test('folderMarks: only for the session folder, with memory on, and available stores', () => {
    const stores = [store('memory', ['uses uv', 'new one']), store('user', ['likes tea'])];
    const snap = snapshot(['uses uv', 'gone'], ['likes tea']);
    const marks = folderMarks(FOLDER, stores, snap);
    assert.deepEqual([...marks.keys()], ['memory']); // USER.md is identical: no entry in the map
    assert.deepEqual(marks.get('memory'), { fresh: [false, true], removed: ['gone'] });

    assert.equal(folderMarks(FOLDER, stores, undefined).size, 0, 'no session, no marks');
    assert.equal(folderMarks('file:///other', stores, snap).size, 0, 'another folder, no marks');
    assert.equal(folderMarks(FOLDER, stores, snapshot([], [], { memory: false, stores: [] })).size, 0);
    const broken = [store('memory', ['x'], { available: false, error: 'symlink' })];
    assert.equal(folderMarks(FOLDER, broken, snap).size, 0);
    assert.equal(folderMarks(FOLDER, stores, snapshot(['uses uv', 'new one'], ['likes tea'])).size, 0);
});

test('tree: fresh entries say "not in this chat", removed ones follow as muted children', () => {
    const fm = folderMemory([store('memory', ['uses uv', 'lint with ruff'])]);
    const [node] = tree.storeNodes(fm, snapshot(['uses uv', 'old note']));
    const children = tree.entryNodes(node);
    assert.deepEqual(
        children.map((c) => [c.kind, c.text]),
        [
            ['entry', 'uses uv'],
            ['entry', 'lint with ruff'],
            ['removed', 'old note'],
        ],
    );
    const kept = tree.entryTreeItem(children[0]);
    assert.equal(kept.description, undefined);
    assert.equal(kept.tooltip, 'uses uv');
    const fresh = tree.entryTreeItem(children[1]);
    assert.equal(fresh.description, 'new · not in this chat');
    assert.match(fresh.tooltip, /^lint with ruff\n\n.*after New Chat/s);
    assert.equal(fresh.contextValue, 'myAgent.entry');
    assert.equal(fresh.iconPath.id, 'diff-added');
    assert.equal(kept.iconPath.id, 'symbol-string');
    const removed = tree.removedTreeItem(children[2]);
    assert.equal(removed.label, 'old note');
    assert.equal(removed.description, 'removed · still in this chat');
    assert.match(removed.tooltip, /still sees it until New Chat/);
    assert.equal(removed.iconPath.color.id, 'disabledForeground');
    assert.equal(removed.contextValue, 'myAgent.entry.removed'); // no edit actions on it
    assert.equal(removed.command, undefined);
    assert.notEqual(removed.id, fresh.id);
});

test('tree: a store emptied since the chat started stays expandable to show what the chat still sees', () => {
    const fm = folderMemory([store('memory', [], { used: 0 })]);
    const [node] = tree.storeNodes(fm, snapshot(['only note']));
    assert.equal(tree.storeTreeItem(node, 0.9).collapsibleState, vscode.TreeItemCollapsibleState.Expanded);
    assert.deepEqual(tree.entryNodes(node).map((c) => c.kind), ['removed']);
});

test('tree: no session means plain entries', () => {
    const fm = folderMemory([store('memory', ['uses uv', 'lint with ruff'])]);
    const [node] = tree.storeNodes(fm);
    assert.equal(node.marks, undefined);
    const items = tree.entryNodes(node).map((n) => tree.entryTreeItem(n));
    assert.deepEqual(items.map((i) => i.description), [undefined, undefined]);
});
