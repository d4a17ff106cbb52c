'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const commandsSource = fs.readFileSync(path.join(root, 'client', 'src', 'commands.ts'), 'utf8');
const settingsSource = fs.readFileSync(path.join(root, 'client', 'src', 'common', 'settings.ts'), 'utf8');

test('engines and pinned versions that work on Node 20 / code-server 4.100', () => {
    assert.equal(pkg.engines.vscode, '^1.100.0');
    assert.equal(pkg.devDependencies['@types/vscode'], '1.100.0');
    assert.equal(pkg.devDependencies['@vscode/vsce'], '3.9.2');
    assert.equal(pkg.dependencies['vscode-languageclient'], '9.0.1');
    assert.match(pkg.devDependencies.typescript, /^5\./);
    assert.match(pkg.devDependencies.eslint, /^9\./);
    assert.equal(pkg.main, './client/dist/extension.js');
});

test('every contributed command has a handler and the My Agent category', () => {
    const registered = new Set([...commandsSource.matchAll(/reg\('([^']+)'/g)].map((m) => m[1]));
    for (const c of pkg.contributes.commands) {
        assert.ok(registered.has(c.command), `${c.command} is not registered in commands.ts`);
        assert.equal(c.category, '%myAgent.category%');
    }
    for (const id of registered) {
        assert.ok(pkg.contributes.commands.some((c) => c.command === id), `${id} is registered but not contributed`);
    }
    for (const id of [
        'myAgent.newChat',
        'myAgent.openMemoryFile',
        'myAgent.showSnapshot',
        'myAgent.undoMemoryChange',
        'myAgent.setApiKey',
        'myAgent.restartServer',
        'myAgent.showOutput',
    ]) {
        assert.ok(registered.has(id), id);
    }
});

test('views, settings and workspace trust', () => {
    assert.deepEqual(pkg.contributes.viewsContainers.activitybar.map((c) => c.id), ['myAgent', 'myAgentChat']);
    assert.deepEqual(pkg.contributes.views.myAgent.map((v) => v.id), ['myAgent.memory', 'myAgent.recall']);
    // The chat has a container of its own (room to work; users drag it to the secondary side bar).
    const [chat, ...others] = pkg.contributes.views.myAgentChat;
    assert.equal(others.length, 0);
    assert.equal(chat.id, 'myAgent.chat');
    assert.equal(chat.type, 'webview');
    for (const c of pkg.contributes.viewsContainers.activitybar) {
        assert.match(c.title, /^%.+%$/);
        assert.ok(fs.existsSync(path.join(root, c.icon)), c.icon);
        assert.ok(fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8').includes(`!${c.icon}`), `${c.icon} is packaged`);
    }
    assert.ok(pkg.contributes.viewsWelcome.some((w) => w.view === 'myAgent.recall' && w.contents.startsWith('%')));
    const props = pkg.contributes.configuration.properties;
    assert.equal(props['myAgent.memory.memoryCharLimit'].default, 2200);
    assert.equal(props['myAgent.memory.userCharLimit'].default, 1375);
    assert.equal(props['myAgent.memory.nearBudgetShare'].default, 0.9);
    for (const k of ['myAgent.model', 'myAgent.baseUrl', 'myAgent.python.interpreter', 'myAgent.trace.server']) {
        assert.ok(k in props, k);
    }
    assert.ok(!Object.keys(props).some((k) => /key|secret|token/i.test(k)), 'no API key setting');
    const trust = pkg.capabilities.untrustedWorkspaces;
    assert.equal(trust.supported, 'limited');
    assert.deepEqual(trust.restrictedConfigurations.sort(), ['myAgent.baseUrl', 'myAgent.python.interpreter']);
});

test('npm run package builds the vsix through scripts/package-vsix.sh', () => {
    assert.equal(pkg.scripts.package, 'bash scripts/package-vsix.sh');
    assert.ok(fs.existsSync(path.join(root, 'scripts', 'package-vsix.sh')));
});

test('every round-2 setting of docs/protocol.md is contributed, read and sent, with its default', () => {
    const props = pkg.contributes.configuration.properties;
    const expected = {
        'chat.contextWindow': 0,
        'chat.compactAt': 0.8,
        'chat.sessions.maxCount': 50,
        'chat.sessions.maxAgeDays': 30,
        'tools.approveEdits': false,
        'tools.allowedCommands': [],
        'tools.ripgrepPath': '',
        'tools.commandTimeout': 120,
        'context.maxChars': 8000,
        'memory.approval': 'untrusted',
        'memory.provider': 'archive',
        'memory.postgresDsn': '',
        'memory.postgresProject': '',
        'memory.semantic': false,
        'memory.userProfile': 'workspace',
    };
    for (const [key, dflt] of Object.entries(expected)) {
        const p = props[`myAgent.${key}`];
        assert.ok(p, `myAgent.${key} is not contributed`);
        assert.deepEqual(p.default, dflt, key);
        assert.match(p.markdownDescription, /^%myAgent\.config\./, `${key} has a localized description`);
        assert.ok(settingsSource.includes(`'${key}'`), `settings.ts does not read ${key}`);
    }
    assert.deepEqual(props['myAgent.memory.approval'].enum, ['untrusted', 'ask', 'auto']);
    assert.deepEqual(props['myAgent.memory.userProfile'].enum, ['workspace', 'global']);
    assert.equal(props['myAgent.tools.allowedCommands'].items.type, 'string');
});

test('a cloned repository cannot pre-approve edits or commands, pick programs, shorten history or redirect the archive', () => {
    const props = pkg.contributes.configuration.properties;
    // `machine`: user or remote settings only; VS Code ignores a workspace's .vscode/settings.json for these.
    for (const key of [
        'tools.approveEdits',
        'tools.allowedCommands',
        'tools.ripgrepPath',
        'chat.sessions.maxCount',
        'chat.sessions.maxAgeDays',
        'memory.provider',
        'memory.postgresDsn',
        'memory.userProfile',
    ]) {
        assert.ok(['machine', 'application'].includes(props[`myAgent.${key}`].scope), `${key} must not be settable by a workspace`);
    }
    const nlsEn = JSON.parse(fs.readFileSync(path.join(root, 'package.nls.json'), 'utf8'));
    for (const key of ['tools.approveEdits', 'tools.allowedCommands']) {
        assert.match(nlsEn[`myAgent.config.${key}`], /cloned repository/, `${key} says why it is user-only`);
    }
    assert.match(nlsEn['myAgent.config.memory.approval'], /stricter but never looser/);
});

test('the memory tool is a language-model tool: declared, referenceable, activating the extension', () => {
    const [tool, ...rest] = pkg.contributes.languageModelTools;
    assert.equal(rest.length, 0);
    const { MEMORY_TOOL_ID } = require('../../client/out/lm/toolCall.js');
    assert.equal(tool.name, MEMORY_TOOL_ID);
    assert.match(tool.name, /^[\w-]+$/);
    assert.equal(tool.canBeReferencedInPrompt, true);
    assert.match(tool.toolReferenceName, /^\w+$/);
    assert.match(tool.displayName, /^%.+%$/);
    assert.match(tool.userDescription, /^%.+%$/);
    assert.match(tool.modelDescription, /WHEN to save/);
    assert.match(tool.modelDescription, /SKIP \(never save\)/);
    assert.deepEqual(tool.inputSchema.required, ['target', 'action']);
    assert.ok(pkg.activationEvents.includes(`onLanguageModelTool:${tool.name}`));
});

test('Import into Memory is offered on exactly the context files, in the explorer and the editor', () => {
    const { IMPORTABLE } = require('../../client/out/memoryImport.js');
    for (const menu of ['explorer/context', 'editor/context']) {
        const entry = pkg.contributes.menus[menu].find((m) => m.command === 'myAgent.memory.import');
        assert.ok(entry, `${menu} lacks the import`);
        const re = new RegExp(/resourceFilename =~ \/(.+)\/$/.exec(entry.when)[1]);
        for (const name of IMPORTABLE) {
            assert.ok(re.test(name), `${menu}: ${name} is not offered`);
        }
        for (const name of ['README.md', 'XAGENTS.md', 'AGENTS.md.bak', 'cursorrules', 'claude.md']) {
            assert.equal(re.test(name), false, `${menu}: ${name} is offered`);
        }
    }
    const palette = pkg.contributes.menus.commandPalette.map((m) => m.command);
    assert.ok(!palette.includes('myAgent.memory.import'), 'the palette keeps the import (with its file picker)');
    assert.ok(palette.includes('myAgent.recall.open') && palette.includes('myAgent.recall.delete'), 'item commands are hidden');
});
