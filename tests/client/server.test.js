'use strict';
// The chat host (ChatController + ChatViewProvider + the open-file mirror) against the REAL language server of
// this repository (`python -m my_agent_core serve` over stdio JSON-RPC) and the real fake-OpenAI HTTP server
// (tests/support/fake_openai.py): what the client sends must be what the server accepts, and where the server
// lacks a round-2 method the chat must say so instead of breaking.
const test = require('node:test');
const assert = require('node:assert/strict');
const cp = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');
const rpc = require('vscode-jsonrpc/node');
const vscode = require('vscode');
const { ChatController, LAST_SESSION_KEY } = require('../../client/out/chat/controller.js');
const { ChatViewProvider } = require('../../client/out/chatView.js');
const { ProposedTextProvider } = require('../../client/out/chat/proposed.js');
const { OpenBufferSync } = require('../../client/out/common/bufferSync.js');
const model = require('../../client/out/chatModel.js');
const { Methods } = require('../../client/out/protocol.js');

const root = path.join(__dirname, '..', '..');
const python = process.env.MY_AGENT_PYTHON || path.join(root, '.venv', 'bin', 'python');
const skip = fs.existsSync(python) ? false : `no Python with my_agent_core at ${python} (set MY_AGENT_PYTHON)`;

const REPLY = 'Hello from the fake model: the tests run with npm test.';

async function startFakeModel(dir) {
    const script = path.join(dir, 'script.json');
    fs.writeFileSync(script, JSON.stringify({ responses: [{ content: REPLY, chunk_size: 6 }], default: { content: 'again' } }));
    const proc = cp.spawn(python, [path.join(root, 'tests', 'support', 'fake_openai.py'), '--port', '0', '--script', script, '--exit-on-stdin-eof'], {
        stdio: ['pipe', 'pipe', 'inherit'],
    });
    const baseUrl = await new Promise((resolve, reject) => {
        readline.createInterface({ input: proc.stdout }).once('line', resolve);
        proc.once('exit', (code) => reject(new Error(`fake_openai exited with ${code}`)));
    });
    return { proc, baseUrl };
}

async function startServer(workspace, baseUrl) {
    const env = { ...process.env, OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: 'test', MY_AGENT_MODEL: 'fake-model', PYTHONUTF8: '1' };
    const proc = cp.spawn(python, ['-m', 'my_agent_core', 'serve'], { cwd: workspace, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += d.toString()));
    const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
    connection.onRequest('workspace/configuration', (p) => p.items.map(() => null));
    connection.onRequest('client/registerCapability', () => null);
    connection.onNotification(() => undefined);
    connection.listen();
    const uri = vscode.Uri.file(workspace).toString();
    await connection.sendRequest('initialize', {
        processId: process.pid,
        rootUri: uri,
        workspaceFolders: [{ uri, name: path.basename(workspace) }],
        capabilities: {},
        initializationOptions: { myAgent: { model: 'fake-model', baseUrl, memory: { memoryCharLimit: 2200, userCharLimit: 1375, nearBudgetShare: 0.9 } } },
    });
    connection.sendNotification('initialized', {});
    return { proc, connection, uri, stderr: () => stderr };
}

