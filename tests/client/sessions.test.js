'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { JSDOM } = require('jsdom');
const model = require('../../client/out/chatModel.js');
const history = require('../../client/out/chatHistory.js');
const events = require('../../client/out/chatEvents.js');
const panels = require('../../client/out/webview/panels.js');
const render = require('../../client/out/webview/render.js');
const { parseWebviewMessage, MAX_DRAFT } = require('../../client/out/webview/messages.js');
const { uiStrings } = require('../../client/out/chat/strings.js');

const strings = uiStrings();
const md = render.createMarkdown();
const run = (actions, start = model.initialState()) => actions.reduce(model.reduce, start);
const started = () => run([{ type: 'sessionStarted', sessionId: 's1', folderName: 'proj', memory: true }]);
const ev = (kind, extra = {}) => ({ type: 'event', event: { sessionId: 's1', kind, ...extra } });
const text = (html) => new JSDOM(`<body>${html}</body>`).window.document.body.textContent;

// ---- resumed transcripts -----------------------------------------------------------------------------------

test('a resumed history becomes turns: text, tool calls matched to their results, failures, notes', () => {
    const turns = history.turnsFromHistory([
        { role: 'user', content: 'What is the test command?' },
        { role: 'assistant', content: '', toolCalls: [{ id: 't1', name: 'read_file', arguments: '{"path":"package.json"}' }, { id: 't2', name: 'run_command', arguments: '{}' }] },
        { role: 'tool', toolCallId: 't2', name: 'run_command', content: 'Error: refused by the user' },
        { role: 'tool', toolCallId: 't1', name: 'read_file', content: '1: {"scripts": {"test": "vitest"}}' },
        { role: 'assistant', content: 'It is `npm test` (vitest).' },
        { role: 'system', content: 'Summary of earlier turns: ...' },
        { role: 'user', content: 'Thanks\n\n<recalled_memory>\n- uses pnpm\n</recalled_memory>\n' },
    ]);
    assert.equal(turns.length, 2);
    const [first, second] = turns;
    assert.equal(first.user, 'What is the test command?');
    assert.equal(first.status, 'done');
    assert.equal(first.restored, true);
    assert.deepEqual(first.parts.map((p) => p.kind), ['tool', 'tool', 'text', 'note']);
    assert.deepEqual([first.parts[0].callId, first.parts[0].ok, first.parts[0].result], ['t1', true, '1: {"scripts": {"test": "vitest"}}']);
    assert.deepEqual([first.parts[1].callId, first.parts[1].ok], ['t2', false]);
    assert.equal(first.parts[3].role, 'system');
    // The recall block the server appended is shown apart, not as the user's words.
    assert.equal(second.user, 'Thanks');
    assert.deepEqual(second.parts[0], { kind: 'note', role: 'recalled', text: '- uses pnpm' });
    assert.equal(second.status, 'stopped', 'never answered: shown as interrupted');
    assert.deepEqual(history.splitRecalled('plain'), { text: 'plain' });
});

test('sessionResumed replaces the transcript, renumbers turns and keeps the chips for the next message', () => {
    const before = run([{ type: 'userSent', text: 'old' }, { type: 'attach', chips: [{ id: 'u', uri: 'file:///w/a.ts', label: 'a.ts' }] }], started());
    const turns = history.turnsFromHistory([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }]);
    const s = model.reduce(before, { type: 'sessionResumed', sessionId: 's9', folderName: 'proj', memory: false, turns, notice: 'Reopened your last chat.' });
    assert.equal(s.sessionId, 's9');
    assert.equal(s.memory, false);
    assert.equal(s.turns.length, 1);
    assert.ok(s.turns[0].id >= before.nextId, 'ids never repeat in one webview');
    assert.equal(s.nextId, s.turns[0].id + 1);
    assert.equal(s.attachments.length, 1);
    assert.equal(s.notice, 'Reopened your last chat.');
    assert.deepEqual(s.meter, { live: [] });
    assert.equal(model.isBusy(s), false);
    assert.equal(model.isBusy(model.reduce(s, { type: 'restoring', on: true })), true, 'sending waits while a resume runs');
});

