'use strict';
// A transcript you can read (issue 20): tool rows with one-line summaries and statuses that say what happened,
// a command's card and its output together (live while it runs), an approved edit's changed lines, errors with
// a way out, the setup state, Restricted Mode, workspace paths as editor links, and the transcript kept for a
// reload. Pure modules and the reducer; jsdom + DOMPurify check the HTML the webview would show.
const test = require('node:test');
const assert = require('node:assert/strict');
const { JSDOM } = require('jsdom');
const createDOMPurify = require('dompurify');
const model = require('../../client/out/chatModel.js');
const render = require('../../client/out/webview/render.js');
const panels = require('../../client/out/webview/panels.js');
const toolView = require('../../client/out/webview/toolView.js');
const pathLinks = require('../../client/out/webview/pathLinks.js');
const { inlineCode } = require('../../client/out/webview/strings.js');
const { classifyFailure, failureActions } = require('../../client/out/chat/failures.js');
const { parseChatEvent } = require('../../client/out/chatEvents.js');
const { parseWebviewMessage } = require('../../client/out/webview/messages.js');
const { uiStrings } = require('../../client/out/chat/strings.js');

const purify = createDOMPurify(new JSDOM('').window);
const sanitize = (html) => purify.sanitize(html, render.PURIFY_CONFIG);
const md = render.createMarkdown();
const strings = uiStrings();

const ev = (kind, extra = {}, at) => ({ type: 'event', event: { sessionId: 's1', kind, ...extra }, ...(at ? { at } : {}) });
const run = (actions, start) => actions.reduce(model.reduce, start ?? model.initialState());
const started = () => run([{ type: 'sessionStarted', sessionId: 's1', folderName: 'proj', memory: true }]);
const call = (callId, name, args) => ev('tool_call', { callId, name, arguments: JSON.stringify(args) });
const result = (callId, content, ok = true) => ev('tool_result', { callId, name: '', ok, content });
const dom = (html) => new JSDOM(`<body>${html}</body>`).window.document;
const text = (el) => (el?.textContent ?? '').replace(/\s+/g, ' ').trim();
const turnDoc = (state, i = 0) => dom(render.renderTurn(state.turns[i], strings, md, sanitize));

const RAN = '$ pytest -q\nexit code 1 · 3.2 s\nstdout:\n1 failed, 4 passed\nstderr: (empty)';
const EDIT_DIFF = '--- a/src/app.py\n+++ b/src/app.py\n@@ -1,3 +1,3 @@\n def greet(name):\n-    return "hi " + name\n+    return "hello " + name\n x = 1\n';

test('tool rows say what they did, with the subject: read, search with its count, a command with its exit code', () => {
    const s = run(
        [
            { type: 'userSent', text: 'why does the discount test fail?' },
            call('c1', 'read_file', { path: 'tests/test_discount.py' }),
            result('c1', '1\timport pytest'),
            call('c2', 'search_text', { query: 'def volume_discount' }),
            result('c2', "1 matching line in 1 file for the text 'def volume_discount' in the workspace:\nsrc/d.py:3: def volume_discount(q):"),
            call('c3', 'list_files', { path: 'src' }),
            result('c3', '12 files under src:\nsrc/a.py'),
            call('c4', 'run_command', { command: 'pytest -q' }),
            ev('approval', { callId: 'c4', approved: true, reason: 'setting' }),
            result('c4', RAN),
            call('c5', 'search_text', { query: 'nothing here' }),
            result('c5', "No matches for the text 'nothing here' in the workspace."),
            call('c6', 'mystery', { a: 1 }),
            result('c6', 'ok'),
        ],
        started(),
    );
    const doc = turnDoc(s);
    const rows = [...doc.querySelectorAll('.tool[data-call-id], .approval[data-call-id]:not(.report)')];
    assert.deepEqual(
        rows.map((r) => text(r.querySelector('.tool-summary'))),
        [
            'Read tests/test_discount.py',
            "Searched 'def volume_discount': 1 match",
            'Listed src: 12 files',
            'Ran pytest -q: exit 1',
            "Searched 'nothing here': no matches",
            'Used mystery',
        ],
    );
    assert.deepEqual(rows.map((r) => r.dataset.state), ['done', 'done', 'done', 'done', 'done', 'done']);
    // The command's output is in view, without the tool's framing; its time is shown; no raw JSON for known tools.
    const command = rows[3];
    assert.equal(command.querySelector('pre.output').textContent, '1 failed, 4 passed');
    assert.equal(text(command.querySelector('.elapsed')), '3.2 s');
    assert.match(text(command.querySelector('.approval.report')), /Approved by your settings/);
    const labels = [...doc.querySelectorAll('.label')].map((l) => l.textContent);
    assert.deepEqual(labels.filter((l) => l === 'Arguments'), ['Arguments'], 'raw arguments only for the tool without a summary');
    assert.match(text(rows[5]), /Arguments.*"a": 1/);
});

