'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { JSDOM } = require('jsdom');
const createDOMPurify = require('dompurify');
const model = require('../../client/out/chatModel.js');
const render = require('../../client/out/webview/render.js');
const { uiStrings } = require('../../client/out/chat/strings.js');
const { parseWebviewMessage } = require('../../client/out/webview/messages.js');
const { chatHtml } = require('../../client/out/chat/html.js');

const purify = createDOMPurify(new JSDOM('').window);
const sanitize = (html) => purify.sanitize(html, render.PURIFY_CONFIG);
const md = render.createMarkdown();
const strings = uiStrings();

const ev = (kind, extra = {}) => ({ type: 'event', event: { sessionId: 's1', kind, ...extra } });
const run = (actions, start = model.initialState()) => actions.reduce(model.reduce, start);
const started = () => run([{ type: 'sessionStarted', sessionId: 's1', folderName: 'proj', memory: true }]);

test('reducer folds a streamed turn: deltas, a tool call and its result, a memory change, done', () => {
    const s = run(
        [
            { type: 'userSent', text: 'remember pnpm' },
            ev('delta', { text: 'Saving ' }),
            ev('delta', { text: 'that.' }),
            ev('tool_call', { callId: 'c1', name: 'memory', arguments: '{"target":"memory","action":"add"}' }),
            ev('tool_result', { callId: 'c1', name: 'memory', ok: true, content: 'Added (20/2200)' }),
            ev('memory_changed', { target: 'memory', action: 'add', journalId: 'j1' }),
            ev('delta', { text: ' Done.' }),
            ev('usage', { promptTokens: 10, completionTokens: 2, cachedTokens: 0 }),
            ev('done', {
                reply: 'Done.',
                usage: { promptTokens: 200, completionTokens: 9, cachedTokens: 150, requests: 2, cacheHitRate: 0.75 },
            }),
        ],
        started(),
    );
    assert.equal(model.isBusy(s), false);
    const turn = s.turns[0];
    assert.equal(turn.status, 'done');
    assert.deepEqual(
        turn.parts.map((p) => p.kind),
        ['text', 'tool', 'memory', 'text'],
    );
    assert.equal(turn.parts[0].text, 'Saving that.');
    assert.equal(turn.parts[1].ok, true);
    assert.equal(turn.parts[1].result, 'Added (20/2200)');
    assert.equal(turn.parts[2].journalId, 'j1');
    assert.equal(model.cacheHitText(model.meterFigures(s.meter)), '75%');
    // The response arriving after `done` changes nothing.
    assert.deepEqual(model.reduce(s, { type: 'replied', reply: 'Done.', usage: s.meter.base }).turns, s.turns);
});

test('reducer: a reply that was not streamed is shown from done/response', () => {
    const s = run([{ type: 'userSent', text: 'hi' }, { type: 'replied', reply: 'hello' }], started());
    assert.deepEqual(s.turns[0].parts, [{ kind: 'text', text: 'hello' }]);
    assert.equal(s.turns[0].status, 'done');
});

test('reducer: events of another session are ignored', () => {
    const s = run([{ type: 'userSent', text: 'hi' }, { type: 'event', event: { sessionId: 'old', kind: 'delta', text: 'x' } }], started());
    assert.deepEqual(s.turns[0].parts, []);
    assert.equal(model.isBusy(s), true);
});

test('reducer: stop, errors and undo', () => {
    const stopped = run([{ type: 'userSent', text: 'a' }, ev('delta', { text: 'part' }), { type: 'stopped' }], started());
    assert.equal(stopped.turns[0].status, 'stopped');
    // A delta after stop is not appended; the next message is a new turn.
    const after = run([ev('delta', { text: 'late' }), { type: 'userSent', text: 'b' }], stopped);
    assert.equal(after.turns[0].parts[0].text, 'part');
    assert.equal(after.turns.length, 2);
    assert.equal(model.isBusy(after), true);

    const failed = run([{ type: 'userSent', text: 'a' }, { type: 'failed', message: 'No model configured' }], started());
    assert.equal(failed.turns[0].status, 'error');
    assert.equal(failed.turns[0].error, 'No model configured');
    const errEvent = run([{ type: 'userSent', text: 'a' }, ev('error', { message: 'HTTP 500' }), { type: 'failed', message: 'x' }], started());
    assert.equal(errEvent.turns[0].error, 'HTTP 500');

    const undone = run(
        [
            { type: 'userSent', text: 'a' },
            ev('memory_changed', { target: 'user', action: 'replace', journalId: 'j9' }),
            ev('done', { reply: '' }),
            { type: 'undone', journalId: 'j9', message: 'Reverted replace' },
        ],
        started(),
    );
    assert.equal(undone.turns[0].parts[0].undone, true);

    const lost = run([{ type: 'userSent', text: 'a' }, { type: 'sessionLost', notice: 'restarted' }], started());
    assert.equal(lost.sessionId, undefined);
    assert.equal(lost.turns[0].status, 'error');
    assert.equal(model.isBusy(lost), false);
});

