'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const vscode = require('vscode');
const settings = require('../../client/out/common/settings.js');
const { shapeConfiguration, DOCUMENT_SELECTOR, MEMORY_GLOB } = require('../../client/out/common/server.js');

const cfg = (values, globals = {}) => ({
    get: (k) => values[k],
    inspect: (k) => ({ globalValue: globals[k], workspaceValue: values[k], defaultValue: undefined }),
});

test('defaults when nothing is set', () => {
    const s = settings.readSettings(cfg({}), true);
    assert.deepEqual(s, {
        model: '',
        baseUrl: '',
        interpreter: '',
        memory: { memoryCharLimit: 2200, userCharLimit: 1375, nearBudgetShare: 0.9 },
    });
});

test('settings become initializationOptions {myAgent: {...}} without empty strings', () => {
    const s = settings.readSettings(
        cfg({
            model: ' gpt-x ',
            baseUrl: 'http://127.0.0.1:9/v1',
            'memory.memoryCharLimit': 3000,
            'memory.userCharLimit': 500,
            'memory.nearBudgetShare': 0.8,
            'python.interpreter': '/usr/bin/python3',
        }),
        true,
    );
    const opts = settings.buildInitializationOptions(s, true, ['file:///a']);
    assert.deepEqual(opts, {
        myAgent: {
            model: 'gpt-x',
            baseUrl: 'http://127.0.0.1:9/v1',
            memory: { memoryCharLimit: 3000, userCharLimit: 500, nearBudgetShare: 0.8 },
        },
    });
    assert.equal('untrustedFolders' in opts.myAgent, false);
    const bare = settings.toServerSettings(settings.readSettings(cfg({ model: '' }), true));
    assert.equal('model' in bare, false);
    assert.equal('baseUrl' in bare, false);
});

test('untrusted workspace lists every folder and ignores workspace values of restricted keys', () => {
    const values = { baseUrl: 'https://evil.example/v1', 'python.interpreter': './evil', model: 'ws-model' };
    const globals = { baseUrl: 'https://api.example/v1' };
    const s = settings.readSettings(cfg(values, globals), false);
    assert.equal(s.baseUrl, 'https://api.example/v1');
    assert.equal(s.interpreter, '');
    assert.equal(s.model, 'ws-model');
    const opts = settings.buildInitializationOptions(s, false, ['file:///a', 'file:///b']);
    assert.deepEqual(opts.myAgent.untrustedFolders, ['file:///a', 'file:///b']);
});

test('invalid numbers fall back to the defaults', () => {
    const s = settings.readSettings(
        cfg({ 'memory.memoryCharLimit': -5, 'memory.userCharLimit': 'x', 'memory.nearBudgetShare': 3 }),
        true,
    );
    assert.deepEqual(s.memory, settings.DEFAULT_MEMORY);
});

test('currentInitializationOptions reads the live vscode configuration and trust', () => {
    vscode.__test.reset();
    vscode.__test.state.config = { 'myAgent.model': 'm1' };
    vscode.__test.state.folders = [vscode.__test.folder('/tmp/ws1')];
    vscode.__test.state.trusted = false;
    const opts = settings.currentInitializationOptions();
    assert.equal(opts.myAgent.model, 'm1');
    assert.deepEqual(opts.myAgent.untrustedFolders, ['file:///tmp/ws1']);
    vscode.__test.reset();
});

test('workspace/configuration answers for myAgent get the server shape; other sections pass through', () => {
    const out = shapeConfiguration(
        { items: [{ section: 'myAgent' }, { section: 'editor' }] },
        [{ raw: true }, { tabSize: 4 }],
        () => ({ memory: { memoryCharLimit: 1, userCharLimit: 2, nearBudgetShare: 0.5 } }),
    );
    assert.deepEqual(out, [{ memory: { memoryCharLimit: 1, userCharLimit: 2, nearBudgetShare: 0.5 } }, { tabSize: 4 }]);
});

test('document selector and watcher target only memory files', () => {
    assert.equal(MEMORY_GLOB, '**/.my_agent_core/memory/{MEMORY,USER}.md');
    assert.deepEqual(DOCUMENT_SELECTOR, [{ scheme: 'file', pattern: MEMORY_GLOB }]);
});