test('statuses say what happened: denied, stopped (after Stop, not "running…"), timed out, failed', () => {
    const denied = run(
        [
            { type: 'userSent', text: 'a' },
            call('c1', 'run_command', { command: 'rm -rf build' }),
            { type: 'approvalRequested', request: { callId: 'c1', approvalKind: 'command', title: 'Run `rm -rf build`', detail: 'rm -rf build', canDiff: false } },
            { type: 'approvalDecided', callId: 'c1', status: 'denied' },
            result('c1', 'Error: The user declined the command `rm -rf build`; nothing was done.', false),
        ],
        started(),
    );
    const card = turnDoc(denied).querySelector('.approval');
    assert.equal(card.dataset.state, 'denied');
    assert.equal(text(card.querySelector('.approval-status')), 'Denied');
    assert.equal(card.querySelector('.status'), null, 'said once, by the card');
    assert.equal(text(card.querySelector('.tool-summary')), 'Run rm -rf build');

    const stopped = run(
        [{ type: 'userSent', text: 'b' }, call('c2', 'read_file', { path: 'big.log' }), { type: 'stopped' }],
        started(),
    );
    const row = turnDoc(stopped).querySelector('[data-call-id="c2"]');
    assert.equal(row.dataset.state, 'stopped');
    assert.equal(text(row.querySelector('.status')), 'stopped');
    assert.doesNotMatch(text(row), /running/);

    const timedOut = run(
        [
            { type: 'userSent', text: 'c' },
            call('c3', 'run_command', { command: 'sleep 9' }),
            result('c3', 'Error: The command did not finish within 1 s; it and its process group were stopped.\n$ sleep 9\nstopped (timeout) · 1.0 s\nstdout: (empty)\nstderr: (empty)', false),
            call('c4', 'read_file', { path: 'nope.txt' }),
            result('c4', 'Error: nope.txt does not exist.', false),
        ],
        started(),
    );
    const doc = turnDoc(timedOut);
    assert.equal(doc.querySelector('[data-call-id="c3"]').dataset.state, 'timed-out');
    assert.equal(text(doc.querySelector('[data-call-id="c3"] .status')), 'timed out');
    assert.equal(doc.querySelector('[data-call-id="c3"] pre.output').textContent, '(no output)');
    assert.equal(doc.querySelector('[data-call-id="c4"]').dataset.state, 'failed');
    // A restored result without its card still says it was declined or stopped.
    const part = { kind: 'tool', callId: 'x', name: 'edit_file', arguments: '{}', result: 'Error: The turn was cancelled before the edit was approved', ok: false };
    assert.equal(toolView.toolState(part, undefined, 'done'), 'stopped');
    assert.equal(toolView.toolState({ ...part, result: 'Error: The user declined the edit of a.py' }, undefined, 'done'), 'denied');
});

