'use strict';
// The memory tool as a VS Code language-model tool: what the confirmation says for each kind of call (and
// that quoted text cannot break out of it), and what invoke sends the server and gives back to the model.
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { ResponseError } = require('vscode-languageclient/node');
const { planCall, fenceFor, cutText, MEMORY_TOOL_ID, MAX_QUOTE } = require('../../client/out/lm/toolCall.js');
const lm = require('../../client/out/lm/memoryTool.js');
const { Methods } = require('../../client/out/protocol.js');

const folderA = () => vscode.__test.folder('/w/app', 'app', 0);
const folderB = () => vscode.__test.folder('/w/lib', 'lib', 1);

function setup(handler, folders = [folderA()]) {
    vscode.__test.reset();
    vscode.__test.state.folders = folders;
    const calls = [];
    const client = {
        sendRequest: async (method, params, token) => {
            calls.push({ method, params, token });
            return handler(params, token);
        },
    };
    const states = [];
    const tool = new lm.MemoryLanguageModelTool({ ready: async () => client }, { setState: (s) => states.push(s) });
    const token = new vscode.CancellationTokenSource().token;
    const invoke = (input) => tool.invoke({ input, toolInvocationToken: undefined }, token);
    return { tool, calls, states, invoke, text: (r) => lm.resultText(r) };
}

test('planCall reads a call as the server does: top-level edit, operations, synonyms, refusals', () => {
    assert.deepEqual(planCall({ target: 'memory', action: 'add', content: 'Use pnpm' }), {
        target: 'memory',
        file: 'MEMORY.md',
        edits: [{ action: 'add', content: 'Use pnpm' }],
    });
    const replace = planCall({ target: 'user', action: 'replace', old_text: 'tabs', new_text: 'Prefers spaces' });
    assert.equal(replace.file, 'USER.md');
    assert.deepEqual(replace.edits, [{ action: 'replace', oldText: 'tabs', newContent: 'Prefers spaces' }]);
    assert.equal(planCall({ target: 'user', action: 'replace', old_text: 'a', content: 'b' }).edits[0].newContent, 'b');
    // operations only: the top-level action just names the first kind, as in tool.py
    const batch = planCall({
        target: 'memory',
        action: 'replace',
        operations: [
            { action: 'replace', old_text: 'testing', new_content: 'Tests: pytest -q' },
            { action: 'remove', old_text: 'flaky' },
        ],
    });
    assert.deepEqual(batch.edits.map((e) => e.action), ['replace', 'remove']);
    assert.equal(batch.malformed, undefined);
    // a top-level edit with fields comes first, then the operations
    assert.equal(planCall({ target: 'memory', action: 'add', content: 'x', operations: [{ action: 'remove', old_text: 'y' }] }).edits.length, 2);
    assert.match(planCall('add x').malformed, /not a JSON object/);
    assert.match(planCall({ target: 'Memory', action: 'add', content: 'x' }).malformed, /target/);
    assert.match(planCall({ target: 'memory', action: 'append', content: 'x' }).malformed, /action/);
    assert.match(planCall({ target: 'memory', action: 'add', operations: 'all' }).malformed, /operations/);
});

test('quoted text sits in a fence it cannot close, and a huge text is cut (never inside a surrogate pair)', () => {
    assert.equal(fenceFor('plain'), '```');
    assert.equal(fenceFor('a ```` b ``` c'), '`````');
    const big = 'x'.repeat(MAX_QUOTE - 1) + '😀' + 'y'.repeat(10);
    const { shown, omitted } = cutText(big);
    assert.equal(shown.length, MAX_QUOTE - 1);
    assert.equal(omitted, big.length - shown.length);
    const block = lm.quoteBlock('evil\n````\n**[click](command:workbench.action.terminal.new)**\n````');
    const fence = block.split('\n')[0].replace(/text$/, '');
    assert.equal(fence, '`````');
    assert.ok(block.endsWith(`\n${fence}`), 'the block is closed by its own fence only');
    assert.equal(block.split('\n').filter((l) => l === fence).length, 1, 'no line inside can close the fence');
});

