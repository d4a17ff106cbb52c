'use strict';
// The chat's host side (ChatController + ChatViewProvider) on the vscode stand-in, against a scripted request
// client at the controller's seam: what it sends, and what the user sees when the server answers or fails.
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { ResponseError } = require('vscode-languageclient/node');
const { ChatController, LAST_SESSION_KEY } = require('../../client/out/chat/controller.js');
const { ChatViewProvider, DRAFT_KEY } = require('../../client/out/chatView.js');
const { ProposedTextProvider } = require('../../client/out/chat/proposed.js');
const { Methods } = require('../../client/out/protocol.js');

/** A server whose requests are answered by `handlers[method](params, token)`; every request is recorded. */
function scriptedServer(handlers) {
    const stopped = new vscode.EventEmitter();
    const calls = [];
    const client = {
        sendRequest: async (method, params, token) => {
            calls.push({ method, params });
            const h = handlers[method];
            if (!h) {
                throw new ResponseError(-32601, `Unhandled method ${method}`);
            }
            return h(params, token);
        },
    };
    return {
        server: { ready: async () => client, onDidStop: stopped.event },
        calls,
        stop: () => stopped.fire(),
        of: (method) => calls.filter((c) => c.method === method),
    };
}

/** A webview view that records what the provider posts. */
function fakeView() {
    const posted = [];
    const received = new vscode.EventEmitter();
    const view = {
        visible: true,
        shown: [],
        show(preserveFocus) {
            this.shown.push(preserveFocus);
        },
        onDidDispose: () => ({ dispose() {} }),
        webview: {
            options: {},
            html: '',
            cspSource: 'vscode-webview://x',
            asWebviewUri: (u) => u,
            postMessage: async (m) => posted.push(m),
            onDidReceiveMessage: received.event,
        },
    };
    return { view, posted, lastState: () => posted.filter((m) => m.type === 'state').at(-1)?.state };
}

function setup(handlers, mementoValues = {}) {
    vscode.__test.reset();
    vscode.__test.state.folders = [vscode.__test.folder('/w/app', 'app')];
    const s = scriptedServer(handlers);
    const memento = vscode.__test.memento(mementoValues);
    const memory = { states: [], setState: (st) => memory.states.push(st) };
    const proposals = new ProposedTextProvider();
    const chat = new ChatController(s.server, memento, memory, proposals);
    const provider = new ChatViewProvider(vscode.Uri.file('/ext'), chat, memento);
    const v = fakeView();
    return { ...s, memento, chat, provider, proposals, v, state: () => chat.store.state };
}

const started = { [Methods.chatStart]: async () => ({ sessionId: 'new1', folder: 'file:///w/app', memory: true }) };
const resumed = (sessionId = 'old1') => ({
    [Methods.chatResume]: async (p) => {
        assert.equal(p.sessionId, sessionId);
        return {
            sessionId,
            folder: 'file:///w/app',
            memory: true,
            messages: [
                { role: 'user', content: 'What runs the tests?' },
                { role: 'assistant', content: 'vitest, via `npm test`.' },
            ],
        };
    },
});

test('after a reload the last session of the workspace is reopened with its transcript when the view shows', async () => {
    const t = setup({ ...started, ...resumed('old1') }, { [LAST_SESSION_KEY]: 'old1', [DRAFT_KEY]: 'half a thought' });
    t.provider.resolveWebviewView(t.v.view);
    await t.chat.restoreLast();
    assert.equal(t.of(Methods.chatResume).length, 1);
    assert.equal(t.of(Methods.chatStart).length, 0, 'no new session');
    const s = t.state();
    assert.equal(s.sessionId, 'old1');
    assert.equal(s.folderName, 'app');
    assert.deepEqual(s.turns.map((x) => [x.user, x.parts[0].text, x.restored]), [['What runs the tests?', 'vitest, via `npm test`.', true]]);
    assert.equal(s.notice, 'Reopened your last chat.');
    // The webview asks for its state: it gets the strings, the draft back, and the restored transcript.
    await t.provider.onMessage({ type: 'ready' });
    const init = t.v.posted.find((m) => m.type === 'init');
    assert.equal(init.draft, 'half a thought');
    assert.equal(t.v.lastState().sessionId, 'old1');
    // Only once: a second show or server start does not resume again.
    t.provider.resolveWebviewView(t.v.view);
    t.chat.onServerStarted(true);
    await t.chat.restoreLast();
    assert.equal(t.of(Methods.chatResume).length, 1);
});

