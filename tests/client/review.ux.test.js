'use strict';
// Review where the code is, and the chat's way out (issue 20), on the host side: Approve / Deny from the diff
// editor's title bar and the keyboard (the right card, never another), the context keys that show them, the
// diff closing after a decision, "Open at the change", workspace links that stay inside the folders, Retry,
// the error and setup buttons, the setup state read from settings / environment / secret storage, and the
// transcript kept for a reload (cards and notes come back when the session is reopened).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const vscode = require('vscode');
const { ResponseError } = require('vscode-languageclient/node');
const { ChatController, LAST_SESSION_KEY, HAS_PENDING_KEY, PENDING_PROPOSALS_KEY, FOCUSED_KEY } = require('../../client/out/chat/controller.js');
const { ChatViewProvider } = require('../../client/out/chatView.js');
const { ProposedTextProvider, PROPOSED_SCHEME } = require('../../client/out/chat/proposed.js');
const { readSetup, SETUP_SETTINGS_QUERY } = require('../../client/out/chat/setup.js');
const { TranscriptStore, mementoFiles, mergeRestored, MAX_SESSIONS } = require('../../client/out/chat/transcripts.js');
const { storageFiles } = require('../../client/out/chat/transcriptFiles.js');
const { findWorkspaceFiles } = require('../../client/out/chat/openPath.js');
const { Methods } = require('../../client/out/protocol.js');

const DIFF = '--- a/src/app.py\n+++ b/src/app.py\n@@ -1,3 +1,4 @@\n def greet(name):\n-    return "hi " + name\n+    return "hello " + name\n+    # greeted\n x = 1\n';

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
    return { server: { ready: async () => client, onDidStop: stopped.event }, calls, of: (m) => calls.filter((c) => c.method === m) };
}

function setup(handlers = {}, mementoValues = {}, files) {
    vscode.__test.reset();
    vscode.__test.state.folders = [vscode.__test.folder('/w/app', 'app')];
    const s = scriptedServer({ [Methods.chatStart]: async () => ({ sessionId: 's1', folder: 'file:///w/app', memory: true }), ...handlers });
    const memento = vscode.__test.memento(mementoValues);
    const proposals = new ProposedTextProvider();
    const chat = new ChatController(s.server, memento, { setState() {} }, proposals, files);
    return { ...s, memento, chat, proposals, state: () => chat.store.state };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

/** A running turn with an edit card (e1, with its proposal) and a command card (c1) waiting. */
async function twoCards(t) {
    let finish;
    t.calls.length = 0;
    const sending = t.chat.send('do it');
    await tick();
    t.chat.onEvent({ sessionId: 's1', kind: 'tool_call', callId: 'e1', name: 'edit_file', arguments: '{"path":"src/app.py"}' });
    const edit = t.chat.approvals.handle({
        sessionId: 's1',
        callId: 'e1',
        kind: 'edit',
        title: 'Edit src/app.py',
        detail: DIFF,
        uri: 'file:///w/app/src/app.py',
        newText: 'def greet(name):\n    return "hello " + name\n',
    });
    const command = t.chat.approvals.handle({ sessionId: 's1', callId: 'c1', kind: 'command', title: 'Run `ls`', detail: 'ls', cwd: '/w/app' });
    return { sending, edit, command, finish };
}

test('Approve / Deny from the diff editor decide the proposal it shows; the keyboard decides the oldest card', async () => {
    let reply;
    const t = setup({ [Methods.chatSend]: () => new Promise((r) => (reply = r)) });
    const { sending, edit, command } = await twoCards(t);
    const proposed = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: `/e1/app.py` });
    assert.equal(t.proposals.callIdOf(proposed), 'e1');
    assert.equal(vscode.__test.state.context[HAS_PENDING_KEY], true);
    assert.deepEqual(vscode.__test.state.context[PENDING_PROPOSALS_KEY], ['/e1/app.py'], 'the diff title bar shows Approve / Deny for it');
    // The command card is decided from the diff editor's title bar only for the proposal that editor shows.
    assert.equal(t.chat.decidePending(false, vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: '/gone/x.py' })), false);
    assert.match(vscode.__test.state.messages.at(-1).text, /no longer waits/);
    assert.equal(t.chat.approvals.pending.length, 2, 'a stale proposal never decides another card');
    // An open diff of e1 is closed by the decision.
    const tab = { input: new vscode.TabInputTextDiff(vscode.Uri.file('/w/app/src/app.py'), proposed) };
    const other = { input: new vscode.TabInputTextDiff(vscode.Uri.file('/w/app/a'), vscode.Uri.file('/w/app/b')) };
    vscode.__test.state.tabs = [tab, other];
    assert.equal(t.chat.decidePending(true, proposed), true);
    assert.deepEqual(await edit, { approved: true });
    await tick();
    assert.deepEqual(vscode.__test.state.closedTabs, [tab], 'only the decided proposal’s diff closes');
    assert.deepEqual(vscode.__test.state.context[PENDING_PROPOSALS_KEY], []);
    // A keybinding passes nothing: the oldest waiting card (the command).
    assert.equal(t.chat.decidePending(false), true);
    assert.deepEqual(await command, { approved: false });
    assert.equal(vscode.__test.state.context[HAS_PENDING_KEY], false);
    assert.equal(t.chat.decidePending(true), false);
    assert.match(vscode.__test.state.messages.at(-1).text, /Nothing waits for your approval/);
    const cards = t.state().turns[0].parts.filter((p) => p.kind === 'approval').map((p) => [p.callId, p.status]);
    assert.deepEqual(cards, [['e1', 'approved'], ['c1', 'denied']]);
    assert.equal(cards.length, 2);
    const cwd = t.state().turns[0].parts.find((p) => p.callId === 'c1' && p.kind === 'approval').cwd;
    assert.equal(cwd, 'app', "the workspace folder by its name, not the machine's path");
    reply({ reply: 'done' });
    await sending;
    // The webview's focus is a context key (the keybindings apply inside the webview).
    const view = new ChatViewProvider(vscode.Uri.file('/ext'), t.chat, t.memento);
    await view.onMessage({ type: 'focus', focused: true });
    assert.equal(vscode.__test.state.context[FOCUSED_KEY], true);
    await view.onMessage({ type: 'focus', focused: false });
    assert.equal(vscode.__test.state.context[FOCUSED_KEY], false);
});

