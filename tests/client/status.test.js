'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { statusView } = require('../../client/out/statusBar.js');

const stores = (memUsed, userUsed) => [
    { target: 'memory', path: '/m', used: memUsed, limit: 2200, entries: [] },
    { target: 'user', path: '/u', used: userUsed, limit: 1375, entries: [] },
];

test('status bar shows both files as percentages and the figures in the tooltip', () => {
    const v = statusView(stores(1100, 275), 0.9, 'proj');
    assert.equal(v.text, '$(notebook) Memory 50% · User 20%');
    assert.equal(v.level, 'ok');
    assert.match(v.tooltip, /proj/);
    assert.match(v.tooltip, /MEMORY\.md: 1100\/2200/);
    assert.match(v.tooltip, /USER\.md: 275\/1375/);
});

test('status bar warns near budget and errors over budget', () => {
    assert.equal(statusView(stores(2000, 10), 0.9).level, 'near');
    assert.ok(statusView(stores(2000, 10), 0.9).text.startsWith('$(warning)'));
    const over = statusView(stores(10, 1400), 0.9);
    assert.equal(over.level, 'over');
    assert.ok(over.text.startsWith('$(error)'));
    assert.match(over.text, /User 102%/);
});

test('status bar before the first state', () => {
    const v = statusView([], 0.9);
    assert.equal(v.text, '$(notebook) Memory');
    assert.equal(v.level, 'ok');
});