test('a resume that fails says why, keeps the draft, forgets an id that cannot come back, and the next message starts fresh', async () => {
    // This server has no chat/resume (an older one): -32601.
    const t = setup({ ...started, [Methods.chatSend]: async () => ({ reply: 'hi' }) }, { [LAST_SESSION_KEY]: 'gone', [DRAFT_KEY]: 'my draft' });
    t.provider.resolveWebviewView(t.v.view);
    await t.chat.restoreLast();
    assert.equal(t.state().sessionId, undefined);
    assert.equal(t.state().restoring, false);
    assert.match(t.state().notice, /Could not reopen your last chat \(this server cannot reopen sessions\): your next message starts a new one\./);
    assert.equal(t.memento.get(LAST_SESSION_KEY), undefined, 'not tried again at every reload');
    assert.equal(t.memento.get(DRAFT_KEY), 'my draft', 'the draft is untouched');
    assert.equal(t.v.posted.filter((m) => m.type === 'restoreDraft').length, 0, 'the message box is not touched');
    await t.provider.onMessage({ type: 'send', text: 'hello' });
    assert.equal(t.of(Methods.chatStart).length, 1);
    assert.deepEqual(t.of(Methods.chatSend)[0].params, { sessionId: 'new1', message: 'hello' });
    assert.equal(t.memento.get(LAST_SESSION_KEY), 'new1');
    assert.equal(t.memento.get(DRAFT_KEY), undefined, 'sent: the draft is cleared');
    assert.equal(t.state().turns[0].parts[0].text, 'hi');

    // An unknown id (-32602) is forgotten too; a passing failure (e.g. a timeout) is not.
    const u = setup({ [Methods.chatResume]: async () => { throw new ResponseError(-32602, 'unknown session old'); } }, { [LAST_SESSION_KEY]: 'old' });
    await u.chat.restoreLast();
    assert.match(u.state().notice, /unknown session old/);
    assert.equal(u.memento.get(LAST_SESSION_KEY), undefined);
    const w = setup({ [Methods.chatResume]: async () => { throw new Error('socket hang up'); } }, { [LAST_SESSION_KEY]: 'old' });
    await w.chat.restoreLast();
    assert.equal(w.memento.get(LAST_SESSION_KEY), 'old');
    // A malformed answer is a failure too, not a blank chat.
    const m = setup({ [Methods.chatResume]: async () => ({ sessionId: 'old' }) }, { [LAST_SESSION_KEY]: 'old' });
    await m.chat.restoreLast();
    assert.equal(m.state().sessionId, undefined);
    assert.match(m.state().notice, /the server sent no transcript/);
});

test('a message typed while the resume runs waits for it and goes to the reopened session', async () => {
    let release;
    const gate = new Promise((r) => (release = r));
    const t = setup(
        {
            ...started,
            [Methods.chatResume]: async () => {
                await gate;
                return { sessionId: 'old1', folder: 'file:///w/app', memory: true, messages: [] };
            },
            [Methods.chatSend]: async () => ({ reply: 'ok' }),
        },
        { [LAST_SESSION_KEY]: 'old1' },
    );
    t.provider.resolveWebviewView(t.v.view);
    const sending = t.provider.onMessage({ type: 'send', text: 'go on' });
    await new Promise((r) => setImmediate(r));
    assert.equal(t.state().restoring, true);
    assert.equal(t.state().notice, 'Reopening your last chat…');
    release();
    await sending;
    assert.equal(t.of(Methods.chatStart).length, 0);
    assert.deepEqual(t.of(Methods.chatSend)[0].params, { sessionId: 'old1', message: 'go on' });
});

test('a send that cannot go through puts the text back in the message box', async () => {
    const t = setup({ [Methods.chatStart]: async () => { throw new ResponseError(-32001, 'No model configured: set myAgent.model'); } });
    t.provider.resolveWebviewView(t.v.view);
    await t.provider.onMessage({ type: 'send', text: 'precious words' });
    assert.deepEqual(t.v.posted.filter((m) => m.type === 'restoreDraft'), [{ type: 'restoreDraft', text: 'precious words' }]);
    assert.equal(t.state().turns[0].status, 'error');
    assert.match(t.state().turns[0].error, /No model configured/);
});