test('history rows: newest first, unused sessions hidden unless current, titles and folder names filled in', () => {
    const sessions = events.parseSessions({
        sessions: [
            { sessionId: 'a', title: 'Fix the build', created: 100, updated: 200, folder: 'file:///w/app', messages: 6, memory: true, active: false },
            { sessionId: 'b', title: '', created: 300, updated: 900, folder: 'file:///w/lib', messages: 2, memory: true, active: true },
            { sessionId: 'empty', title: '', created: 950, updated: 950, folder: 'file:///w/app', messages: 0 },
            { sessionId: 'cur', title: '', created: 990, updated: 990, folder: 'file:///w/app', messages: 0 },
            { title: 'no id' },
            'junk',
        ],
    });
    assert.equal(sessions.length, 4);
    const rows = history.historyRows(sessions, {
        currentId: 'cur',
        folderName: (u) => u.split('/').pop(),
        formatWhen: (sec) => `t${sec}`,
        untitled: '(untitled chat)',
    });
    assert.deepEqual(
        rows.map((r) => [r.sessionId, r.title, r.when, r.folderName, r.messages, r.current]),
        [
            ['cur', '(untitled chat)', 't990', 'app', 0, true],
            ['b', '(untitled chat)', 't900', 'lib', 2, false],
            ['a', 'Fix the build', 't200', 'app', 6, false],
        ],
    );
    // An older server's list (no title, no dates, no counts) still parses.
    assert.deepEqual(events.parseSessions({ sessions: [{ sessionId: 'x', folder: 'file:///w', memory: false }] }), [
        { sessionId: 'x', title: '', created: 0, updated: 0, folder: 'file:///w', messages: 0, memory: false, active: false },
    ]);
    assert.deepEqual(events.parseSessions(null), []);
});

test('the history panel renders rows with Reopen and Delete, escaped, and its empty/error/loading states', () => {
    const closed = panels.renderHistory({ open: false, loading: false, rows: [] }, strings);
    assert.equal(closed, '');
    assert.match(text(panels.renderHistory({ open: true, loading: true, rows: [] }, strings)), /Loading…/);
    assert.match(text(panels.renderHistory({ open: true, loading: false, rows: [] }, strings)), /No saved sessions yet/);
    assert.match(text(panels.renderHistory({ open: true, loading: false, rows: [], error: 'boom' }, strings)), /Could not list the sessions: boom/);
    const rows = [
        { sessionId: 'a"<x>', title: '<img src=x onerror=alert(1)>', when: 'today', folderName: 'app', messages: 3, current: true },
        { sessionId: 'b', title: 'Second', when: '', folderName: '', messages: 1, current: false },
    ];
    const doc = new JSDOM(`<body>${panels.renderHistory({ open: true, loading: false, rows }, strings)}</body>`).window.document;
    assert.equal(doc.querySelectorAll('img,script').length, 0);
    const resume = doc.querySelectorAll('button[data-action="resume"]');
    assert.equal(resume.length, 2);
    assert.equal(resume[0].dataset.sessionId, 'a"<x>');
    assert.equal(resume[0].getAttribute('aria-current'), 'true');
    assert.match(resume[0].textContent, /open now/);
    assert.match(resume[0].textContent, /today · app · 3 messages/);
    assert.equal(doc.querySelectorAll('button[data-action="deleteSession"]').length, 2);
    assert.equal(doc.querySelector('button[data-action="deleteSession"]').getAttribute('aria-label'), 'Delete <img src=x onerror=alert(1)>');
});

// ---- compaction ----------------------------------------------------------------------------------------------