test('Open at the change shows the file with the changed lines selected', async () => {
    let reply;
    const t = setup({ [Methods.chatSend]: () => new Promise((r) => (reply = r)) });
    const { sending, edit, command } = await twoCards(t);
    t.chat.decide('e1', true);
    t.chat.decide('c1', false);
    await Promise.all([edit, command]);
    vscode.__test.state.docLines['/w/app/src/app.py'] = ['def greet(name):', '    return "hello " + name', '    # greeted', 'x = 1'];
    await t.chat.openChange('e1');
    const shown = vscode.__test.state.shownDocs.at(-1);
    assert.equal(shown.doc.uri.fsPath, '/w/app/src/app.py');
    assert.deepEqual([shown.options.selection.start.line, shown.options.selection.end.line, shown.options.selection.end.character], [1, 2, 13]);
    reply({ reply: 'ok' });
    await sending;
});

test('workspace links open only inside the workspace folders; a bare name is found anywhere in them', async () => {
    const t = setup();
    vscode.__test.state.existing = new Set(['/w/app/src/app.py', '/etc/passwd', '/w/secret.md']);
    vscode.__test.state.docLines['/w/app/src/app.py'] = ['a', 'b', 'c'];
    assert.equal(await t.chat.openPath({ path: 'src/app.py', line: 2 }), true);
    assert.equal(vscode.__test.state.shownDocs.at(-1).options.selection.start.line, 1);
    for (const outside of ['../secret.md', '/etc/passwd', 'src/../../secret.md']) {
        assert.deepEqual(await findWorkspaceFiles(outside), [], outside);
    }
    assert.equal(await t.chat.openPath({ path: '/etc/passwd' }), false);
    assert.match(vscode.__test.state.messages.at(-1).text, /is not a file in this workspace/);
    // A bare name (MEMORY.md) is looked up in the folders; outside results are dropped.
    vscode.__test.state.found = [vscode.Uri.file('/w/app/.my_agent_core/memory/MEMORY.md'), vscode.Uri.file('/tmp/MEMORY.md')];
    assert.deepEqual((await findWorkspaceFiles('MEMORY.md')).map((u) => u.fsPath), ['/w/app/.my_agent_core/memory/MEMORY.md']);
    assert.deepEqual(await findWorkspaceFiles('src/nope.py'), [], 'a path with a folder is not searched for');
});