test("a command's card and its output belong together, in order; while it runs: live output and the clock", () => {
    const request = { callId: 'c1', approvalKind: 'command', title: 'Run `pytest -q`', detail: 'pytest -q', cwd: 'proj', canDiff: false };
    let s = run(
        [{ type: 'userSent', text: 'run the tests' }, call('c1', 'run_command', { command: 'pytest -q' }), { type: 'approvalRequested', request }],
        started(),
    );
    let doc = turnDoc(s);
    assert.equal(doc.querySelectorAll('.approval[data-call-id="c1"], .tool[data-call-id="c1"]').length, 1, 'one row: the card (no tool row above it)');
    assert.match(text(doc.querySelector('.approval')), /The agent wants to run a command.*pytest -q.*in proj.*Approve.*Deny/);
    s = run(
        [
            { type: 'approvalDecided', callId: 'c1', status: 'approved', at: 1000 },
            ev('approval', { callId: 'c1', approved: true, reason: 'user' }, 1001),
            ev('command_output', { callId: 'c1', stream: 'stdout', text: '..F' }, 2000),
            ev('command_output', { callId: 'c1', stream: 'stderr', text: '\nwarning\n' }, 2500),
        ],
        s,
    );
    const tool = s.turns[0].parts.find((p) => p.kind === 'tool');
    assert.equal(tool.startedAt, 1000, 'the clock starts at the approval');
    assert.equal(tool.output, '..F\nwarning\n');
    doc = turnDoc(s);
    const card = doc.querySelector('.approval');
    assert.equal(card.dataset.state, 'running');
    assert.equal(text(card.querySelector('.tool-summary')), 'Running pytest -q');
    assert.equal(text(card.querySelector('.status')), 'running…');
    assert.equal(card.querySelector('.elapsed').dataset.started, '1000', 'the webview ticks it');
    assert.equal(card.querySelector('pre.output.live').textContent, '..F\nwarning\n');
    assert.equal(card.querySelector('button[data-action="approve"]'), null);
    s = run([result('c1', RAN)], s);
    assert.equal(s.turns[0].parts.find((p) => p.kind === 'tool').output, undefined, 'the result holds it all');
    doc = turnDoc(s);
    const done = doc.querySelector('.approval');
    assert.equal(text(done.querySelector('.tool-summary')), 'Ran pytest -q: exit 1');
    assert.equal(text(done.querySelector('.elapsed')), '3.2 s');
    assert.equal(done.querySelector('pre.output').textContent, '1 failed, 4 passed');
    const order = [...done.querySelectorAll('.approval-head, pre.output')].map((e) => e.className);
    assert.deepEqual(order, ['approval-head', 'output'], 'the output comes after the card it belongs to');
    // A flood keeps its latest part (the result has the rest).
    const flood = run([ev('command_output', { callId: 'c9', stream: 'stdout', text: 'x' })], s);
    assert.deepEqual(flood, s, 'output of a call the turn does not have changes nothing');
    const long = model.reduce(
        run([{ type: 'userSent', text: 'y' }, call('c2', 'run_command', { command: 'yes' })], started()),
        ev('command_output', { callId: 'c2', stream: 'stdout', text: 'y\n'.repeat(20_000) + 'END' }),
    );
    const out = long.turns[0].parts[0].output;
    assert.ok(out.length <= model.MAX_LIVE_OUTPUT && out.endsWith('END'), out.length);
});

test('an approved edit says which file and lines changed and offers to open it there; the diff button goes', () => {
    const request = { callId: 'e1', approvalKind: 'edit', title: 'Edit src/app.py', detail: EDIT_DIFF, path: 'src/app.py', canDiff: true };
    let s = run(
        [
            { type: 'userSent', text: 'say hello' },
            call('e1', 'edit_file', { path: 'src/app.py', old_text: 'hi', new_text: 'hello' }),
            { type: 'approvalRequested', request },
        ],
        started(),
    );
    let card = turnDoc(s).querySelector('.approval');
    assert.deepEqual([...card.querySelectorAll('button')].map((b) => b.dataset.action), ['approve', 'deny', 'openDiff']);
    assert.equal(card.querySelector('.approval-sub'), null, "the server's title repeats the heading");
    s = run([{ type: 'approvalDecided', callId: 'e1', status: 'approved' }, result('e1', 'Edited src/app.py (1 replacement).')], s);
    card = turnDoc(s).querySelector('.approval');
    assert.equal(text(card.querySelector('.tool-summary')), 'Edited src/app.py');
    assert.equal(text(card.querySelector('.change-note span')), 'Changed src/app.py, line 2.');
    assert.deepEqual([...card.querySelectorAll('button')].map((b) => b.dataset.action), ['openChange']);
    assert.ok(card.querySelector('details.approval-diff'), 'the diff stays, collapsed');
    // A conflict after the approval is shown in place of the note.
    const failed = run([{ type: 'approvalDecided', callId: 'e1', status: 'approved' }, result('e1', 'Error: `src/app.py` changed since the diff.', false)], run([{ type: 'userSent', text: 'x' }, call('e1', 'edit_file', { path: 'src/app.py' }), { type: 'approvalRequested', request }], started()));
    const error = turnDoc(failed).querySelector('.approval .error');
    assert.equal(error.innerHTML, '<code>src/app.py</code> changed since the diff.');
    // A denied edit can still be looked at side by side.
    const denied = run([{ type: 'approvalDecided', callId: 'e1', status: 'denied' }], run([{ type: 'userSent', text: 'x' }, call('e1', 'edit_file', { path: 'src/app.py' }), { type: 'approvalRequested', request }], started()));
    assert.deepEqual([...turnDoc(denied).querySelectorAll('.approval button')].map((b) => b.dataset.action), ['openDiff']);
});

