'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { JSDOM } = require('jsdom');
const createDOMPurify = require('dompurify');
const vscode = require('vscode');
const model = require('../../client/out/chatModel.js');
const cards = require('../../client/out/webview/cards.js');
const panels = require('../../client/out/webview/panels.js');
const render = require('../../client/out/webview/render.js');
const { parseWebviewMessage } = require('../../client/out/webview/messages.js');
const { parseApproveParams } = require('../../client/out/chatEvents.js');
const { ApprovalBroker } = require('../../client/out/chat/approvals.js');
const { ProposedTextProvider, MAX_PROPOSALS, PROPOSED_SCHEME } = require('../../client/out/chat/proposed.js');
const { uiStrings } = require('../../client/out/chat/strings.js');

const strings = uiStrings();
const purify = createDOMPurify(new JSDOM('').window);
const sanitize = (html) => purify.sanitize(html, render.PURIFY_CONFIG);
const md = render.createMarkdown();

const request = (extra = {}) => ({
    sessionId: 's1',
    callId: 'c1',
    kind: 'edit',
    title: 'Edit src/app.ts',
    detail: '--- a/src/app.ts\n+++ b/src/app.ts\n@@ -1,2 +1,2 @@\n-const a = 1;\n+const a = 2;\n+const b = 3;\n keep\n',
    uri: 'file:///ws/src/app.ts',
    newText: 'const a = 2;\nconst b = 3;\nkeep\n',
    ...extra,
});

/** A broker wired to a reducer, as the controller does it; records what the UI was asked to do. */
function harness(session = 's1') {
    let state = model.reduce(model.initialState(), { type: 'sessionStarted', sessionId: session, folderName: 'ws', memory: true });
    state = model.reduce(state, { type: 'userSent', text: 'fix it' });
    const shown = [];
    const warnings = [];
    const broker = new ApprovalBroker(
        {
            currentSession: () => state.sessionId,
            show: (req) => {
                shown.push(req);
                state = model.reduce(state, {
                    type: 'approvalRequested',
                    request: { callId: req.callId, approvalKind: req.kind, title: req.title, detail: req.detail, path: 'src/app.ts', canDiff: true },
                });
            },
            settle: (callId, status) => {
                state = model.reduce(state, { type: 'approvalDecided', callId, status });
            },
        },
        { warn: (m) => warnings.push(m) },
    );
    return { broker, shown, warnings, state: () => state };
}

test('approve: the card waits for the user; Approve answers {approved: true} and the card shows the outcome', async () => {
    const h = harness();
    const answer = h.broker.handle(request());
    assert.equal(h.shown.length, 1);
    assert.deepEqual(h.broker.pending, ['c1']);
    assert.equal(model.pendingApprovals(h.state()).length, 1);
    assert.equal(model.isBusy(h.state()), true);
    assert.equal(h.broker.decide('c1', true), true);
    assert.deepEqual(await answer, { approved: true });
    const card = h.state().turns[0].parts[0];
    assert.equal(card.status, 'approved');
    assert.equal(card.reason, 'user');
    assert.equal(h.broker.decide('c1', false), false, 'a second click changes nothing');
    assert.equal(h.state().turns[0].parts[0].status, 'approved');
});

test('several approvals wait at once and are answered independently', async () => {
    const h = harness();
    const a = h.broker.handle(request({ callId: 'a' }));
    const b = h.broker.handle(request({ callId: 'b', kind: 'command', title: 'Run tests', detail: 'npm test', uri: undefined, newText: undefined, cwd: '/ws' }));
    const c = h.broker.handle(request({ callId: 'c', kind: 'memory' }));
    assert.deepEqual(h.broker.pending, ['a', 'b', 'c']);
    assert.equal(model.pendingApprovals(h.state()).length, 3);
    h.broker.decide('b', false);
    h.broker.decide('a', true);
    assert.deepEqual(await a, { approved: true });
    assert.deepEqual(await b, { approved: false });
    assert.deepEqual(h.broker.pending, ['c']);
    h.broker.cancelAll();
    assert.deepEqual(await c, { approved: false });
    assert.deepEqual(
        h.state().turns[0].parts.map((p) => [p.callId, p.status]),
        [['a', 'approved'], ['b', 'denied'], ['c', 'cancelled']],
    );
});