test('Retry resends a failed message with its context; error, setup and banner buttons run their commands', async () => {
    let fail = true;
    const t = setup({
        [Methods.chatSend]: async () => {
            if (fail) {
                throw new ResponseError(-32002, 'The model endpoint answered HTTP 401: Incorrect API key provided');
            }
            return { reply: 'hello' };
        },
    });
    const chip = { id: 'file:///w/app/a.py', uri: 'file:///w/app/a.py', label: 'a.py' };
    t.chat.store.dispatch({ type: 'attach', chips: [chip] });
    await t.chat.send('hi');
    assert.equal(t.state().turns[0].errorKind, 'auth');
    fail = false;
    await t.chat.retry(t.state().turns[0].id);
    assert.deepEqual(t.state().turns.map((x) => [x.user, x.status]), [['hi', 'done']]);
    const sends = t.of(Methods.chatSend).map((c) => c.params);
    assert.deepEqual(sends[1], sends[0], 'the same message with the same context');
    assert.equal(sends[1].context.length, 1);
    await t.chat.retry(t.state().turns[0].id); // not a failed turn: nothing
    assert.equal(t.of(Methods.chatSend).length, 2);
    for (const action of ['setApiKey', 'openSettings', 'showOutput', 'manageTrust']) {
        await t.chat.runAction(action);
    }
    assert.deepEqual(
        vscode.__test.state.commands.map((c) => [c.id, ...c.args]),
        [['myAgent.setApiKey'], ['workbench.action.openSettings', SETUP_SETTINGS_QUERY], ['myAgent.showOutput'], ['workbench.trust.manage']],
    );
});

test('the setup state reads the model, the endpoint and the key from settings, the environment and secret storage', async () => {
    vscode.__test.reset();
    const secrets = (value) => ({ get: async () => value });
    assert.deepEqual(await readSetup(secrets(undefined), {}), {
        model: '',
        modelFrom: '',
        baseUrl: '',
        baseUrlFrom: '',
        key: 'none',
        trusted: true,
    });
    const env = { MY_AGENT_MODEL: 'qwen', OPENAI_BASE_URL: 'http://localhost:8000/v1', OPENAI_API_KEY: 'k' };
    assert.deepEqual(await readSetup(secrets(undefined), env), {
        model: 'qwen',
        modelFrom: 'env',
        baseUrl: 'http://localhost:8000/v1',
        baseUrlFrom: 'env',
        key: 'env',
        trusted: true,
    });
    vscode.__test.state.config = { 'myAgent.model': ' llama3.2 ', 'myAgent.baseUrl': 'http://localhost:11434/v1' };
    vscode.__test.state.trusted = false;
    const r = await readSetup(secrets('sk-x'), env);
    assert.deepEqual([r.model, r.modelFrom, r.baseUrl, r.baseUrlFrom, r.key, r.trusted], ['llama3.2', 'setting', 'http://localhost:11434/v1', 'setting', 'secret', false]);
    const broken = { get: async () => { throw new Error('keyring locked'); } };
    assert.equal((await readSetup(broken, {})).key, 'none', 'a broken keyring does not hide the chat');
});

test('a reopened session keeps its cards and notes: the kept transcript where it matches the server history', async () => {
    const history = [
        { role: 'user', content: 'fix it' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'e1', name: 'edit_file', arguments: '{"path":"src/app.py"}' }] },
        { role: 'tool', toolCallId: 'e1', name: 'edit_file', content: 'Edited src/app.py' },
        { role: 'assistant', content: 'Fixed.' },
        { role: 'user', content: 'and now?' },
        { role: 'assistant', content: 'Nothing else.' },
    ];
    const resumeWith = { [Methods.chatResume]: async () => ({ sessionId: 'old', folder: 'file:///w/app', memory: true, messages: history }) };
    const kept = [
        {
            id: 7,
            user: 'fix it',
            status: 'done',
            parts: [
                { kind: 'tool', callId: 'e1', name: 'edit_file', arguments: '{"path":"src/app.py"}', result: 'Edited src/app.py', ok: true },
                { kind: 'approval', callId: 'e1', approvalKind: 'edit', title: 'Edit', detail: DIFF, path: 'src/app.py', canDiff: true, status: 'approved', reason: 'user' },
                { kind: 'memory', target: 'memory', action: 'add', journalId: 'j1' },
                { kind: 'text', text: 'Fixed.' },
            ],
        },
        { id: 8, user: 'oops', status: 'error', error: 'HTTP 500', parts: [] }, // rolled back by the server
    ];
    const files = mementoFiles(vscode.__test.memento());
    await new TranscriptStore(files).save('old', kept);
    const t = setup(resumeWith, { [LAST_SESSION_KEY]: 'old' }, files);
    await t.chat.restoreLast();
    const turns = t.state().turns;
    assert.deepEqual(turns.map((x) => [x.user, x.status, x.restored]), [['fix it', 'done', true], ['oops', 'error', true], ['and now?', 'done', true]]);
    assert.deepEqual(turns[0].parts.map((p) => p.kind), ['tool', 'approval', 'memory', 'text']);
    assert.equal(turns[0].parts[1].status, 'approved');
    // Diverged (compacted, or continued elsewhere): the server's turns, with the kept cards of their calls.
    const merged = mergeRestored(
        [{ id: 1, user: 'summary', status: 'done', parts: [{ kind: 'tool', callId: 'e1', name: 'edit_file', arguments: '{}' }] }],
        kept,
    );
    assert.deepEqual(merged[0].parts.map((p) => [p.kind, p.callId]), [['tool', 'e1'], ['approval', 'e1']]);
    // The kept transcript follows the session: saved after a turn, forgotten with the session.
    await t.chat.send('more');
    await new Promise((r) => setTimeout(r, 400));
    const store = new TranscriptStore(files);
    assert.equal((await store.get('old')).length, 4);
    const u = setup({ ...resumeWith, [Methods.chatDelete]: async () => ({}) }, {}, files);
    await u.chat.resume('old');
    vscode.__test.state.answers = ['Delete'];
    await u.chat.deleteSession('old');
    assert.equal(u.of(Methods.chatDelete).length, 1);
    assert.equal(await new TranscriptStore(files).get('old'), undefined);
});

