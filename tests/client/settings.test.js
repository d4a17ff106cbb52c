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

const DEFAULT_MEMORY = {
    memoryCharLimit: 2200,
    userCharLimit: 1375,
    nearBudgetShare: 0.9,
    approval: 'untrusted',
    provider: 'archive',
    semantic: false,
    userProfile: 'workspace',
};
const DEFAULT_REST = {
    chat: { contextWindow: 0, compactAt: 0.8, sessions: { maxCount: 50, maxAgeDays: 30 } },
    tools: { approveEdits: false, allowedCommands: [], commandTimeout: 120 },
    context: { maxChars: 8000 },
};

test('defaults when nothing is set: every round-2 setting of docs/protocol.md with its default', () => {
    const s = settings.readSettings(cfg({}), true);
    assert.deepEqual(s, { model: '', baseUrl: '', interpreter: '', memory: DEFAULT_MEMORY, ...DEFAULT_REST });
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
    ); // (baseUrl at the workspace level only: not sent until confirmed, see endpoint.test.js)
    assert.equal(s.baseUrl, '');
    s.baseUrl = settings.readSettings(cfg({ baseUrl: 'http://127.0.0.1:9/v1' }, { baseUrl: 'http://127.0.0.1:9/v1' }), true).baseUrl;
    const opts = settings.buildInitializationOptions(s, true, ['file:///a']);
    assert.deepEqual(opts, {
        myAgent: {
            model: 'gpt-x',
            baseUrl: 'http://127.0.0.1:9/v1',
            memory: { ...DEFAULT_MEMORY, memoryCharLimit: 3000, userCharLimit: 500, nearBudgetShare: 0.8 },
            ...DEFAULT_REST,
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
    assert.deepEqual(s.memory, DEFAULT_MEMORY);
});

test('round-2 settings reach the server in the shape of docs/protocol.md; junk falls back to the defaults', () => {
    const s = settings.readSettings(
        cfg({
            'chat.contextWindow': 32000,
            'chat.compactAt': 0.7,
            'chat.sessions.maxCount': 10,
            'chat.sessions.maxAgeDays': 7,
            'tools.approveEdits': true,
            'tools.allowedCommands': ['npm test', ' pytest * ', '', 5, 'npm test'],
            'tools.ripgrepPath': '/usr/bin/rg',
            'tools.commandTimeout': 30,
            'context.maxChars': 4000,
            'memory.approval': 'ask',
            'memory.provider': 'postgres',
            'memory.postgresDsn': 'postgresql:///team',
            'memory.postgresProject': 'app',
            'memory.semantic': true,
            'memory.userProfile': 'global',
        }),
        true,
    );
    const server = settings.toServerSettings(s);
    assert.deepEqual(server.chat, { contextWindow: 32000, compactAt: 0.7, sessions: { maxCount: 10, maxAgeDays: 7 } });
    assert.deepEqual(server.tools, { approveEdits: true, allowedCommands: ['npm test', 'pytest *'], ripgrepPath: '/usr/bin/rg', commandTimeout: 30 });
    assert.deepEqual(server.context, { maxChars: 4000 });
    assert.deepEqual(server.memory, {
        memoryCharLimit: 2200,
        userCharLimit: 1375,
        nearBudgetShare: 0.9,
        approval: 'ask',
        provider: 'postgres',
        postgresDsn: 'postgresql:///team',
        postgresProject: 'app',
        semantic: true,
        userProfile: 'global',
    });

    const junk = settings.readSettings(
        cfg({
            'chat.contextWindow': -1,
            'chat.compactAt': 2,
            'chat.sessions.maxCount': 0,
            'chat.sessions.maxAgeDays': 1.5,
            'tools.approveEdits': 'yes',
            'tools.allowedCommands': 'rm -rf /',
            'tools.commandTimeout': 10 ** 9,
            'context.maxChars': 'lots',
            'memory.approval': 'sometimes',
            'memory.provider': '  ',
            'memory.semantic': 1,
            'memory.userProfile': 'everywhere',
            'memory.postgresDsn': '   ',
        }),
        true,
    );
    assert.deepEqual({ memory: junk.memory, chat: junk.chat, tools: junk.tools, context: junk.context }, { memory: DEFAULT_MEMORY, ...DEFAULT_REST });
    assert.equal('postgresDsn' in settings.toServerSettings(junk).memory, false, 'an empty DSN is left out (the server reads MY_AGENT_PG_DSN)');
});

test('memory approval: the strictest of the user\'s value (default "untrusted") and the workspace\'s wins', () => {
    const levels = (globalValue, workspaceValue) => ({
        get: (k) => (k === 'memory.approval' ? (workspaceValue ?? globalValue) : undefined),
        inspect: (k) => (k === 'memory.approval' ? { globalValue, workspaceValue } : {}),
    });
    const approval = (g, w) => settings.readSettings(levels(g, w), true).memory.approval;
    assert.equal(approval('ask', 'auto'), 'ask', 'a repository cannot switch review off');
    assert.equal(approval(undefined, 'ask'), 'ask', 'a repository can switch it on');
    assert.equal(approval('auto', undefined), 'auto', 'the user may opt out');
    assert.equal(approval(undefined, undefined), 'untrusted', 'the default');
    assert.equal(approval(undefined, 'auto'), 'untrusted', 'a repository cannot switch the default policy off');
    assert.equal(approval('untrusted', 'auto'), 'untrusted');
    assert.equal(approval('auto', 'untrusted'), 'untrusted', 'a repository can tighten an opt-out');
    assert.equal(approval('untrusted', 'ask'), 'ask');
    assert.equal(approval('auto', 'auto'), 'auto');
    assert.equal(approval('sometimes', 'auto'), 'untrusted', 'junk is the default');
    const plain = { get: (k) => (k === 'memory.approval' ? 'auto' : undefined) };
    assert.equal(settings.readSettings(plain, true).memory.approval, 'auto', 'without levels: the value as given');
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

test('the pulled configuration and initializationOptions carry the same round-2 settings', () => {
    vscode.__test.reset();
    vscode.__test.state.config = { 'myAgent.tools.commandTimeout': 45, 'myAgent.memory.provider': 'none', 'myAgent.chat.compactAt': 0.6 };
    vscode.__test.state.folders = [vscode.__test.folder('/tmp/ws1')];
    const init = settings.currentInitializationOptions().myAgent;
    const pulled = shapeConfiguration({ items: [{ section: 'myAgent' }] }, [{}], () => settings.toServerSettings(settings.currentSettings()))[0];
    assert.equal(init.tools.commandTimeout, 45);
    assert.equal(init.memory.provider, 'none');
    assert.equal(init.chat.compactAt, 0.6);
    assert.deepEqual(pulled, init);
    vscode.__test.reset();
});

test('document selector and watcher target only memory files', () => {
    assert.equal(MEMORY_GLOB, '**/.my_agent_core/memory/{MEMORY,USER}.md');
    assert.deepEqual(DOCUMENT_SELECTOR, [{ scheme: 'file', pattern: MEMORY_GLOB }]);
});