test('the chat against the real language server: restore falls back cleanly, a send with context streams, history, compact', { skip, timeout: 120_000 }, async (t) => {
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-client-srv-'));
    t.after(() => fs.rmSync(workspace, { recursive: true, force: true }));
    fs.mkdirSync(path.join(workspace, '.my_agent_core', 'memory'), { recursive: true });
    fs.writeFileSync(path.join(workspace, '.my_agent_core', 'memory', 'MEMORY.md'), 'Tests: npm test\n');
    fs.mkdirSync(path.join(workspace, 'src'));
    fs.writeFileSync(path.join(workspace, 'src', 'main.ts'), 'export const answer = 41;\n');

    const fake = await startFakeModel(workspace);
    t.after(() => fake.proc.stdin.end());
    const srv = await startServer(workspace, fake.baseUrl);
    let mirror;
    t.after(async () => {
        // The mirror first: disposing it may still notify the server, which must be listening then.
        mirror?.dispose();
        await srv.connection.sendRequest('shutdown').catch(() => undefined);
        // The server may already be gone after `shutdown`: a failed write of `exit` is no failure of the test.
        await Promise.resolve(srv.connection.sendNotification('exit')).catch(() => undefined);
        srv.connection.dispose();
        srv.proc.kill();
    });

    vscode.__test.reset();
    vscode.__test.state.folders = [vscode.__test.folder(workspace, 'ws')];
    const stopped = new vscode.EventEmitter();
    // As LanguageClient.sendRequest does: a token only when there is one (jsonrpc would send [params, undefined]).
    const client = {
        sendRequest: (method, params, token) =>
            token ? srv.connection.sendRequest(method, params, token) : srv.connection.sendRequest(method, params),
    };
    const memento = vscode.__test.memento({ [LAST_SESSION_KEY]: 'a-session-from-before-the-reload' });
    const chat = new ChatController({ ready: async () => client, onDidStop: stopped.event }, memento, { setState() {} }, new ProposedTextProvider());
    srv.connection.onNotification(Methods.chatEvent, (e) => chat.onEvent(e));
    srv.connection.onRequest(Methods.chatApprove, (p, token) => chat.approvals.handle(p, token));
    const provider = new ChatViewProvider(vscode.Uri.file('/ext'), chat, memento);
    const posted = [];
    provider.resolveWebviewView({
        visible: true,
        show() {},
        onDidDispose: () => ({ dispose() {} }),
        webview: { options: {}, html: '', cspSource: 'x', asWebviewUri: (u) => u, postMessage: async (m) => posted.push(m), onDidReceiveMessage: () => ({ dispose() {} }) },
    });

    // 1. The remembered session cannot come back (this server lacks chat/resume, or does not know the id):
    //    the chat says why, forgets the id, and the message box is untouched.
    await chat.restoreLast();
    assert.equal(chat.store.state.sessionId, undefined);
    assert.match(chat.store.state.notice, /^Could not reopen your last chat \(.+\): your next message starts a new one\.$/);
    assert.equal(memento.get(LAST_SESSION_KEY), undefined);
    assert.equal(posted.filter((m) => m.type === 'restoreDraft').length, 0);

    // 2. An unsaved edit of an open file reaches the server's buffers through the mirror (and breaks nothing).
    const mainUri = vscode.Uri.file(path.join(workspace, 'src', 'main.ts'));
    const doc = { uri: mainUri, languageId: 'typescript', version: 1, getText: () => 'export const answer = 41;\n' };
    vscode.__test.state.textDocuments = [doc];
    mirror = new OpenBufferSync(srv.connection);
    mirror.start();
    vscode.__test.docEvents.change.fire({
        document: { ...doc, version: 2 },
        contentChanges: [{ range: { start: { line: 0, character: 22 }, end: { line: 0, character: 24 } }, rangeLength: 2, text: '42' }],
    });

    // 3. A message with the selection attached: the server accepts `context`, the reply streams into the turn.
    vscode.__test.state.activeEditor = { uri: mainUri, selections: [{ start: { line: 0, character: 0 }, end: { line: 0, character: 26 }, isEmpty: false }] };
    await provider.onMessage({ type: 'attach' });
    assert.deepEqual(chat.store.state.attachments.map((c) => c.label), ['src/main.ts:1']);
    await provider.onMessage({ type: 'send', text: 'What runs the tests?' });
    const s = chat.store.state;
    assert.ok(s.sessionId, `no session: ${JSON.stringify(s)}\n${srv.stderr().slice(-3000)}`);
    assert.equal(memento.get(LAST_SESSION_KEY), s.sessionId, 'remembered for the next reload');
    const turn = s.turns[0];
    assert.equal(turn.status, 'done', `turn: ${JSON.stringify(turn)}\nserver stderr: ${srv.stderr().slice(-2000)}`);
    assert.equal(turn.parts.filter((p) => p.kind === 'text').map((p) => p.text).join(''), REPLY);
    assert.deepEqual(turn.context.map((c) => c.label), ['src/main.ts:1']);
    const figures = model.meterFigures(s.meter);
    assert.equal(figures.requests, 1);
    assert.ok(figures.promptTokens > 0);
    assert.equal(typeof figures.cachedTokens, 'number', 'the fake provider reports cached tokens');

    // 4. History lists the current session.
    await provider.onMessage({ type: 'showHistory' });
    assert.equal(chat.store.state.history.error, undefined);
    assert.ok(chat.store.state.history.rows.some((r) => r.sessionId === s.sessionId && r.current));

    // 5. Compact: compacted, nothing to compact, or "this server cannot": never a broken chat.
    await provider.onMessage({ type: 'compact' });
    const after = chat.store.state;
    assert.equal(after.compacting, false);
    const marker = after.turns.flatMap((x) => x.parts).some((p) => p.kind === 'compacted');
    assert.ok(
        marker || /^(This server cannot compact sessions\.|Nothing to compact yet: the session is short\.)$/.test(after.notice ?? ''),
        `after Compact: ${after.notice}`,
    );
    assert.equal(after.sessionId, s.sessionId);
});