test('compaction: a marker where the server compacted; a manual Compact yields exactly one', () => {
    const during = run([{ type: 'userSent', text: 'long task' }, ev('compacted', { reason: 'threshold', before: 40, after: 6 })], started());
    assert.deepEqual(during.turns[0].parts[0], { kind: 'compacted', reason: 'threshold', before: 40, after: 6 });
    assert.match(text(render.renderTurn(during.turns[0], strings, md, (h) => h)), /Compacted: 40 messages → 6 \(the context was filling up\)/);

    const idle = run([{ type: 'userSent', text: 'q' }, ev('done', { reply: 'a' })], started());
    // The event arrives before the response (as the protocol orders them): one marker.
    const both = run(
        [{ type: 'compactStarted' }, ev('compacted', { reason: 'manual', before: 12, after: 4 }), { type: 'compactFinished', compacted: true, before: 12, after: 4 }],
        idle,
    );
    assert.equal(both.turns[0].parts.filter((p) => p.kind === 'compacted').length, 1);
    assert.equal(both.compacting, false);
    // A server that only answers: the response adds it.
    const answerOnly = run([{ type: 'compactStarted' }, { type: 'compactFinished', compacted: true, before: 12, after: 4 }], idle);
    assert.deepEqual(answerOnly.turns[0].parts.at(-1), { kind: 'compacted', reason: 'manual', before: 12, after: 4 });
    // Nothing compacted: no marker, a notice.
    const nothing = run([{ type: 'compactStarted' }, { type: 'compactFinished', compacted: false, before: 2, after: 2, notice: 'Nothing to compact yet' }], idle);
    assert.equal(nothing.turns[0].parts.filter((p) => p.kind === 'compacted').length, 0);
    assert.equal(nothing.notice, 'Nothing to compact yet');
    assert.equal(model.isBusy(run([{ type: 'compactStarted' }], idle)), true);
});

// ---- the cache meter -----------------------------------------------------------------------------------------

