'use strict';
// The Recall view (the memory provider) against a scripted server: search, the "off" and failure states, open as a
// read-only document, delete after a modal confirmation; plus the chat's recall / provider_error notes.
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { ResponseError } = require('vscode-languageclient/node');
const { JSDOM } = require('jsdom');
const createDOMPurify = require('dompurify');
const items = require('../../client/out/recall/recallItems.js');
const view = require('../../client/out/recall/recallView.js');
const { ReadOnlyDocuments, MAX_DOCUMENTS } = require('../../client/out/common/readonlyDocs.js');
const { parseChatEvent } = require('../../client/out/chatEvents.js');
const model = require('../../client/out/chatModel.js');
const render = require('../../client/out/webview/render.js');
const { uiStrings } = require('../../client/out/chat/strings.js');
const { Methods } = require('../../client/out/protocol.js');

const turn = { id: 't1', kind: 'turn', text: 'How do we run the tests?\nWith pytest -q.', time: 1764547200, source: 'session 3', score: 2.5 };
const removed = { id: 'r9', kind: 'removed', text: 'Deploys go through make ship', time: '2026-11-30T10:00:00Z', score: 1 };

function setup(handlers) {
    vscode.__test.reset();
    vscode.__test.state.folders = [vscode.__test.folder('/w/app', 'app')];
    const calls = [];
    const client = {
        sendRequest: async (method, params) => {
            calls.push({ method, params });
            const h = handlers[method];
            if (!h) {
                throw new ResponseError(-32601, `Unhandled method ${method}`);
            }
            return h(params);
        },
    };
    const docs = new ReadOnlyDocuments();
    const recall = new view.RecallController({ ready: async () => client }, docs);
    const surface = { message: undefined };
    recall.attach(surface);
    let changed = 0;
    recall.onDidChangeTreeData(() => changed++);
    return { recall, docs, calls, surface, changed: () => changed, folder: vscode.__test.state.folders[0] };
}

test('search results are validated: bad items dropped, ids kept as text, provider null means off', () => {
    const r = items.parseRecallSearch({
        provider: 'archive',
        items: [turn, { id: 42, kind: 'replaced', text: 'old', time: 0, score: 'x' }, { id: '', text: 'no id' }, { id: 'x', text: 5 }, 'junk', { id: 'y'.repeat(500), text: 't' }],
    });
    assert.equal(r.provider, 'archive');
    assert.deepEqual(r.items.map((i) => i.id), ['t1', '42']);
    assert.equal(r.items[1].score, 0);
    assert.deepEqual(items.parseRecallSearch({ provider: null, items: [turn] }), { provider: null, items: [] });
    assert.equal(items.parseRecallSearch({ items: [] }), undefined, 'no provider field: not a search result');
    assert.equal(items.parseRecallItem({ id: 'a', text: 't', kind: 'weird' }).kind, 'turn');
    assert.equal(items.recallDate(1764547200).toISOString(), '2025-12-01T00:00:00.000Z');
    assert.equal(items.recallDate(1764547200000).toISOString(), '2025-12-01T00:00:00.000Z');
    assert.equal(items.recallDate('not a date'), undefined);
    assert.equal(items.firstLine('\n\n  first  \nsecond'), 'first');
});