test('changed lines come from the hunks: several hunks, a pure deletion, a new file', () => {
    assert.deepEqual(toolView.changedLines(EDIT_DIFF), { start: 2, end: 2 });
    const two = '@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -10,3 +10,4 @@\n c\n+d\n+e\n f\n';
    assert.deepEqual(toolView.changedLines(two), { start: 1, end: 12 });
    assert.deepEqual(toolView.changedLines('@@ -5,2 +4,0 @@\n-x\n-y\n'), { start: 5, end: 5 });
    assert.deepEqual(toolView.changedLines('--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n'), { start: 1, end: 3 });
    assert.equal(toolView.changedLines('no hunks here'), undefined);
});

test('errors carry their way out: Retry, Set API Key, Open Settings, Show Output', () => {
    assert.equal(classifyFailure('No model configured: set the `myAgent.model` setting or MY_AGENT_MODEL.', -32001), 'noModel');
    assert.equal(classifyFailure('Could not start a chat session: No model configured: set the `myAgent.model` setting'), 'noModel');
    assert.equal(classifyFailure('No model endpoint configured: set OPENAI_API_KEY (and OPENAI_BASE_URL ...)', -32001), 'noKey');
    assert.equal(classifyFailure('The model endpoint answered HTTP 401: Incorrect API key provided', -32002), 'auth');
    assert.equal(classifyFailure('Cannot reach the model endpoint http://localhost:1/v1/chat/completions: ConnectError', -32002), 'unreachable');
    assert.equal(classifyFailure('anything', undefined, 'connection'), 'unreachable');
    assert.equal(classifyFailure('The model endpoint answered HTTP 404: The model `gpt-9` does not exist'), 'badModel');
    assert.equal(classifyFailure('The model endpoint answered HTTP 500: oops'), 'other');
    assert.deepEqual(failureActions('auth'), ['setApiKey', 'retry', 'showOutput']);
    assert.deepEqual(failureActions('unreachable'), ['retry', 'openSettings', 'showOutput']);

    const s = run(
        [{ type: 'userSent', text: 'hi' }, ev('error', { message: 'The model endpoint answered HTTP 401: bad `key`', errorKind: 'http' }), { type: 'failed', message: 'x', code: -32002 }],
        started(),
    );
    assert.equal(s.turns[0].errorKind, 'auth');
    const error = turnDoc(s).querySelector('.error[role=alert]');
    assert.equal(error.querySelector('.error-text').innerHTML, 'Error: The model endpoint answered HTTP 401: bad <code>key</code>');
    const buttons = [...error.querySelectorAll('button')];
    assert.deepEqual(buttons.map((b) => [b.dataset.action, b.dataset.turn, b.textContent]), [
        ['setApiKey', '1', 'Set API Key'],
        ['retry', '1', 'Retry'],
        ['showOutput', '1', 'Show Output'],
    ]);
    const unreachable = run([{ type: 'userSent', text: 'hi' }, { type: 'failed', message: 'Cannot reach the model endpoint http://x', code: -32002 }], started());
    assert.equal(unreachable.turns[0].errorKind, 'unreachable');
    // A retry drops the failed turn; the resent message keeps the chips waiting for the next one.
    const chip = { id: 'k', uri: 'file:///w/a.py', label: 'a.py' };
    const retried = run(
        [{ type: 'attach', chips: [chip] }, { type: 'dropTurn', id: 1 }, { type: 'userSent', text: 'hi', context: [chip], retry: true }],
        unreachable,
    );
    assert.deepEqual(retried.turns.map((t) => [t.id, t.user]), [[2, 'hi']]);
    assert.deepEqual(retried.attachments, [chip]);
});

test('inline code renders in cards, errors and notices; everything else stays escaped', () => {
    assert.equal(inlineCode('Run `pytest -q` <now>'), 'Run <code>pytest -q</code> &lt;now&gt;');
    assert.equal(inlineCode('a `<b>` c'), 'a <code>&lt;b&gt;</code> c');
    assert.equal(inlineCode('unclosed `tick'), 'unclosed `tick');
    const notice = panels.renderNotice({ ...model.initialState(), notice: 'set `myAgent.model`' });
    assert.match(notice, /<code>myAgent\.model<\/code>/);
    const memory = { callId: 'm', approvalKind: 'memory', title: 'Add to `MEMORY.md`', detail: '+x', path: '.my_agent_core/memory/MEMORY.md', canDiff: false };
    const s = run([{ type: 'userSent', text: 'x' }, { type: 'approvalRequested', request: memory }], started());
    assert.equal(turnDoc(s).querySelector('.approval-sub').innerHTML, 'Add to <code>MEMORY.md</code>');
});