test('a cancelled request ($/cancelRequest: the turn was stopped) is a refusal and the card says cancelled', async () => {
    const h = harness();
    const cts = new vscode.CancellationTokenSource();
    const answer = h.broker.handle(request(), cts.token);
    cts.cancel();
    assert.deepEqual(await answer, { approved: false });
    assert.equal(h.state().turns[0].parts[0].status, 'cancelled');
    assert.deepEqual(h.broker.pending, []);
    // Already cancelled when it arrives: refused without a card.
    const cts2 = new vscode.CancellationTokenSource();
    cts2.cancel();
    assert.deepEqual(await h.broker.handle(request({ callId: 'late' }), cts2.token), { approved: false });
    assert.equal(h.shown.length, 1);
});

test('malformed, foreign-session and duplicate requests are refused without asking', async () => {
    const h = harness();
    for (const bad of [null, 'x', {}, { ...request(), kind: 'delete' }, { ...request(), callId: '' }, { ...request(), title: 5 }, { ...request(), callId: 'x'.repeat(500) }]) {
        assert.deepEqual(await h.broker.handle(bad), { approved: false });
    }
    assert.deepEqual(await h.broker.handle(request({ sessionId: 'other' })), { approved: false });
    const first = h.broker.handle(request());
    assert.deepEqual(await h.broker.handle(request()), { approved: false }, 'a duplicate call id');
    assert.equal(h.shown.length, 1);
    assert.ok(h.warnings.some((w) => /malformed/.test(w)));
    assert.ok(h.warnings.some((w) => /not the one the chat shows/.test(w)));
    assert.ok(h.warnings.some((w) => /second request/.test(w)));
    h.broker.decide('c1', true);
    assert.deepEqual(await first, { approved: true });
});

test('parseApproveParams keeps the protocol fields and drops junk', () => {
    assert.deepEqual(parseApproveParams({ ...request(), extra: 1, uri: '' }), {
        sessionId: 's1',
        callId: 'c1',
        kind: 'edit',
        title: 'Edit src/app.ts',
        detail: request().detail,
        newText: request().newText,
    });
    assert.equal(parseApproveParams({ ...request(), title: 'x'.repeat(2000) }).title.length, 500);
});

test('reducer: Stop, an error or the end of the turn cancels cards still waiting; approval events update them', () => {
    const base = harness().state();
    const withCard = model.reduce(base, {
        type: 'approvalRequested',
        request: { callId: 'c9', approvalKind: 'command', title: 'npm test', detail: 'npm test', canDiff: false },
    });
    assert.equal(model.reduce(withCard, { type: 'stopped' }).turns[0].parts[0].status, 'cancelled');
    const ev = (extra) => ({ type: 'event', event: { sessionId: 's1', ...extra } });
    assert.equal(model.reduce(withCard, ev({ kind: 'error', message: 'x' })).turns[0].parts[0].status, 'cancelled');
    assert.equal(model.reduce(withCard, ev({ kind: 'done', reply: 'ok' })).turns[0].parts[0].status, 'cancelled');
    // The server's decision event for a card.
    const denied = model.reduce(withCard, ev({ kind: 'approval', callId: 'c9', approved: false, reason: 'error' }));
    assert.deepEqual([denied.turns[0].parts[0].status, denied.turns[0].parts[0].reason], ['denied', 'error']);
    // A decision without a card: a settings pre-approval is reported in the transcript.
    const pre = model.reduce(base, ev({ kind: 'approval', callId: 'p1', approvalKind: 'edit', approved: true, reason: 'setting' }));
    const part = pre.turns[0].parts[0];
    assert.equal(part.reportOnly, true);
    assert.equal(cards.statusText(part, strings), 'Approved by your settings');
    assert.match(cards.renderApproval(part, strings), /File change.*Approved by your settings/);
    assert.doesNotMatch(cards.renderApproval(part, strings), /<button/);
});