const NASTY = [
    '<script>alert(1)</script>',
    '<img src=x onerror="alert(1)">',
    '[click](javascript:alert(1))',
    '<a href="javascript:alert(2)">x</a>',
    '![img](https://evil.example/p.png)',
    '<iframe src="https://evil.example"></iframe>',
    '<svg onload=alert(1)>',
    '`<script>inline code</script>`',
    '```html\n<script>alert(3)</script>\n```',
    '<style>body{display:none}</style>',
    '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
].join('\n\n');

/** Checks the HTML string (tags only, escaped text is fine) and the DOM the webview would build from it. */
function assertSafe(html) {
    assert.doesNotMatch(html, /<\s*(script|img|iframe|svg|style|object|embed|form)\b/i);
    assert.doesNotMatch(html, /<[a-z][^>]*\son\w+\s*=/i, 'no event handler attribute in a tag');
    assert.doesNotMatch(html, /<[a-z][^>]*\s(href|src)\s*=\s*["']?\s*(javascript|data|vbscript):/i);
    assert.doesNotMatch(html, /<[a-z][^>]*\s(src|srcset|style)\s*=/i);
    const doc = new JSDOM(`<body>${html}</body>`).window.document;
    assert.equal(doc.querySelectorAll('script,img,iframe,svg,style,object,embed,form').length, 0);
    for (const el of doc.body.querySelectorAll('*')) {
        for (const attr of el.attributes) {
            assert.doesNotMatch(attr.name, /^on/i, `${el.tagName} has ${attr.name}`);
            if (attr.name === 'href') {
                assert.match(attr.value, /^(https?:|mailto:|#)/, `unexpected href ${attr.value}`);
            }
        }
    }
}

test('markdown from the model never reaches the DOM string with scripts, handlers or remote resources', () => {
    const html = render.renderMarkdown(md, NASTY, sanitize);
    assertSafe(html);
    assert.match(html, /&lt;script&gt;/); // shown as text
    // Even without the sanitizer, markdown-it (html:false, images off) emits no live markup.
    assertSafe(render.renderMarkdown(md, NASTY, (h) => h));
    // Real Markdown still renders.
    const ok = render.renderMarkdown(md, '# Title\n\n**bold** and `code` [link](https://example.com)', sanitize);
    assert.match(ok, /<h1>Title<\/h1>/);
    assert.match(ok, /<strong>bold<\/strong>/);
    assert.match(ok, /<a href="https:\/\/example.com"/);
});

test('a whole turn renders safely: user text escaped, tool calls collapsed, undo button labelled', () => {
    const s = run(
        [
            { type: 'userSent', text: '<img src=x onerror=alert(1)> please' },
            ev('tool_call', { callId: 'c"1', name: '<b>memory</b>', arguments: '{"content":"<script>x</script>"}' }),
            ev('tool_result', { callId: 'c"1', name: 'memory', ok: false, content: '<img onerror=1>' }),
            ev('memory_changed', { target: 'memory', action: 'add', journalId: '"><script>alert(1)</script>' }),
            ev('delta', { text: NASTY }),
            ev('error', { message: '<script>boom</script>' }),
        ],
        started(),
    );
    const html = render.renderTurn(s.turns[0], strings, md, sanitize);
    assertSafe(html);
    assert.match(html, /<details class="tool is-failed" data-call-id="c&quot;1" data-state="failed"><summary>/);
    assert.doesNotMatch(html, /<details[^>]*open/);
    assert.match(html, /&lt;b&gt;memory&lt;\/b&gt;/);
    assert.match(html, /<button type="button" class="undo" data-action="undo" data-journal-id="&quot;&gt;&lt;script&gt;/);
    assert.match(html, /aria-label="Undo this memory change"/);
    assert.match(html, /<div class="error" role="alert"><div class="error-text">Error: &lt;script&gt;boom/);
    // Parse it like the webview does and check the DOM too.
    const dom = new JSDOM(`<body>${html}</body>`);
    assert.equal(dom.window.document.querySelectorAll('script,img,iframe').length, 0);
    assert.equal(dom.window.document.querySelector('button.undo').dataset.journalId, '"><script>alert(1)</script>');
});

test('header shows folder, memory mode and the session cache hit rate', () => {
    let s = started();
    assert.match(render.renderHeader(s, strings), /proj.*memory on/);
    assert.doesNotMatch(render.renderHeader(s, strings), /cache/i);
    s = model.reduce(s, ev('done', { reply: '', usage: { promptTokens: 1000, completionTokens: 5, cachedTokens: 870, requests: 3, cacheHitRate: 0.87 } }));
    assert.match(render.renderHeader(s, strings), /Prompt cache hits: 87%/);
    const none = render.renderHeader(model.initialState(), strings);
    assert.match(none, /No chat session yet/);
});

test('messages from the webview are validated', () => {
    assert.deepEqual(parseWebviewMessage({ type: 'send', text: 'hi' }), { type: 'send', text: 'hi' });
    assert.equal(parseWebviewMessage({ type: 'send', text: '   ' }), undefined);
    assert.equal(parseWebviewMessage({ type: 'send', text: 5 }), undefined);
    assert.equal(parseWebviewMessage({ type: 'eval', code: 'x' }), undefined);
    assert.equal(parseWebviewMessage(null), undefined);
    assert.deepEqual(parseWebviewMessage({ type: 'undo', journalId: 7 }), { type: 'undo', journalId: undefined });
    assert.deepEqual(parseWebviewMessage({ type: 'stop', extra: 1 }), { type: 'stop' });
});

test('webview HTML has a strict nonce CSP and no remote resources', () => {
    const vscode = require('vscode');
    const webview = { cspSource: 'vscode-webview://abc', asWebviewUri: (u) => u };
    const html = chatHtml(webview, vscode.Uri.file('/ext'), strings);
    const csp = /content="(default-src 'none'; script-src 'nonce-([^']+)'; style-src vscode-webview:\/\/abc;)"/.exec(html);
    assert.ok(csp, 'CSP meta present');
    const nonce = csp[2];
    const scripts = html.match(/<script[^>]*>/g);
    assert.equal(scripts.length, 1);
    assert.ok(scripts[0].includes(`nonce="${nonce}"`));
    assert.doesNotMatch(html, /https?:\/\//);
    assert.doesNotMatch(html, /style="/);
    for (const id of ['send', 'stop', 'new-chat', 'snapshot']) {
        assert.match(html, new RegExp(`<button id="${id}"[^>]*aria-label="[^"]+"`));
    }
    assert.match(html, /<textarea id="input"[^>]*aria-label=/);
    assert.notEqual(chatHtml(webview, vscode.Uri.file('/ext'), strings).match(/nonce-([^']+)/)[1], nonce);
});

test('the webview renders a turn once per distinct content (a long transcript costs nothing per streamed delta)', () => {
    const { TurnRenderCache } = require('../../client/out/webview/turnCache.js');
    const calls = [];
    const cache = new TurnRenderCache((turn) => {
        calls.push(turn.id);
        return render.renderTurn(turn, strings, md, sanitize);
    });
    let s = run([{ type: 'userSent', text: 'a' }, { type: 'replied', reply: 'one' }, { type: 'userSent', text: 'b' }], started());
    const pass = (state) => state.turns.map((t) => cache.render(structuredClone(t)));
    assert.deepEqual(pass(s).map((r) => r.changed), [true, true]);
    assert.deepEqual(calls, [1, 2]);
    s = model.reduce(s, ev('delta', { text: 'stream' }));
    const second = pass(s);
    assert.deepEqual(second.map((r) => r.changed), [false, true], 'only the streaming turn changed');
    assert.deepEqual(calls, [1, 2, 2]);
    assert.match(second[1].html, /stream/);
    cache.retain(new Set([2]));
    assert.equal(cache.size, 1);
    assert.equal(cache.render(structuredClone(s.turns[0])).changed, true, 'a forgotten turn is rendered again');
});
