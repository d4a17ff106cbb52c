'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const commandsSource = fs.readFileSync(path.join(root, 'client', 'src', 'commands.ts'), 'utf8');

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
    assert.equal(pkg.contributes.viewsContainers.activitybar[0].id, 'myAgent');
    const views = pkg.contributes.views.myAgent;
    assert.deepEqual(views.map((v) => v.id), ['myAgent.memory', 'myAgent.chat']);
    assert.equal(views[1].type, 'webview');
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
