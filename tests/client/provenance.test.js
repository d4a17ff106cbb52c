'use strict';
// Provenance in the Memory view (issue 19): each entry's tooltip says who made it and from what, as the server
// derived it from the journal (`origins`, parallel to `entries`, in memory/state and memory/changed).
const test = require('node:test');
const assert = require('node:assert/strict');
const tree = require('../../client/out/memoryTree.js');
const { applyChange } = require('../../client/out/memoryModel.js');

const store = (over = {}) => ({
    target: 'memory',
    path: '/ws/.my_agent_core/memory/MEMORY.md',
    used: 40,
    limit: 2200,
    entries: ['Build with make check', 'Prefers tabs'],
    available: true,
    ...over,
});
const storeNode = (s, marks) => ({ kind: 'store', folderUri: 'file:///ws', store: s, marks });
const ORIGINS = [
    { summary: "added 7 Dec by the chat 'Fix the tests' · text from README.md:5 · approved by you", known: 'recorded' },
    { summary: "added 7 Dec by the chat 'Fix the tests' · your own words", known: 'recorded' },
];

test('an entry tooltip ends with its origin in words', () => {
    const [copied, own] = tree.entryNodes(storeNode(store({ origins: ORIGINS }))).map((n) => tree.entryTreeItem(n));
    assert.equal(copied.tooltip, `Build with make check\n\nOrigin: ${ORIGINS[0].summary}`);
    assert.match(own.tooltip, /Origin: added 7 Dec by the chat 'Fix the tests' · your own words$/);
});

test('a fresh entry keeps its snapshot note and adds its origin', () => {
    const marks = { fresh: [true, false], removed: [] };
    const [fresh] = tree.entryNodes(storeNode(store({ origins: ORIGINS }), marks)).map((n) => tree.entryTreeItem(n));
    assert.match(fresh.tooltip, /does not see it\. The agent sees it after New Chat\.\nOrigin: added 7 Dec/);
});

test('no origins, or origins that do not match the entries, leave the tooltip as the text', () => {
    for (const origins of [undefined, ORIGINS.slice(0, 1), 'junk']) {
        const [item] = tree.entryNodes(storeNode(store({ origins }))).map((n) => tree.entryTreeItem(n));
        assert.equal(item.tooltip, 'Build with make check');
    }
    assert.equal(tree.originLine({ summary: '  two\n lines ' }), 'Origin: two lines');
    assert.equal(tree.originLine({ summary: 5 }), '');
});

test('a memory/changed notification carries the origins into the model', () => {
    const next = applyChange([store()], { ...store({ origins: ORIGINS }), folder: 'file:///ws', source: 'agent' });
    assert.deepEqual(next[0].origins, ORIGINS);
    const older = applyChange([store()], { ...store(), folder: 'file:///ws', source: 'disk' });
    assert.equal('origins' in older[0], false, 'an older server sends none');
});
