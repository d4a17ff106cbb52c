'use strict';
// "Set Up Team Memory Merging" (myAgent.gitSetup): the button of the driver-not-set-up diagnostic passes
// {folder}; the palette asks which folder; the server's answer is validated, its lines go to the output
// channel, and a failure is shown as an error (never as success).
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const { runGitSetup, parseGitSetupResult, folderArgument, GIT_SETUP_METHOD } = require('../../client/out/gitSetup.js');

const state = vscode.__test.state;

function server(answer) {
    const requests = [];
    return {
        requests,
        ready: async () => ({
            sendRequest: async (method, params) => {
                requests.push([method, params]);
                if (answer instanceof Error) {
                    throw answer;
                }
                return answer;
            },
        }),
    };
}

test('the answer is validated: only ok === true is success, only strings are lines', () => {
    assert.deepEqual(parseGitSetupResult({ ok: true, lines: ['a', 3, 'b'] }), { ok: true, lines: ['a', 'b'] });
    assert.deepEqual(parseGitSetupResult({ ok: 'yes' }), { ok: false, lines: [] });
    assert.deepEqual(parseGitSetupResult(null), { ok: false, lines: [] });
    assert.equal(folderArgument({ folder: 'file:///ws' }), 'file:///ws');
    assert.equal(folderArgument('file:///ws'), undefined);
});

test('the button runs git-setup on the folder it names and logs what was done', async () => {
    vscode.__test.reset();
    const ws = vscode.__test.folder('/ws', 'ws');
    state.folders = [ws, vscode.__test.folder('/other', 'other', 1)];
    const srv = server({ ok: true, lines: ['my-agent git-setup: /ws (repository /ws)', '  git config: set'] });
    const result = await runGitSetup(srv, { folder: ws.uri.toString() });
    assert.equal(result.ok, true);
    assert.deepEqual(srv.requests, [[GIT_SETUP_METHOD, { folder: ws.uri.toString() }]]);
    assert.ok(vscode.__test.log.lines.some(([, line]) => line.includes('git config: set')));
    assert.equal(state.messages[0].kind, 'info');
    assert.match(state.messages[0].text, /ws/);
});

test('a refusal is an error message with the reason, and a failed request too', async () => {
    vscode.__test.reset();
    const ws = vscode.__test.folder('/ws', 'ws');
    state.folders = [ws];
    await runGitSetup(server({ ok: false, lines: ['my-agent git-setup: /ws is not inside a git work tree'] }), {
        folder: ws.uri.toString(),
    });
    assert.equal(state.messages[0].kind, 'error');
    assert.match(state.messages[0].text, /not inside a git work tree/);
    vscode.__test.reset();
    state.folders = [ws];
    const outcome = await runGitSetup(server(new Error('boom')), { folder: ws.uri.toString() });
    assert.equal(outcome, undefined);
    assert.equal(state.messages[0].kind, 'error');
    assert.match(state.messages[0].text, /boom/);
});

test('from the palette with several folders it asks which; cancelling sends nothing', async () => {
    vscode.__test.reset();
    const a = vscode.__test.folder('/a', 'a');
    const b = vscode.__test.folder('/b', 'b', 1);
    state.folders = [a, b];
    state.picks = [() => undefined];
    const srv = server({ ok: true, lines: [] });
    assert.equal(await runGitSetup(srv), undefined);
    assert.deepEqual(srv.requests, []);
    state.picks = [(items) => items.find((i) => i.label === 'b')];
    await runGitSetup(srv);
    assert.deepEqual(srv.requests, [[GIT_SETUP_METHOD, { folder: b.uri.toString() }]]);
});