test('diff summary counts added and removed lines, not the file headers', () => {
    assert.deepEqual(cards.diffStats(request().detail), { added: 2, removed: 1 });
    assert.deepEqual(cards.diffStats(''), { added: 0, removed: 0 });
    const long = Array.from({ length: 400 }, (_, i) => `+line ${i}`).join('\n');
    const html = cards.renderDiff(long, strings, 300);
    assert.equal((html.match(/<span class="add">/g) ?? []).length, 300);
    assert.match(html, /100 more lines: Open Diff shows everything/);
});

/** The card's HTML parsed like the webview does it. */
function cardDom(part) {
    const html = cards.renderApproval(part, strings);
    return { html, doc: new JSDOM(`<body>${html}</body>`).window.document };
}

test('cards by kind: an edit shows file, summary, diff and Open Diff; a command its line and folder; memory its diff', () => {
    const edit = cardDom({ kind: 'approval', callId: 'c1', approvalKind: 'edit', title: 'Edit src/app.ts', detail: request().detail, path: 'src/app.ts', canDiff: true, status: 'pending' });
    assert.match(edit.doc.querySelector('.approval-title').textContent, /The agent wants to change src\/app\.ts/);
    assert.equal(edit.doc.querySelector('.diff-stats').textContent, '+2 −1');
    assert.equal(edit.doc.querySelector('.diff-stats').getAttribute('aria-label'), '2 lines added, 1 removed');
    assert.ok(edit.doc.querySelector('details.approval-diff pre.diff span.del'));
    const buttons = [...edit.doc.querySelectorAll('button')].map((b) => [b.dataset.action, b.textContent, b.getAttribute('aria-label')]);
    assert.deepEqual(buttons.map((b) => b[0]), ['approve', 'deny', 'openDiff']);
    assert.ok(buttons.every(([, text, aria]) => text && aria), 'every button has text and an accessible name');
    assert.ok([...edit.doc.querySelectorAll('button')].every((b) => b.getAttribute('type') === 'button' && b.dataset.callId === 'c1'));

    const command = cardDom({ kind: 'approval', callId: 'c2', approvalKind: 'command', title: 'Run tests', detail: 'npm test -- --watch=false', cwd: 'packages/app', canDiff: false, status: 'pending' });
    assert.equal(command.doc.querySelector('pre.command').textContent, 'npm test -- --watch=false');
    assert.equal(command.doc.querySelector('.approval-cwd').textContent, 'in packages/app');
    assert.deepEqual([...command.doc.querySelectorAll('button')].map((b) => b.dataset.action), ['approve', 'deny']);

    const memory = cardDom({ kind: 'approval', callId: 'c3', approvalKind: 'memory', title: 'memory add', detail: '--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ -1 +1,3 @@\n x\n+§\n+Use pnpm', path: '.my_agent_core/memory/MEMORY.md', canDiff: true, status: 'pending' });
    assert.match(memory.doc.querySelector('.approval-title').textContent, /write MEMORY\.md/);
    assert.ok(memory.doc.querySelector('.approval > pre.diff'), 'the memory diff is shown, not collapsed');

    // Decided: no Approve/Deny any more, the outcome is shown, Open Diff stays.
    const done = cardDom({ kind: 'approval', callId: 'c1', approvalKind: 'edit', title: 't', detail: '', path: 'a', canDiff: true, status: 'denied', reason: 'user' });
    assert.deepEqual([...done.doc.querySelectorAll('button')].map((b) => b.dataset.action), ['openDiff']);
    assert.equal(done.doc.querySelector('.approval-status').textContent, 'Denied');
});