test('cache meter: hit rate and tokens from cache; n/a when the provider reports nothing (never 0%)', () => {
    let s = run([{ type: 'userSent', text: 'q' }], started());
    assert.equal(model.cacheHitText(model.meterFigures(s.meter)), undefined, 'nothing before the first request');
    assert.equal(panels.renderMeter(s, strings), '');

    const unreported = run([ev('usage', { promptTokens: 1200, completionTokens: 30, cachedTokens: null })], s);
    assert.deepEqual(model.meterFigures(unreported.meter), { requests: 1, promptTokens: 1200, cachedTokens: null, hitRate: null });
    assert.equal(text(panels.renderMeter(unreported, strings)), 'Prompt cache hits: n/a');
    assert.match(panels.renderMeter(unreported, strings), /title="The provider reports no prompt-cache figures/);

    s = run(
        [ev('usage', { promptTokens: 2000, completionTokens: 10, cachedTokens: 0 }), ev('usage', { promptTokens: 2100, completionTokens: 10, cachedTokens: 1920 })],
        s,
    );
    const live = model.meterFigures(s.meter);
    assert.deepEqual(live, { requests: 2, promptTokens: 4100, cachedTokens: 1920, hitRate: 1920 / 4100 });
    assert.equal(text(panels.renderMeter(s, strings)), 'Prompt cache hits: 47% 1.9k tokens from cache');
    // done brings the server's session totals; they replace the live sum (no double counting).
    s = model.reduce(s, ev('done', { reply: 'a', usage: { promptTokens: 4100, completionTokens: 20, cachedTokens: 1920, requests: 2, cacheHitRate: 0.468 } }));
    assert.deepEqual(model.meterFigures(s.meter), live);
    // A later turn adds to the totals live.
    s = run([{ type: 'userSent', text: 'q2' }, ev('usage', { promptTokens: 2200, completionTokens: 5, cachedTokens: 2048 })], s);
    assert.equal(model.meterFigures(s.meter).requests, 3);
    assert.equal(model.meterFigures(s.meter).cachedTokens, 3968);
    // Mixed: a request without a figure does not count as a miss.
    const mixed = model.meterFigures({ live: [{ promptTokens: 1000, completionTokens: 1, cachedTokens: 900 }, { promptTokens: 1000, completionTokens: 1, cachedTokens: null }] });
    assert.equal(mixed.hitRate, 0.9);
    assert.equal(model.tokenCount(999), '999');
    assert.equal(model.tokenCount(12345), '12k');
    assert.equal(model.tokenCount(2_500_000), '2.5M');
});

test('a cache drop is shown in the turn and the meter, with its reason', () => {
    const s = run(
        [
            { type: 'userSent', text: 'q' },
            ev('usage', { promptTokens: 5000, completionTokens: 9, cachedTokens: 128, cacheDrop: { reason: 'compaction', expected: 4096, got: 128 } }),
        ],
        started(),
    );
    assert.deepEqual(s.turns[0].parts[0], { kind: 'cacheDrop', drop: { reason: 'compaction', expected: 4096, got: 128 } });
    const line = text(render.renderTurn(s.turns[0], strings, md, (h) => h));
    assert.match(line, /Prompt cache dropped: about 4\.1k cached tokens expected, 128 read\. Why: the session was compacted\./);
    assert.match(panels.renderMeter(s, strings), /class="cache dropped"/);
    for (const [reason, want] of [['resume', /reopened/], ['model_change', /model changed/], ['expired', /expired/], ['unknown', /unknown/]]) {
        assert.match(panels.dropReasonText({ reason, expected: 1, got: 0 }, strings), want);
    }
});

// ---- validation of what the server sends ---------------------------------------------------------------------

test('events are validated: wrong types are dropped, nullable cache figures kept as null', () => {
    const p = events.parseChatEvent;
    assert.equal(p(null), undefined);
    assert.equal(p({ kind: 'delta', text: 'x' }), undefined, 'no session id');
    assert.equal(p({ sessionId: 's', kind: 'delta', text: 5 }), undefined);
    assert.equal(p({ sessionId: 's', kind: 'nope' }), undefined);
    assert.deepEqual(p({ sessionId: 's', kind: 'usage', promptTokens: 10, completionTokens: 2, cachedTokens: null }), {
        sessionId: 's',
        kind: 'usage',
        promptTokens: 10,
        completionTokens: 2,
        cachedTokens: null,
    });
    assert.equal(p({ sessionId: 's', kind: 'usage', promptTokens: 10, cachedTokens: 'lots' }), undefined);
    assert.equal(p({ sessionId: 's', kind: 'usage', promptTokens: -1, cachedTokens: 0 }), undefined);
    assert.deepEqual(p({ sessionId: 's', kind: 'usage', promptTokens: 10, completionTokens: 1, cachedTokens: 5, cacheDrop: { reason: 'weird', expected: 9, got: 5 } }).cacheDrop, {
        reason: 'unknown',
        expected: 9,
        got: 5,
    });
    assert.deepEqual(p({ sessionId: 's', kind: 'done', reply: 'r', usage: { promptTokens: 1, completionTokens: 1, cachedTokens: null, requests: 1, cacheHitRate: null } }).usage, {
        promptTokens: 1,
        completionTokens: 1,
        cachedTokens: null,
        requests: 1,
        cacheHitRate: null,
    });
    assert.equal(p({ sessionId: 's', kind: 'tool_call', callId: 'c', name: 'x', arguments: { a: 1 } }).arguments, '{"a":1}');
    assert.equal(p({ sessionId: 's', kind: 'compacted', reason: 'manual', before: 'x', after: 1 }), undefined);
    assert.equal(p({ sessionId: 's', kind: 'approval', callId: 'c', approved: 'yes' }), undefined);
    assert.equal(p({ sessionId: 's', kind: 'approval', callId: 'c', approved: false, reason: 'nonsense' }).reason, 'error');
    // resume results
    assert.equal(events.parseResume({ sessionId: 's' }), undefined);
    assert.deepEqual(events.parseResume({ sessionId: 's', folder: 'file:///w', messages: [{ role: 'user', content: 'q' }, { role: 'hacker', content: 'x' }, { role: 'assistant', content: 5 }] }), {
        sessionId: 's',
        folder: 'file:///w',
        memory: true,
        messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: '' }],
    });
    assert.deepEqual(events.parseCompactResult({ compacted: true, before: 9, after: 3 }), { compacted: true, before: 9, after: 3 });
    assert.deepEqual(events.parseCompactResult('x'), { compacted: false, before: 0, after: 0 });
});

test('webview messages for sessions, compaction and drafts are validated', () => {
    assert.deepEqual(parseWebviewMessage({ type: 'resume', sessionId: 'a' }), { type: 'resume', sessionId: 'a' });
    assert.equal(parseWebviewMessage({ type: 'resume' }), undefined);
    assert.equal(parseWebviewMessage({ type: 'deleteSession', sessionId: 3 }), undefined);
    assert.deepEqual(parseWebviewMessage({ type: 'compact', now: true }), { type: 'compact' });
    assert.deepEqual(parseWebviewMessage({ type: 'showHistory' }), { type: 'showHistory' });
    assert.deepEqual(parseWebviewMessage({ type: 'draft', text: '' }), { type: 'draft', text: '' });
    assert.equal(parseWebviewMessage({ type: 'draft', text: 'x'.repeat(MAX_DRAFT + 1) }), undefined);
    assert.equal(parseWebviewMessage({ type: 'draft' }), undefined);
});