test('attached editor context travels with the message as {uri, range} and shows on the turn', async () => {
    const t = setup({ ...started, [Methods.chatSend]: async () => ({ reply: 'done' }) });
    t.provider.resolveWebviewView(t.v.view);
    vscode.__test.state.activeEditor = {
        uri: vscode.Uri.file('/w/app/src/main.ts'),
        selections: [{ start: { line: 2, character: 0 }, end: { line: 4, character: 5 }, isEmpty: false }],
    };
    await t.provider.onMessage({ type: 'attach' });
    assert.deepEqual(t.state().attachments.map((c) => c.label), ['src/main.ts:3-5']);
    await t.provider.onMessage({ type: 'send', text: 'explain this' });
    assert.deepEqual(t.of(Methods.chatSend)[0].params, {
        sessionId: 'new1',
        message: 'explain this',
        context: [{ uri: 'file:///w/app/src/main.ts', range: { start: { line: 2, character: 0 }, end: { line: 4, character: 5 } } }],
    });
    assert.deepEqual(t.state().attachments, []);
    assert.deepEqual(t.state().turns[0].context.map((c) => c.label), ['src/main.ts:3-5']);
    // Nothing open: a message says why, nothing is attached.
    vscode.__test.state.activeEditor = undefined;
    await t.provider.onMessage({ type: 'attach' });
    assert.deepEqual(t.state().attachments, []);
    assert.match(vscode.__test.state.messages.at(-1).text, /Open a file in the editor first/);
});

test('an approval request during a send shows a card, reveals the view quietly, and Approve answers the server', async () => {
    let answer;
    const t = setup({
        ...started,
        [Methods.chatSend]: async (p) => {
            answer = await t.chat.approvals.handle({
                sessionId: p.sessionId,
                callId: 'call-7',
                kind: 'edit',
                title: 'Edit src/main.ts',
                detail: '--- a\n+++ b\n-x\n+y\n',
                uri: 'file:///w/app/src/main.ts',
                newText: 'y\n',
            });
            return { reply: answer.approved ? 'edited' : 'left alone' };
        },
    });
    t.provider.resolveWebviewView(t.v.view);
    t.v.view.visible = false;
    const sending = t.provider.onMessage({ type: 'send', text: 'fix main' });
    await new Promise((r) => setImmediate(r));
    const card = t.state().turns[0].parts.find((p) => p.kind === 'approval');
    assert.deepEqual([card.callId, card.status, card.path, card.canDiff], ['call-7', 'pending', 'src/main.ts', true]);
    assert.deepEqual(t.v.view.shown, [true], 'shown without taking the focus');
    assert.equal(t.proposals.has('call-7'), true);
    await t.provider.onMessage({ type: 'openDiff', callId: 'call-7' });
    assert.equal(vscode.__test.state.commands.at(-1).id, 'vscode.diff');
    await t.provider.onMessage({ type: 'approve', callId: 'call-7', approved: true });
    await sending;
    assert.deepEqual(answer, { approved: true });
    assert.equal(t.state().turns[0].parts.find((p) => p.kind === 'approval').status, 'approved');
    assert.equal(t.state().turns[0].status, 'done');
});

test('Stop cancels the send and every waiting approval (a refusal); a server restart does too', async () => {
    const answers = [];
    const t = setup({
        ...started,
        [Methods.chatSend]: (p, token) =>
            new Promise((_, reject) => {
                t.chat.approvals.handle({ sessionId: p.sessionId, callId: 'c1', kind: 'command', title: 'rm', detail: 'rm -rf build', cwd: '/w/app' }).then((a) => answers.push(a));
                token.onCancellationRequested(() => reject(new ResponseError(-32800, 'cancelled')));
            }),
    });
    t.provider.resolveWebviewView(t.v.view);
    const sending = t.provider.onMessage({ type: 'send', text: 'clean' });
    await new Promise((r) => setImmediate(r));
    assert.equal(t.chat.approvals.pending.length, 1);
    await t.provider.onMessage({ type: 'stop' });
    await sending;
    assert.deepEqual(answers, [{ approved: false }]);
    assert.equal(t.state().turns[0].status, 'stopped');
    assert.equal(t.state().turns[0].parts[0].status, 'cancelled');
    // Server restart: the session is lost for now, and reopened on the next start.
    t.stop();
    assert.equal(t.state().sessionId, undefined);
    assert.match(t.state().notice, /The server restarted/);
});

test('after a server restart the chat reopens the session it showed', async () => {
    const t = setup({ ...started, ...resumed('new1') });
    t.provider.resolveWebviewView(t.v.view);
    await t.chat.startSession();
    assert.equal(t.state().sessionId, 'new1');
    t.stop();
    assert.equal(t.state().sessionId, undefined);
    t.chat.onServerStarted(true);
    await t.chat.restoreLast();
    assert.equal(t.state().sessionId, 'new1');
    assert.equal(t.state().turns.length, 1);
});