test('search: asks the folder\'s archive, lists the items, says how many and where', async () => {
    const t = setup({ [Methods.recallSearch]: async () => ({ provider: 'archive', items: [turn, removed] }) });
    await t.recall.search(t.folder, 'tests');
    assert.deepEqual(t.calls, [{ method: 'myAgent/recall/search', params: { folder: 'file:///w/app', query: 'tests', limit: items.RECALL_LIMIT } }]);
    const rows = t.recall.getChildren();
    assert.equal(rows.length, 2);
    assert.match(t.surface.message, /2 results for "tests" in app \(archive\)/);
    const one = setup({ [Methods.recallSearch]: async () => ({ provider: 'archive', items: [turn] }) });
    await one.recall.search(one.folder, 'tests');
    assert.equal(one.surface.message, '1 result for "tests" in app (archive).', 'one result, not "1 results"');
    const row = t.recall.getTreeItem(rows[0]);
    assert.equal(row.label, 'How do we run the tests?');
    assert.match(row.description, /^past chat turn · /);
    assert.equal(typeof row.tooltip, 'string', 'archived text is never a (Markdown) hover');
    assert.match(row.tooltip, /With pytest -q\.\n\nsession 3$/);
    assert.equal(row.contextValue, 'myAgent.recallItem');
    assert.equal(row.command.command, 'myAgent.recall.open');
    assert.equal(row.iconPath.id, 'comment-discussion');
    assert.equal(t.recall.getTreeItem(rows[1]).iconPath.id, 'trash');
    assert.match(t.recall.getTreeItem(rows[1]).description, /^removed from memory/);
    assert.deepEqual(t.recall.getChildren(rows[0]), []);
    assert.ok(t.changed() >= 1);
});

test('memory provider off, nothing found, an older server, a failure: each says so and lists nothing', async () => {
    const off = setup({ [Methods.recallSearch]: async () => ({ provider: null, items: [] }) });
    await off.recall.search(off.folder, 'x');
    assert.match(off.surface.message, /Recall is off for app: no memory provider is on/);
    assert.deepEqual(off.recall.getChildren(), []);

    const none = setup({ [Methods.recallSearch]: async () => ({ provider: 'archive', items: [] }) });
    await none.recall.search(none.folder, 'zebra');
    assert.match(none.surface.message, /Nothing in the archive of app matches "zebra"/);

    const old = setup({});
    await old.recall.search(old.folder, 'x');
    assert.match(old.surface.message, /has no recall/);

    const broken = setup({
        [Methods.recallSearch]: async () => {
            throw new ResponseError(-32603, 'database is locked');
        },
    });
    await broken.recall.search(broken.folder, 'x');
    assert.match(broken.surface.message, /Search failed: database is locked/);
    assert.deepEqual(broken.recall.getChildren(), []);
});

test('the search command asks for a query (keeping the last one) and ignores an empty or cancelled box', async () => {
    const t = setup({ [Methods.recallSearch]: async () => ({ provider: 'archive', items: [turn] }) });
    vscode.__test.state.inputs = ['  pytest  '];
    await t.recall.searchInteractive();
    assert.equal(t.calls[0].params.query, 'pytest');
    const box = vscode.__test.state.messages.find((m) => m.kind === 'inputBox').options;
    assert.equal(box.validateInput('   '), 'Type something to search for.');
    assert.equal(box.validateInput('x'), undefined);
    vscode.__test.state.inputs = [undefined];
    await t.recall.searchInteractive();
    assert.equal(t.calls.length, 1);
    assert.equal(vscode.__test.state.messages.filter((m) => m.kind === 'inputBox').at(-1).options.value, 'pytest');
});