test('cards render untrusted text inert: titles, diffs, commands, paths and ids are escaped', () => {
    const evil = '<img src=x onerror=alert(1)><script>alert(2)</script>';
    const part = { kind: 'approval', callId: '"><script>x</script>', approvalKind: 'command', title: evil, detail: `rm -rf / ${evil}`, cwd: evil, canDiff: true, status: 'pending' };
    const { html, doc } = cardDom(part);
    assert.equal(doc.querySelectorAll('script,img').length, 0);
    for (const el of doc.body.querySelectorAll('*')) {
        for (const attr of el.attributes) {
            assert.doesNotMatch(attr.name, /^on/i);
        }
    }
    assert.equal(doc.querySelector('button').dataset.callId, '"><script>x</script>');
    assert.match(html, /&lt;script&gt;alert\(2\)/);
    const edit = cardDom({ ...part, approvalKind: 'edit', detail: `+${evil}\n-${evil}`, path: evil });
    assert.equal(edit.doc.querySelectorAll('script,img').length, 0);
    // The whole turn too.
    const turn = { id: 1, user: 'x', status: 'pending', parts: [part] };
    const turnDoc = new JSDOM(`<body>${render.renderTurn(turn, strings, md, sanitize)}</body>`).window.document;
    assert.equal(turnDoc.querySelectorAll('script,img').length, 0);
});

test('the pending bar counts waiting cards and points at the first', () => {
    let s = harness().state();
    assert.equal(panels.renderPendingBar(s, strings), '');
    for (const callId of ['a', 'b']) {
        s = model.reduce(s, { type: 'approvalRequested', request: { callId, approvalKind: 'edit', title: 't', detail: '', canDiff: false } });
    }
    const bar = new JSDOM(`<body>${panels.renderPendingBar(s, strings)}</body>`).window.document;
    assert.match(bar.body.textContent, /2 approvals are waiting for you/);
    assert.equal(bar.querySelector('button').dataset.callId, 'a');
    s = model.reduce(s, { type: 'approvalDecided', callId: 'a', status: 'approved' });
    assert.match(panels.renderPendingBar(s, strings), /An approval is waiting for you/);
});

test('webview messages for approvals are validated', () => {
    assert.deepEqual(parseWebviewMessage({ type: 'approve', callId: 'c1', approved: true }), { type: 'approve', callId: 'c1', approved: true });
    assert.equal(parseWebviewMessage({ type: 'approve', callId: 'c1', approved: 'yes' }), undefined);
    assert.equal(parseWebviewMessage({ type: 'approve', callId: '', approved: true }), undefined);
    assert.equal(parseWebviewMessage({ type: 'approve', approved: true }), undefined);
    assert.deepEqual(parseWebviewMessage({ type: 'openDiff', callId: 'c1', x: 1 }), { type: 'openDiff', callId: 'c1' });
    assert.equal(parseWebviewMessage({ type: 'openDiff', callId: 7 }), undefined);
});

test('Open Diff: current file vs the proposed text (read-only provider); a new file is compared with an empty one', async () => {
    vscode.__test.reset();
    const provider = new ProposedTextProvider();
    const file = vscode.Uri.file('/ws/src/app.ts');
    provider.remember('c1', file, 'new text\n');
    vscode.__test.state.existing.add(file.fsPath);
    assert.equal(await provider.openDiff('c1'), true);
    const [diff] = vscode.__test.state.commands;
    assert.equal(diff.id, 'vscode.diff');
    assert.equal(diff.args[0], file, 'left: the file itself (its open buffer when there is one)');
    assert.equal(diff.args[1].scheme, PROPOSED_SCHEME);
    assert.match(diff.args[1].path, /\/app\.ts$/, 'keeps the file name, so the language mode matches');
    assert.equal(provider.provideTextDocumentContent(diff.args[1]), 'new text\n');
    assert.match(diff.args[2], /app\.ts: current ↔ proposed by the agent/);

    provider.remember('c2', vscode.Uri.file('/ws/src/new.ts'), 'created\n');
    await provider.openDiff('c2');
    const left = vscode.__test.state.commands[1].args[0];
    assert.equal(left.scheme, PROPOSED_SCHEME);
    assert.equal(provider.provideTextDocumentContent(left), '');

    // Bounded: only the latest MAX_PROPOSALS stay.
    for (let i = 0; i < MAX_PROPOSALS + 3; i++) {
        provider.remember(`k${i}`, file, `t${i}`);
    }
    assert.equal(provider.has('c1'), false);
    assert.equal(provider.has(`k${MAX_PROPOSALS + 2}`), true);
    assert.equal(await provider.openDiff('c1'), false);
    assert.match(vscode.__test.state.messages.at(-1).text, /no longer available/);
    provider.dispose();
});
