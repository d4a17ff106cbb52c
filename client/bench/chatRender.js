'use strict';
// What one streamed delta costs the chat webview with a long (resumed) transcript: rendering every turn's
// Markdown + DOMPurify on each state update (the peer, what the webview did before) vs. the per-turn cache
// (TurnRenderCache: only the streaming turn is rendered). Both run in this process on the same transcript.
// Usage: npm run compile:tests && node --require ./tests/client/register-vscode-stub.js client/bench/chatRender.js [turns]
const { JSDOM } = require('jsdom');
const createDOMPurify = require('dompurify');
const model = require('../out/chatModel.js');
const render = require('../out/webview/render.js');
const { TurnRenderCache } = require('../out/webview/turnCache.js');
const { uiStrings } = require('../out/chat/strings.js');

const TURNS = Number(process.argv[2] || 100);
const DELTAS = 30;
const purify = createDOMPurify(new JSDOM('').window);
const sanitize = (html) => purify.sanitize(html, render.PURIFY_CONFIG);
const md = render.createMarkdown();
const s = uiStrings();

const reply = (i) =>
    `## Step ${i}\n\nThe function \`range(n)\` in **src/range.ts** loops one past the end. Fix:\n\n` +
    '```ts\nfor (let i = 0; i < n; i++) {\n    out.push(i);\n}\n```\n\n- run `npm test`\n- check [the docs](https://example.com)\n';
let state = model.reduce(model.initialState(), { type: 'sessionStarted', sessionId: 's', folderName: 'w', memory: true });
for (let i = 0; i < TURNS; i++) {
    state = model.reduce(state, { type: 'userSent', text: `question ${i}` });
    state = model.reduce(state, { type: 'event', event: { sessionId: 's', kind: 'tool_call', callId: `c${i}`, name: 'read_file', arguments: '{"path":"src/range.ts"}' } });
    state = model.reduce(state, { type: 'event', event: { sessionId: 's', kind: 'tool_result', callId: `c${i}`, name: 'read_file', ok: true, content: '1: export function range(n) {...}' } });
    state = model.reduce(state, { type: 'replied', reply: reply(i) });
}
state = model.reduce(state, { type: 'userSent', text: 'one more' });
// The states the webview receives while the last reply streams (a structured clone each, as postMessage makes).
const updates = [];
for (let d = 0; d < DELTAS; d++) {
    state = model.reduce(state, { type: 'event', event: { sessionId: 's', kind: 'delta', text: `word${d} ` } });
    updates.push(structuredClone(state));
}

function time(fn) {
    const t0 = process.hrtime.bigint();
    fn();
    return Number(process.hrtime.bigint() - t0) / 1e6;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function runPeer() {
    return updates.map((u) => time(() => u.turns.forEach((t) => render.renderTurn(t, s, md, sanitize))));
}
function runCached() {
    const cache = new TurnRenderCache((t) => render.renderTurn(t, s, md, sanitize));
    cache.retain(new Set()); // cold: the first update renders everything, like a freshly opened view
    return updates.map((u) => time(() => u.turns.forEach((t) => cache.render(t))));
}
const peer = runPeer().slice(5); // the first updates warm the JIT up
const cached = runCached();
const p = median(peer);
const c = median(cached.slice(1)); // steady state: every update after the first
console.log(`chat webview, ${TURNS + 1} turns, ${DELTAS} streamed deltas (median ms per state update)`);
console.log(`  render every turn (peer):   ${p.toFixed(2)} ms`);
console.log(`  per-turn cache:             ${c.toFixed(2)} ms   (first update, cold: ${cached[0].toFixed(1)} ms)`);
console.log(`  ratio cache / peer:         ${(c / p).toFixed(3)}   (${(p / c).toFixed(0)}x less work per delta)`);
