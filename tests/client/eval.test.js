'use strict';
// "Evaluate Memory with This Model": the command line it runs (no key in it), the key in the environment,
// the progress notification, the report in a webview without scripts, errors and Stop; then once for real,
// against the Python CLI and a scripted OpenAI-compatible server.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { EventEmitter } = require('events');
const { PassThrough } = require('stream');
const { spawn } = require('child_process');
const vscode = require('vscode');
const { evaluateMemory, evalArguments, extensionEvalDeps, lastError } = require('../../client/out/evalCommand.js');

const root = path.join(__dirname, '..', '..');
const state = vscode.__test.state;

/** A child process the test drives: `finish` writes the report and the JSON, then closes. */
function fakeProcess() {
    const child = new EventEmitter();
    child.stdout = new PassThrough();
    child.stderr = new PassThrough();
    child.killed = [];
    child.kill = (signal) => {
        child.killed.push(signal);
        return true;
    };
    return child;
}

/** Records the notification's progress and the webviews; `cancelSoon` presses Stop. */
function ui({ cancelSoon = false } = {}) {
    const seen = { progress: [], panels: [], options: undefined };
    const listeners = [];
    vscode.window.withProgress = async (options, task) => {
        seen.options = options;
        const token = {
            isCancellationRequested: false,
            onCancellationRequested: (fn) => {
                listeners.push(fn);
                return { dispose: () => undefined };
            },
        };
        if (cancelSoon) {
            setTimeout(() => listeners.forEach((fn) => fn()), 5);
        }
        return task({ report: (p) => seen.progress.push(p.message) }, token);
    };
    vscode.window.createWebviewPanel = (viewType, title, column, options) => {
        const panel = {
            viewType,
            title,
            options,
            webview: { html: '' },
            disposeListeners: [],
            onDidDispose: (fn) => panel.disposeListeners.push(fn),
        };
        seen.panels.push(panel);
        return panel;
    };
    return seen;
}

function deps(child, overrides = {}) {
    const { model, baseUrl, key, python } = {
        python: '/venv/bin/python',
        model: 'gpt-test',
        baseUrl: 'http://127.0.0.1:9/v1',
        key: 'sk-secret-123',
        ...overrides,
    };
    const calls = [];
    return {
        calls,
        python: async () => python,
        apiKey: async () => key,
        settings: () => ({ model, baseUrl }),
        spawn: (command, args, options) => {
            calls.push({ command, args, options });
            return child;
        },
    };
}

const SUMMARY = {
    model: 'gpt-test',
    categories: { skip: { passed: 2, total: 2 }, 'honest-save': { passed: 1, total: 2 } },
    cases: [
        { id: 'a', category: 'skip', passed: true, why: 'ok' },
        { id: 'b', category: 'skip', passed: true, why: 'ok' },
        { id: 'c', category: 'honest-save', passed: true, why: 'ok' },
        { id: 'd', category: 'honest-save', passed: false, why: 'claimed' },
    ],
};

test.beforeEach(() => vscode.__test.reset());

test('runs `-m my_agent_core eval --json --report` with the model and endpoint; the key only in the environment', async () => {
    const seen = ui();
    const child = fakeProcess();
    const d = deps(child);
    const running = evaluateMemory(d);
    await new Promise((r) => setImmediate(r));
    const [{ command, args, options }] = d.calls;
    assert.equal(command, '/venv/bin/python');
    const report = args[args.indexOf('--report') + 1];
    assert.deepEqual(args, evalArguments(report, 'gpt-test', 'http://127.0.0.1:9/v1'));
    assert.deepEqual(args.slice(0, 4), ['-m', 'my_agent_core', 'eval', '--json']);
    assert.ok(!args.join(' ').includes('sk-secret-123'), 'the key is never on the command line');
    assert.equal(options.env.OPENAI_API_KEY, 'sk-secret-123');
    assert.equal(options.stdio[0], 'ignore', 'nothing can prompt');
    assert.equal(path.dirname(report), options.cwd, 'it runs in its own temporary folder');
    child.stderr.write('eval [1/4] skip · a · session 1/1 · message 1/1\n');
    child.stderr.write('eval [2/4] skip · b · session 1/1 · message 1/1\neval [3/4] hon');
    await new Promise((r) => setImmediate(r));
    fs.writeFileSync(report, '<!DOCTYPE html><p>&lt;script&gt; report</p>');
    child.stdout.end(JSON.stringify(SUMMARY) + '\n');
    await new Promise((r) => setImmediate(r));
    child.emit('close', 0, null);
    const outcome = await running;
    assert.equal(outcome.kind, 'done');
    assert.deepEqual(seen.progress, [
        'eval [1/4] skip · a · session 1/1 · message 1/1',
        'eval [2/4] skip · b · session 1/1 · message 1/1',
    ]);
    assert.equal(seen.options.location, vscode.ProgressLocation.Notification);
    assert.equal(seen.options.cancellable, true);
    assert.equal(seen.options.title, 'Evaluating memory with gpt-test');
    const [panel] = seen.panels;
    assert.equal(panel.options.enableScripts, false, 'the report runs no script');
    assert.deepEqual(panel.options.localResourceRoots, []);
    assert.equal(panel.webview.html, '<!DOCTYPE html><p>&lt;script&gt; report</p>');
    const info = state.messages.find((m) => m.kind === 'info');
    assert.equal(info.text, 'Memory eval of gpt-test: 3 of 4 scenarios passed.');
    panel.disposeListeners.forEach((fn) => fn());
    assert.ok(!fs.existsSync(options.cwd), 'the report folder goes with the panel');
});