test('confirmation: says what is added, replaced or removed, in which file of which folder', () => {
    const app = folderA();
    const add = lm.confirmation(planCall({ target: 'memory', action: 'add', content: 'Use pnpm, not npm' }), app);
    assert.equal(add.title, 'Add to MEMORY.md?');
    assert.match(add.message, /In \\.my\\_agent\\_core\/memory\/MEMORY\\.md of the folder app:/);
    assert.match(add.message, /Add this entry:\n\n```text\nUse pnpm, not npm\n```/);
    assert.match(add.message, /Undo Last Memory Change/);

    const rep = lm.confirmation(planCall({ target: 'user', action: 'replace', old_text: 'tabs', new_content: 'Prefers spaces' }), app);
    assert.equal(rep.title, 'Replace an entry of USER.md?');
    assert.match(rep.message, /Replace the whole entry that contains:\n\n```text\ntabs\n```\n\nwith:\n\n```text\nPrefers spaces\n```/);

    const rem = lm.confirmation(planCall({ target: 'memory', action: 'remove', old_text: 'flaky' }), app);
    assert.equal(rem.title, 'Remove an entry from MEMORY.md?');
    assert.match(rem.message, /Remove the entry that contains:\n\n```text\nflaky\n```/);

    const ops = Array.from({ length: 25 }, (_, i) => ({ action: 'remove', old_text: `e${i}` }));
    const batch = lm.confirmation(planCall({ target: 'memory', action: 'remove', operations: ops }), app);
    assert.equal(batch.title, 'Make 25 changes to MEMORY.md?');
    assert.match(batch.message, /\*\*20\.\*\* Remove/);
    assert.doesNotMatch(batch.message, /\*\*21\.\*\*/);
    assert.match(batch.message, /and 5 more edits/);
    assert.match(batch.message, /All of them are applied, or none/);
    const one = lm.confirmation(planCall({ target: 'memory', action: 'remove', operations: ops.slice(0, 21) }), app);
    assert.match(one.message, /and 1 more edit\\\./, 'one edit, not "1 more edits"');
    assert.match(lm.quoteBlock('x'.repeat(MAX_QUOTE + 1)), /and 1 more character\\\./);
    assert.match(lm.quoteBlock('x'.repeat(MAX_QUOTE + 2)), /and 2 more characters\\\./);

    const bad = lm.confirmation(planCall({ target: 'everything', action: 'add', content: 'x' }), app);
    assert.match(bad.message, /The tool will refuse this call: \\`target\\` must be "memory" or "user"\\\./);
    const none = lm.confirmation(planCall({ target: 'memory', action: 'add', content: 'x' }), undefined);
    assert.match(none.message, /No workspace folder is open/);
    // A folder name is text, never Markdown.
    const odd = lm.confirmation(planCall({ target: 'memory', action: 'add', content: 'x' }), { name: '[x](command:evil)', uri: vscode.Uri.file('/w/x') });
    assert.match(odd.message, /\\\[x\\\]\\\(command:evil\\\)/);
});

test('prepareInvocation always asks for confirmation (every call writes), with a Markdown body', async () => {
    const t = setup(async () => ({ ok: true, content: 'ok' }));
    const prepared = t.tool.prepareInvocation({ input: { target: 'memory', action: 'add', content: 'x' } });
    assert.ok(prepared.confirmationMessages, 'a write is confirmed');
    assert.ok(prepared.confirmationMessages.message instanceof vscode.MarkdownString);
    assert.equal(prepared.confirmationMessages.message.isTrusted, undefined, 'never a trusted (command-running) Markdown');
    assert.match(prepared.invocationMessage, /Writing MEMORY\.md/);
});

test('invoke forwards the arguments unchanged to myAgent/memory/tool for the folder, and returns its text', async () => {
    const state = { folder: 'file:///w/app', stores: [] };
    const t = setup(async () => ({ ok: true, content: 'Entry added (27/2200 chars).', state }));
    const input = { target: 'memory', action: 'add', content: 'Use pnpm', extra: { kept: true } };
    const result = await t.invoke(input);
    assert.equal(t.text(result), 'Entry added (27/2200 chars).');
    assert.equal(t.calls.length, 1);
    assert.equal(t.calls[0].method, Methods.memoryTool);
    assert.equal(t.calls[0].method, 'myAgent/memory/tool');
    assert.deepEqual(t.calls[0].params, { folder: 'file:///w/app', arguments: input });
    assert.ok(t.calls[0].token, 'the cancellation token travels with the request');
    assert.deepEqual(t.states, [state], 'the Memory view gets the new state');
});

test('a refused call is a tool result starting with Error: that carries the tool\'s message', async () => {
    const t = setup(async () => ({ ok: false, content: '', error: 'Memory is full: 2190/2200. Entries: ...' }));
    const r = await t.invoke({ target: 'memory', action: 'add', content: 'x' });
    assert.equal(t.text(r), 'Error: Memory is full: 2190/2200. Entries: ...');
    const t2 = setup(async () => ({ ok: false, content: 'not found: "zzz"' }));
    assert.equal(t2.text(await t2.invoke({ target: 'memory', action: 'remove', old_text: 'zzz' })), 'Error: not found: "zzz"');
});