test('a bare file name is not a web link; workspace paths link to the file in the editor; web links stay', () => {
    const html = render.renderMarkdown(
        md,
        'Saved it in MEMORY.md. See `MEMORY.md`, `src/app.py:12`, src/lib/util.ts:3-5 and `npm test`, ' +
            'Node.js, e.g. 1.2.3, [docs](https://example.com/a) and https://example.org. ' +
            '[click](javascript:alert(1)) `../../etc/passwd` `http://x.y/z.md`',
        sanitize,
    );
    const doc = dom(html);
    const links = [...doc.querySelectorAll('a')].map((a) => [a.textContent, a.getAttribute('href'), a.className]);
    assert.deepEqual(links, [
        ['MEMORY.md', 'MEMORY.md', 'path-link'],
        ['src/app.py:12', 'src/app.py#L12', 'path-link'],
        ['src/lib/util.ts:3-5', 'src/lib/util.ts#L3-L5', 'path-link'],
        ['docs', 'https://example.com/a', ''],
        ['https://example.org', 'https://example.org', ''],
    ]);
    assert.doesNotMatch(html, /href="javascript/);
    assert.equal(pathLinks.asPath('../secret.md'), undefined, 'nothing that climbs out of the folder');
    assert.deepEqual(pathLinks.asPath('./src/a.py'), { path: './src/a.py' });
    assert.doesNotMatch(html, /http:\/\/MEMORY\.md/);
    assert.doesNotMatch(html, /passwd["#]/, 'no link out of the folder');
    // The webview turns a clicked href back into what to open; web links, fragments and schemes are not paths.
    assert.deepEqual(pathLinks.pathFromHref('src/app.py#L12'), { path: 'src/app.py', line: 12 });
    assert.deepEqual(pathLinks.pathFromHref('src/lib/util.ts#L3-L5'), { path: 'src/lib/util.ts', line: 3, endLine: 5 });
    assert.deepEqual(pathLinks.pathFromHref('src/my%20file.py'), { path: 'src/my file.py' });
    for (const href of ['https://example.com', '#top', 'mailto:a@b.c', 'command:workbench.action.quit', '//evil.example/x', '']) {
        assert.equal(pathLinks.pathFromHref(href), undefined, href);
    }
    assert.equal(pathLinks.asPath('e.g'), undefined);
    assert.equal(pathLinks.asPath('Node.js', false), undefined);
    assert.deepEqual(pathLinks.asPath('Makefile'), { path: 'Makefile' });
});

test('before the first message: the setup state, with the model, the endpoint, the key and a local server', () => {
    const none = { model: '', modelFrom: '', baseUrl: '', baseUrlFrom: '', key: 'none', trusted: true };
    const doc = dom(panels.renderWelcome({ ...model.initialState(), setup: none }, strings));
    const rows = [...doc.querySelectorAll('.setup-row')].map((r) => [text(r.querySelector('.setup-label')), text(r.querySelector('.setup-value')), r.classList.contains('missing')]);
    assert.deepEqual(rows, [
        ['Model', 'not set', true],
        ['Base URL', 'OpenAI (the default)', false],
        ['API key', 'none (a local server needs none)', true],
    ]);
    assert.deepEqual([...doc.querySelectorAll('button')].map((b) => b.dataset.action), ['openSettings', 'setApiKey']);
    assert.match(text(doc.querySelector('ul.local')), /Ollama.*http:\/\/localhost:11434\/v1.*llama\.cpp.*vLLM/);
    const local = { model: 'llama3.2', modelFrom: 'env', baseUrl: 'http://localhost:11434/v1', baseUrlFrom: 'setting', key: 'none', trusted: true };
    const ready = dom(panels.renderWelcome({ ...model.initialState(), setup: local }, strings));
    assert.equal(ready.querySelector('.setup'), null);
    assert.equal(text(ready.querySelector('.ready')), 'Ready: llama3.2 · http://localhost:11434/v1');
    // The setup survives New chat.
    const kept = run([{ type: 'setup', setup: local }, { type: 'sessionStarted', sessionId: 's2', folderName: 'p', memory: true }]);
    assert.deepEqual(kept.setup, local);
});

test('Restricted Mode: a banner says what is off and why, the welcome promises no memory, the badge explains', () => {
    const restricted = { model: 'm', modelFrom: 'setting', baseUrl: '', baseUrlFrom: '', key: 'env', trusted: false };
    const state = { ...model.initialState(), setup: restricted };
    const banner = dom(panels.renderBanner(state, strings));
    assert.match(text(banner.body), /Restricted Mode: this folder is not trusted.*without memory.*without workspace tools.*context files/);
    assert.equal(banner.querySelector('button').dataset.action, 'manageTrust');
    assert.equal(panels.renderBanner({ ...state, setup: { ...restricted, trusted: true } }, strings), '');
    assert.match(panels.renderWelcome(state, strings), /In Restricted Mode it has no memory and no tools/);
    const off = dom(panels.renderHeader({ ...started(), memory: false }, strings)).querySelector('.badge');
    assert.equal(off.textContent, 'memory off');
    assert.match(off.getAttribute('title'), /not trusted/);
    const on = dom(panels.renderHeader(started(), strings)).querySelector('.badge');
    assert.match(on.getAttribute('title'), /as they were when it started/);
    assert.equal(panels.renderNotice(state), '', 'the header is one line: the notice has its own');
});

test('events and webview messages of the new kinds are validated', () => {
    assert.deepEqual(parseChatEvent({ sessionId: 's', kind: 'command_output', callId: 'c', stream: 'stderr', text: 'x' }), {
        sessionId: 's',
        kind: 'command_output',
        callId: 'c',
        stream: 'stderr',
        text: 'x',
    });
    assert.equal(parseChatEvent({ sessionId: 's', kind: 'command_output', callId: 'c', stream: 'stdin', text: 'x' }), undefined);
    assert.equal(parseChatEvent({ sessionId: 's', kind: 'command_output', callId: 'c', stream: 'stdout', text: 5 }), undefined);
    assert.equal(parseChatEvent({ sessionId: 's', kind: 'error', message: 'm', errorKind: 'http' }).errorKind, 'http');
    assert.deepEqual(parseWebviewMessage({ type: 'retry', turnId: 3 }), { type: 'retry', turnId: 3 });
    assert.equal(parseWebviewMessage({ type: 'retry', turnId: '3' }), undefined);
    assert.deepEqual(parseWebviewMessage({ type: 'action', action: 'setApiKey' }), { type: 'action', action: 'setApiKey' });
    assert.equal(parseWebviewMessage({ type: 'action', action: 'workbench.action.quit' }), undefined);
    assert.deepEqual(parseWebviewMessage({ type: 'openPath', path: 'src/a.py', line: 3, endLine: 4 }), { type: 'openPath', path: 'src/a.py', line: 3, endLine: 4 });
    assert.deepEqual(parseWebviewMessage({ type: 'openPath', path: 'a.py', line: -1 }), { type: 'openPath', path: 'a.py' });
    assert.equal(parseWebviewMessage({ type: 'openPath', path: 'a\nb' }), undefined);
    assert.equal(parseWebviewMessage({ type: 'openPath', path: 'x'.repeat(1001) }), undefined);
    assert.deepEqual(parseWebviewMessage({ type: 'openChange', callId: 'c1' }), { type: 'openChange', callId: 'c1' });
    assert.deepEqual(parseWebviewMessage({ type: 'focus', focused: true }), { type: 'focus', focused: true });
    assert.equal(parseWebviewMessage({ type: 'focus', focused: 'yes' }), undefined);
});

test('command results parse into exit code, time and output as a terminal shows it', () => {
    assert.deepEqual(toolView.parseCommandResult(RAN), { exit: 1, signal: undefined, seconds: 3.2, output: '1 failed, 4 passed' });
    const both = '$ make\nexit code 2 · 0.5 s\nstdout:\nbuilding\nstderr:\nerror: x';
    assert.equal(toolView.parseCommandResult(both).output, 'building\nstderr:\nerror: x');
    const killed = '$ a\nkilled by signal SIGKILL · 1.0 s\n[processes the command left running in the background were stopped when it ended]\nstdout: (empty)\nstderr:\nboom';
    assert.deepEqual(toolView.parseCommandResult(killed), {
        exit: undefined,
        signal: 'SIGKILL',
        seconds: 1,
        output: '[processes the command left running in the background were stopped when it ended]\nboom',
    });
    assert.deepEqual(toolView.parseCommandResult('Error: The command is empty'), { output: 'Error: The command is empty' });
});
