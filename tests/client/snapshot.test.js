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

test('tree: fresh entries lead with "new", removed ones follow as muted children leading with "removed"', () => {
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
    assert.equal(kept.label, 'uses uv');
    const fresh = tree.entryTreeItem(children[1]);
    // The mark is short and first: the label starts with it (highlighted), the reason follows as description.
    assert.deepEqual(fresh.label, { label: 'new · lint with ruff', highlights: [[0, 3]] });
    assert.equal(fresh.description, 'not in this chat');
    assert.equal(fresh.accessibilityInformation.label, 'new, not in this chat: lint with ruff');
    assert.match(fresh.tooltip, /^lint with ruff\n\n.*after New Chat/s);
    assert.equal(fresh.contextValue, 'myAgent.entry');
    assert.equal(fresh.iconPath.id, 'diff-added');
    assert.equal(kept.iconPath.id, 'symbol-string');
    const [multi] = tree.entryNodes(tree.storeNodes(folderMemory([store('memory', ['a\nb\nc'])]), snapshot([]))[0]);
    assert.equal(tree.entryTreeItem(multi).description, 'not in this chat · 3 lines');
    const removed = tree.removedTreeItem(children[2]);
    assert.deepEqual(removed.label, { label: 'removed · old note', highlights: [[0, 7]] });
    assert.equal(removed.description, 'still in this chat');
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

// ---- an open frozen ↔ live diff follows memory ------------------------------------------------------------

const { SnapshotContentProvider, showSnapshot, snapshotUri, LIVE_REFRESH_MS } = require('../../client/out/snapshotView.js');
const { Methods } = require('../../client/out/protocol.js');

/** A server whose live memory the test changes; every request recorded. */
function snapshotServer() {
    const server = { live: 'MEMORY: uses npm', calls: [], probes: 0 };
    const client = {
        sendRequest: async (method, params) => {
            server.calls.push({ method, params });
            switch (method) {
                case Methods.chatStart:
                    return { sessionId: `probe${++server.probes}`, folder: FOLDER, memory: true };
                case Methods.chatSystemPrompt:
                    return { text: params.sessionId === 's1' ? 'MEMORY: uses npm' : server.live };
                case Methods.chatDelete:
                    return {};
            }
            throw new Error(`unexpected ${method}`);
        },
    };
    server.ready = async () => client;
    server.of = (m) => server.calls.filter((c) => c.method === m);
    return server;
}

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

test('snapshot diff: after an undo (any memory change) the open live side is rendered again', async () => {
    vscode.__test.reset();
    const changed = new vscode.EventEmitter();
    const provider = new SnapshotContentProvider(changed.event);
    const server = snapshotServer();
    server.live = 'MEMORY: uses npm\n§\nuses pnpm'; // the agent added an entry after the chat started
    const chat = { sessionId: 's1', folderUri: FOLDER, startSession: async () => undefined };
    await showSnapshot(server, chat, provider);
    const liveUri = snapshotUri('s1', 'live');
    const diff = vscode.__test.state.commands.find((c) => c.id === 'vscode.diff');
    assert.ok(diff, 'the diff opened');
    assert.equal(provider.get(liveUri), 'MEMORY: uses npm\n§\nuses pnpm');
    vscode.__test.state.tabs = [{ input: { original: snapshotUri('s1', 'frozen'), modified: liveUri } }];
    const fired = [];
    provider.onDidChange((u) => fired.push(u.toString()));

    // The user undoes the agent's write: memory fires (notification + the undo's state), quickly twice.
    server.live = 'MEMORY: uses npm';
    changed.fire();
    changed.fire();
    await wait(LIVE_REFRESH_MS + 150);
    assert.equal(provider.get(liveUri), 'MEMORY: uses npm', 'the live side shows memory after the undo');
    assert.deepEqual(fired, [liveUri.toString()], 'VS Code is told once, so the diff redraws');
    assert.equal(server.of(Methods.chatStart).length, 2, 'one probe for the burst of changes');
    assert.equal(server.of(Methods.chatDelete).length, 2, 'every probe is deleted');
    provider.dispose();
});

test('snapshot diff: a closed diff is not rendered again (no probe sessions for nothing)', async () => {
    vscode.__test.reset();
    const changed = new vscode.EventEmitter();
    const provider = new SnapshotContentProvider(changed.event);
    const server = snapshotServer();
    const liveUri = snapshotUri('s1', 'live');
    provider.trackLive(liveUri, FOLDER, server);
    vscode.__test.state.tabs = [{ input: { uri: vscode.Uri.file('/ws/other.ts') } }];
    changed.fire();
    await wait(LIVE_REFRESH_MS + 100);
    assert.equal(server.calls.length, 0);
    // Without tab groups (an older host), an open document counts.
    vscode.__test.state.tabs = undefined;
    vscode.__test.state.textDocuments = [{ uri: liveUri }];
    server.live = 'MEMORY: new';
    await provider.refreshLive();
    assert.equal(provider.get(liveUri), 'MEMORY: new');
    provider.dispose();
});