test('server failures become readable results, never exceptions', async () => {
    const cases = [
        [new ResponseError(-32601, 'Unhandled method myAgent/memory/tool'), /cannot run the memory tool/],
        [new ResponseError(-32602, 'the folder is not trusted'), /Memory is not available for this folder: the folder is not trusted/],
        [new ResponseError(-32003, 'unsafe content'), /^Error: unsafe content$/],
        [new Error('connection closed'), /^Error: connection closed$/],
    ];
    for (const [error, expected] of cases) {
        const t = setup(async () => {
            throw error;
        });
        const r = await t.invoke({ target: 'memory', action: 'add', content: 'x' });
        assert.match(t.text(r), expected);
        assert.match(t.text(r), /^Error: /);
    }
    const odd = setup(async () => ({ ok: 'yes' }));
    assert.match(odd.text(await odd.invoke({ target: 'memory', action: 'add', content: 'x' })), /no usable answer/);
});

test('no request at all: untrusted workspace, no folder, no server, a non-object input', async () => {
    const t = setup(async () => ({ ok: true, content: 'written' }));
    vscode.__test.state.trusted = false;
    assert.match(t.text(await t.invoke({ target: 'memory', action: 'add', content: 'x' })), /^Error: Memory is off in Restricted Mode/);
    vscode.__test.state.trusted = true;
    assert.match(t.text(await t.invoke(['add'])), /^Error: the input must be a JSON object/);
    vscode.__test.state.folders = [];
    assert.match(t.text(await t.invoke({ target: 'memory', action: 'add', content: 'x' })), /No workspace folder is open/);
    assert.equal(t.calls.length, 0);
    const down = new lm.MemoryLanguageModelTool({ ready: async () => undefined }, { setState() {} });
    vscode.__test.state.folders = [folderA()];
    const r = await down.invoke({ input: { target: 'memory', action: 'add', content: 'x' } }, new vscode.CancellationTokenSource().token);
    assert.match(lm.resultText(r), /language server is not running/);
});

test('the write goes to the folder the user confirmed, even if the active editor moved meanwhile', async () => {
    const t = setup(async () => ({ ok: true, content: 'ok' }), [folderA(), folderB()]);
    vscode.__test.state.activeUri = vscode.Uri.file('/w/lib/src/index.ts');
    const input = { target: 'memory', action: 'add', content: 'lib fact' };
    const prepared = t.tool.prepareInvocation({ input });
    assert.match(prepared.confirmationMessages.message.value, /of the folder lib:/);
    vscode.__test.state.activeUri = vscode.Uri.file('/w/app/main.ts');
    await t.invoke(input);
    assert.equal(t.calls[0].params.folder, 'file:///w/lib');
    // Without a prepare (a caller that skipped it), the active folder is used.
    await t.invoke({ target: 'memory', action: 'add', content: 'app fact' });
    assert.equal(t.calls[1].params.folder, 'file:///w/app');
    // Confirmed for a folder that was closed since: nothing is written anywhere else.
    vscode.__test.state.activeUri = vscode.Uri.file('/w/lib/src/index.ts');
    t.tool.prepareInvocation({ input });
    vscode.__test.state.folders = [folderA()];
    const r = await t.invoke(input);
    assert.match(t.text(r), /no longer open/);
    assert.equal(t.calls.length, 2);
});

test('a cancelled invocation throws CancellationError (VS Code reports it as cancelled)', async () => {
    vscode.__test.reset();
    vscode.__test.state.folders = [folderA()];
    const cts = new vscode.CancellationTokenSource();
    const tool = new lm.MemoryLanguageModelTool(
        {
            ready: async () => ({
                sendRequest: (_m, _p, token) =>
                    new Promise((_, reject) => token.onCancellationRequested(() => reject(new ResponseError(-32800, 'cancelled')))),
            }),
        },
        { setState() {} },
    );
    const running = tool.invoke({ input: { target: 'memory', action: 'add', content: 'x' } }, cts.token);
    await new Promise((r) => setImmediate(r)); // the request is on its way
    cts.cancel();
    await assert.rejects(running, (e) => e instanceof vscode.CancellationError);
    // Cancelled before the server was even asked: nothing is sent.
    const sent = [];
    const early = new lm.MemoryLanguageModelTool({ ready: async () => ({ sendRequest: async (m) => sent.push(m) }) }, { setState() {} });
    const done = new vscode.CancellationTokenSource();
    done.cancel();
    await assert.rejects(early.invoke({ input: { target: 'memory', action: 'add', content: 'x' } }, done.token), (e) => e instanceof vscode.CancellationError);
    assert.deepEqual(sent, []);
});

test('registerMemoryTool registers the tool under the id package.json declares', () => {
    vscode.__test.reset();
    const d = lm.registerMemoryTool({ ready: async () => undefined }, { setState() {} });
    assert.ok(vscode.__test.state.tools.get(MEMORY_TOOL_ID) instanceof lm.MemoryLanguageModelTool);
    d.dispose();
    assert.equal(vscode.__test.state.tools.size, 0);
});