test('history: sessions of every folder, newest first; reopening one ends the old session; delete asks first', async () => {
    const t = setup({
        ...started,
        ...resumed('a'),
        [Methods.chatSessions]: async (p) =>
            p.folder === 'file:///w/app'
                ? { sessions: [{ sessionId: 'a', title: 'Fix the build', created: 1, updated: 1700000000, folder: p.folder, messages: 4, memory: true, active: false }] }
                : { sessions: [{ sessionId: 'b', title: 'Docs', created: 1, updated: 1700000500, folder: p.folder, messages: 2, memory: true, active: false }] },
        [Methods.chatDelete]: async () => ({}),
        [Methods.chatEnd]: async () => ({}),
    });
    vscode.__test.state.folders = [vscode.__test.folder('/w/app', 'app'), vscode.__test.folder('/w/lib', 'lib', 1)];
    t.provider.resolveWebviewView(t.v.view);
    await t.chat.startSession();
    await t.provider.onMessage({ type: 'showHistory' });
    assert.deepEqual(t.of(Methods.chatSessions).map((c) => c.params.folder), ['file:///w/app', 'file:///w/lib']);
    const rows = t.state().history.rows;
    assert.deepEqual(rows.map((r) => [r.sessionId, r.title, r.folderName]), [['b', 'Docs', 'lib'], ['a', 'Fix the build', 'app']]);
    assert.match(rows[0].when, /2023/);
    await t.provider.onMessage({ type: 'resume', sessionId: 'a' });
    assert.equal(t.state().sessionId, 'a');
    assert.equal(t.state().history.open, false, 'the panel closes on a reopen');
    assert.deepEqual(t.of(Methods.chatEnd).map((c) => c.params.sessionId), ['new1'], 'the old session was ended (it stays saved)');

    await t.provider.onMessage({ type: 'showHistory' });
    vscode.__test.state.answers = [undefined]; // the user dismisses the confirmation
    await t.provider.onMessage({ type: 'deleteSession', sessionId: 'b' });
    assert.equal(t.of(Methods.chatDelete).length, 0);
    assert.match(vscode.__test.state.messages.at(-1).text, /Delete the saved chat "Docs"\?/);
    assert.equal(vscode.__test.state.messages.at(-1).rest[0].modal, true);
    vscode.__test.state.answers = ['Delete'];
    await t.provider.onMessage({ type: 'deleteSession', sessionId: 'a' });
    assert.deepEqual(t.of(Methods.chatDelete).map((c) => c.params), [{ sessionId: 'a' }]);
    assert.deepEqual(t.state().history.rows.map((r) => r.sessionId), ['b']);
    assert.equal(t.state().sessionId, undefined, 'the chat that was open is gone');
    assert.match(t.state().notice, /This chat was deleted/);
    assert.equal(t.memento.get(LAST_SESSION_KEY), undefined);
});

test('Compact: one request, a marker, and a clear notice when the server cannot', async () => {
    const t = setup({
        ...started,
        [Methods.chatSend]: async () => ({ reply: 'a' }),
        [Methods.chatCompact]: async (p) => {
            t.chat.onEvent({ sessionId: p.sessionId, kind: 'compacted', reason: 'manual', before: 8, after: 3 });
            return { compacted: true, before: 8, after: 3 };
        },
    });
    t.provider.resolveWebviewView(t.v.view);
    await t.provider.onMessage({ type: 'send', text: 'q' });
    await t.provider.onMessage({ type: 'compact' });
    assert.deepEqual(t.of(Methods.chatCompact).map((c) => c.params), [{ sessionId: 'new1' }]);
    assert.equal(t.state().turns[0].parts.filter((p) => p.kind === 'compacted').length, 1);
    assert.equal(t.state().compacting, false);

    const old = setup({ ...started, [Methods.chatSend]: async () => ({ reply: 'a' }) });
    old.provider.resolveWebviewView(old.v.view);
    await old.provider.onMessage({ type: 'send', text: 'q' });
    await old.provider.onMessage({ type: 'compact' });
    assert.equal(old.state().notice, 'This server cannot compact sessions.');
});

test('events of other sessions and malformed events never reach the transcript', async () => {
    const t = setup({ ...started, [Methods.chatSend]: async () => ({ reply: '' }) });
    await t.chat.startSession();
    t.chat.store.dispatch({ type: 'userSent', text: 'x' });
    t.chat.onEvent({ sessionId: 'other', kind: 'delta', text: 'leak' });
    t.chat.onEvent({ sessionId: 'new1', kind: 'delta', text: 42 });
    t.chat.onEvent('garbage');
    assert.deepEqual(t.state().turns[0].parts, []);
    t.chat.onEvent({ sessionId: 'new1', kind: 'delta', text: 'ok' });
    assert.equal(t.state().turns[0].parts[0].text, 'ok');
    assert.ok(vscode.__test.log.lines.some(([, m]) => /malformed event/.test(m)));
});