test('kept transcripts: files written whole in the storage folder, the newest sessions only, junk ignored', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'transcripts-'));
    try {
        const files = storageFiles(dir);
        const store = new TranscriptStore(files);
        const turn = (n) => ({ id: n, user: `u${n}`, status: 'pending', parts: [{ kind: 'tool', callId: 'c', name: 'run_command', arguments: '{}', output: 'x'.repeat(50_000), startedAt: 5 }] });
        for (let i = 0; i < MAX_SESSIONS + 2; i++) {
            await store.save(`s${i}`, [turn(i)], 1000 + i);
            await new Promise((r) => setTimeout(r, 5));
        }
        const names = fs.readdirSync(path.join(dir, 'transcripts')).sort();
        assert.equal(names.length, MAX_SESSIONS);
        assert.ok(!names.includes('s0.json') && !names.includes('s1.json'), 'the oldest went');
        assert.ok(!names.some((n) => n.endsWith('.tmp')), 'no temporary file left behind');
        const [kept] = await store.get(`s${MAX_SESSIONS + 1}`);
        assert.equal(kept.status, 'stopped', 'nothing is still running after a reload');
        assert.equal(kept.parts[0].startedAt, undefined);
        assert.ok(kept.parts[0].output.length <= 8000, 'bounded');
        // Ids that are not plain names are never used as file names; damaged files read as nothing.
        await store.save('../escape', [turn(1)]);
        assert.ok(!fs.existsSync(path.join(dir, 'escape.json')));
        assert.equal(await store.get('../escape'), undefined);
        fs.writeFileSync(path.join(dir, 'transcripts', 'bad.json'), '{not json');
        assert.equal(await store.get('bad'), undefined);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test('the manifest: a chat container, the review commands where a user needs them, keybindings with when clauses', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const nls = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.nls.json'), 'utf8'));
    const c = pkg.contributes;
    const title = c.menus['editor/title'];
    assert.deepEqual(title.map((m) => [m.command, m.group]), [
        ['myAgent.chat.approvePending', 'navigation@1'],
        ['myAgent.chat.denyPending', 'navigation@2'],
    ]);
    for (const m of title) {
        assert.equal(m.when, `resourceScheme == ${PROPOSED_SCHEME} && resourcePath in ${PENDING_PROPOSALS_KEY}`);
    }
    const palette = Object.fromEntries(c.menus.commandPalette.map((m) => [m.command, m.when]));
    assert.equal(palette['myAgent.chat.approvePending'], HAS_PENDING_KEY);
    const keys = Object.fromEntries(c.keybindings.map((k) => [k.command, k]));
    assert.equal(keys['myAgent.chat.focus'].key, 'ctrl+alt+a');
    assert.equal(keys['myAgent.chat.focus'].when, undefined, 'Focus Chat works from anywhere');
    for (const id of ['myAgent.chat.approvePending', 'myAgent.chat.denyPending']) {
        assert.match(keys[id].when, new RegExp(`^${HAS_PENDING_KEY.replace(/\./g, '\\.')} && \\(${FOCUSED_KEY.replace(/\./g, '\\.')} \\|\\| `));
        assert.match(keys[id].when, /resourceScheme == my-agent-proposed/);
        assert.ok(keys[id].mac, `${id} has a mac key`);
        const cmd = c.commands.find((x) => x.command === id);
        assert.ok(nls[cmd.title.slice(1, -1)], `${id} has a title`);
    }
    assert.notEqual(keys['myAgent.chat.approvePending'].key, keys['myAgent.chat.denyPending'].key);
});