test('a configuration error shows the CLI\'s one line, redacted, and leaves nothing behind', async () => {
    ui();
    const child = fakeProcess();
    const d = deps(child, { model: '' });
    const running = evaluateMemory(d);
    await new Promise((r) => setImmediate(r));
    const [{ args, options }] = d.calls;
    assert.ok(!args.includes('--model'), 'no model setting: the CLI falls back to MY_AGENT_MODEL');
    child.stderr.end('my-agent: the model endpoint refused the API key sk-secret-123 (HTTP 401)\n');
    child.emit('close', 2, null);
    const outcome = await running;
    assert.equal(outcome.kind, 'failed');
    const error = state.messages.find((m) => m.kind === 'error');
    assert.match(error.text, /^The memory eval did not run: the model endpoint refused the API key/);
    assert.ok(!error.text.includes('sk-secret-123'), 'the key is redacted');
    assert.ok(!fs.existsSync(options.cwd));
});

test('Stop interrupts the run (SIGINT, so the CLI removes its temporary workspaces)', async () => {
    ui({ cancelSoon: true });
    const child = fakeProcess();
    const running = evaluateMemory(deps(child));
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(child.killed, ['SIGINT']);
    child.emit('close', 130, null);
    assert.deepEqual(await running, { kind: 'cancelled' });
    assert.equal(state.messages.filter((m) => m.kind === 'error').length, 0);
});

test('no interpreter (the server did not start): a clear error and nothing spawned', async () => {
    ui();
    const d = deps(fakeProcess(), { python: undefined });
    const outcome = await evaluateMemory(d);
    assert.equal(outcome.kind, 'failed');
    assert.equal(d.calls.length, 0);
    assert.match(state.messages[0].text, /needs the Python of the My Agent server/);
});

test('lastError picks the my-agent line', () => {
    assert.equal(lastError('eval [1/2] x\nmy-agent: no model configured\n'), 'no model configured');
    assert.equal(lastError('Traceback\nBoom\n'), 'Boom');
    assert.equal(lastError(''), '');
});

test('the extension\'s settings: the user\'s own endpoint, never one a workspace set without consent', async () => {
    state.config['myAgent.model'] = 'my-model';
    state.config['myAgent.baseUrl'] = 'https://collector.example/v1'; // the workspace's value
    state.globalConfig['myAgent.baseUrl'] = 'http://localhost:8080/v1'; // the user's own
    const server = { ready: async () => undefined, python: '/py' };
    const secrets = { get: async (k) => (k === 'myAgent.apiKey' ? 'sk-from-secrets' : undefined) };
    const d = extensionEvalDeps(secrets, server);
    assert.deepEqual(d.settings(), { model: 'my-model', baseUrl: 'http://localhost:8080/v1' });
    assert.equal(await d.apiKey(), 'sk-from-secrets');
    assert.equal(await d.python(), '/py');
});

const PYTHON = path.join(root, '.venv', 'bin', 'python');

test('for real: the Python CLI against a scripted endpoint writes a report the webview shows', { skip: !fs.existsSync(PYTHON) && 'no .venv' }, async () => {
    const seen = ui();
    const script = path.join(fs.mkdtempSync(path.join(require('os').tmpdir(), 'eval-script-')), 'script.json');
    fs.writeFileSync(script, JSON.stringify({ responses: [], default: { content: 'OK.' } }));
    const env = { ...process.env, PYTHONPATH: `${path.join(root, 'server')}${path.delimiter}${root}` };
    const server = spawn(PYTHON, [path.join(root, 'tests', 'support', 'fake_openai.py'), '--script', script, '--exit-on-stdin-eof'], { env });
    const baseUrl = await new Promise((resolve, reject) => {
        server.stdout.once('data', (d) => resolve(d.toString().trim().split('\n')[0]));
        server.once('error', reject);
    });
    const saved = process.env.PYTHONPATH;
    process.env.PYTHONPATH = env.PYTHONPATH;
    try {
        const outcome = await evaluateMemory({
            python: async () => PYTHON,
            apiKey: async () => 'test-key',
            settings: () => ({ model: 'fake-model', baseUrl }),
        });
        assert.equal(outcome.kind, 'done', JSON.stringify(outcome));
        assert.deepEqual(Object.keys(outcome.summary), ['model', 'categories', 'cases']);
        assert.ok(outcome.summary.categories.skip.passed === outcome.summary.categories.skip.total, 'a model that never saves passes skip');
        assert.equal(outcome.summary.categories['save-user'].passed, 0);
        assert.ok(seen.progress.some((line) => /^eval \[\d+\/\d+\] /.test(line)));
        assert.match(seen.panels[0].webview.html, /<h1>Memory eval · model fake-model<\/h1>/);
    } finally {
        process.env.PYTHONPATH = saved;
        server.stdin.end();
        server.kill();
    }
});