test('open: the full item from recall/get, shown as a read-only document with what it is', async () => {
    const full = { ...turn, text: 'How do we run the tests?\nWith pytest -q.\n<script>alert(1)</script>' };
    const t = setup({
        [Methods.recallSearch]: async () => ({ provider: 'archive', items: [turn] }),
        [Methods.recallGet]: async () => ({ item: full }),
    });
    await t.recall.search(t.folder, 'tests');
    await t.recall.open(t.recall.getChildren()[0]);
    assert.deepEqual(t.calls[1], { method: 'myAgent/recall/get', params: { folder: 'file:///w/app', id: 't1' } });
    const uri = vscode.__test.state.opened.at(-1);
    assert.equal(uri.scheme, 'my-agent-doc');
    // The tab shows the document's name: the item's first line (not "t1.md"); folder and id keep it unique.
    assert.equal(uri.path, '/recall/app/t1/How do we run the tests?');
    const text = t.docs.provideTextDocumentContent(uri);
    assert.match(text, /^# Recalled from the archive of app\n\npast chat turn · .+ · session 3\n\n/);
    assert.ok(text.includes(full.text), 'the archived text exactly as stored');
    assert.equal(vscode.__test.state.shownDocs.at(-1).options.preview, true);
});

test('an opened item\'s tab title: its first line, bounded, no path separators or controls; else date and kind', () => {
    const title = (text, time = 1764547200, kind = 'turn') => items.recallTitle({ id: 'x', kind, text, time, score: 0 }, `Recall: ${items.isoDay(time)} ${kind}`);
    assert.equal(title('\n  Tests run with uv run pytest -q\nmore'), 'Tests run with uv run pytest -q');
    assert.equal(title('a/b\\c\u202e\u0007 d'), 'a b c d');
    const long = title('😀'.repeat(100));
    assert.equal(Array.from(long).length, items.TITLE_MAX);
    assert.ok(long.endsWith('…'));
    assert.equal(title('', 1764547200, 'removed'), 'Recall: 2025-12-01 removed');
    assert.equal(title(' .. \n', 1764547200), 'Recall: 2025-12-01 turn', 'a title of dots would be a path step');
});

test('two items with the same first line open as two documents', async () => {
    const twin = { ...turn, id: 't2' };
    const t = setup({
        [Methods.recallSearch]: async () => ({ provider: 'archive', items: [turn, twin] }),
        [Methods.recallGet]: async (p) => ({ item: p.id === 't1' ? turn : { ...twin, text: twin.text + '\nthe other one' } }),
    });
    await t.recall.search(t.folder, 'tests');
    const [a, b] = t.recall.getChildren();
    await t.recall.open(a);
    await t.recall.open(b);
    const [ua, ub] = vscode.__test.state.opened.slice(-2);
    assert.notEqual(ua.toString(), ub.toString());
    assert.ok(t.docs.provideTextDocumentContent(ub).includes('the other one'));
    assert.ok(!t.docs.provideTextDocumentContent(ua).includes('the other one'));
});

test('open: an item deleted meanwhile is dropped from the list; a failing get falls back to the search text', async () => {
    const t = setup({
        [Methods.recallSearch]: async () => ({ provider: 'archive', items: [turn, removed] }),
        [Methods.recallGet]: async (p) => {
            if (p.id === 't1') {
                throw new ResponseError(-32602, 'unknown id t1');
            }
            throw new ResponseError(-32603, 'busy');
        },
    });
    await t.recall.search(t.folder, 'x');
    await t.recall.open(t.recall.getChildren()[0]);
    assert.match(vscode.__test.state.messages.at(-1).text, /no longer in the archive: unknown id t1/);
    assert.deepEqual(t.recall.getChildren().map((n) => n.item.id), ['r9']);
    await t.recall.open(t.recall.getChildren()[0]);
    assert.match(vscode.__test.state.messages.at(-1).text, /showing what the search returned/);
    assert.ok(t.docs.provideTextDocumentContent(vscode.__test.state.opened.at(-1)).includes('Deploys go through make ship'));
});

test('delete: only after the modal confirmation; then recall/delete and the row is gone', async () => {
    const t = setup({
        [Methods.recallSearch]: async () => ({ provider: 'archive', items: [turn, removed] }),
        [Methods.recallDelete]: async () => ({}),
    });
    await t.recall.search(t.folder, 'x');
    const [first] = t.recall.getChildren();
    vscode.__test.state.answers = [undefined];
    await t.recall.delete(first);
    const ask = vscode.__test.state.messages.at(-1);
    assert.equal(ask.rest[0].modal, true);
    assert.match(ask.text, /Delete this item from the archive\?/);
    assert.equal(ask.rest[0].detail, turn.text);
    assert.equal(t.calls.filter((c) => c.method === Methods.recallDelete).length, 0, 'declined: nothing sent');
    vscode.__test.state.answers = ['Delete'];
    await t.recall.delete(first);
    assert.deepEqual(t.calls.at(-1), { method: 'myAgent/recall/delete', params: { folder: 'file:///w/app', id: 't1' } });
    assert.deepEqual(t.recall.getChildren().map((n) => n.item.id), ['r9']);

    const failing = setup({
        [Methods.recallSearch]: async () => ({ provider: 'archive', items: [turn] }),
        [Methods.recallDelete]: async () => {
            throw new ResponseError(-32603, 'read-only database');
        },
    });
    await failing.recall.search(failing.folder, 'x');
    vscode.__test.state.answers = ['Delete'];
    await failing.recall.delete(failing.recall.getChildren()[0]);
    assert.match(vscode.__test.state.messages.at(-1).text, /Delete failed: read-only database/);
    assert.equal(failing.recall.getChildren().length, 1, 'a failed delete keeps the row');
});

test('read-only documents: the latest MAX_DOCUMENTS are kept, older ones say they are gone', () => {
    const docs = new ReadOnlyDocuments();
    const first = docs.set('/a/0.md', 'zero');
    for (let i = 1; i <= MAX_DOCUMENTS; i++) {
        docs.set(`/a/${i}.md`, String(i));
    }
    assert.match(docs.provideTextDocumentContent(first), /no longer available/);
    assert.equal(docs.provideTextDocumentContent(docs.uri(`/a/${MAX_DOCUMENTS}.md`)), String(MAX_DOCUMENTS));
});

// ---- the chat's side of recall ------------------------------------------------------------------------------

function chatWith(events) {
    let state = model.reduce(model.initialState(), { type: 'sessionStarted', sessionId: 's1', folderName: 'app', memory: true });
    state = model.reduce(state, { type: 'userSent', text: 'how do we deploy?' });
    for (const raw of events) {
        const event = parseChatEvent({ sessionId: 's1', ...raw });
        if (event) {
            state = model.reduce(state, { type: 'event', event });
        }
    }
    return state;
}

test('chat: a recall event is a small note on its turn; a provider error is shown once per provider', () => {
    assert.equal(parseChatEvent({ sessionId: 's', kind: 'recall', chars: -1, items: 2 }), undefined);
    assert.equal(parseChatEvent({ sessionId: 's', kind: 'provider_error', message: 'x' }), undefined);
    assert.equal(parseChatEvent({ sessionId: 's', kind: 'provider_error', provider: 'postgres', message: 'y'.repeat(10_000) }).message.length, 2000);
    const state = chatWith([
        { kind: 'recall', chars: 812, items: 3 },
        { kind: 'provider_error', provider: 'postgres', message: 'connection refused' },
        { kind: 'provider_error', provider: 'postgres', message: 'connection refused again' },
        { kind: 'delta', text: 'Use make ship.' },
        { kind: 'done', reply: 'Use make ship.' },
    ]);
    const parts = state.turns[0].parts;
    assert.deepEqual(parts.map((p) => p.kind), ['recall', 'providerError', 'text']);
    assert.deepEqual(parts[0], { kind: 'recall', chars: 812, items: 3 });
    assert.deepEqual(state.providerErrors, ['postgres']);
    // The next session may show it again (it is a new session's news).
    const next = model.reduce(state, { type: 'sessionStarted', sessionId: 's2', folderName: 'app', memory: true });
    assert.equal(next.providerErrors, undefined);
});

test('chat: the notes render as text, the thinking line stays until the reply starts', () => {
    const s = uiStrings();
    const md = render.createMarkdown();
    const { window } = new JSDOM('');
    const purify = createDOMPurify(window);
    const sanitize = (html) => purify.sanitize(html, render.PURIFY_CONFIG);
    const pending = chatWith([
        { kind: 'recall', chars: 40, items: 1 },
        { kind: 'provider_error', provider: '<img src=x onerror=alert(1)>', message: '<script>alert(2)</script>' },
    ]);
    const html = render.renderTurn(pending.turns[0], s, md, sanitize);
    assert.match(html, /<div class="note recall" role="note">Recalled memory: 1 item from past sessions \(40 characters\) went with your message\.<\/div>/);
    assert.match(html, /class="thinking"/);
    assert.ok(!html.includes('<script>') && !html.includes('<img'), 'provider text is escaped');
    assert.match(html, /The memory provider &quot;&lt;img/);
    const many = render.renderTurn(chatWith([{ kind: 'recall', chars: 900, items: 4 }]).turns[0], s, md, sanitize);
    assert.match(many, /4 items from past sessions \(900 characters\)/);
});
