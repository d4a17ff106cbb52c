'use strict';
// Another extension, loaded into code-server as a development extension (`extensionDevelopmentPath`
// payload) beside the installed My Agent: once startup finished it finds the memory tool in vscode.lm.tools
// and calls vscode.lm.invokeTool twice (the user declines the first confirmation and accepts the second).
// Every step is written to status.json in MY_AGENT_E2E_HOST_DIR; the Python side (tests/e2e/test_lm_tool.py)
// answers the dialogs, checks the files and the Memory view, then writes `release`.
// Not an `extensionTestsPath` module: in extension tests VS Code answers every confirmation dialog with
// "yes" without showing it, and the point is to see the user decide.
const fs = require('fs');
const path = require('path');
const vscode = require('vscode');

const EXT_ID = 'my-agent.my-agent-core';
const TOOL = 'myAgent_memory';

const dir = process.env.MY_AGENT_E2E_HOST_DIR;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const steps = [];

function report(step, data = {}) {
    steps.push({ step, at: Date.now(), ...data });
    const tmp = path.join(dir, 'status.json.tmp');
    fs.writeFileSync(tmp, JSON.stringify(steps, null, 2));
    fs.renameSync(tmp, path.join(dir, 'status.json'));
}

async function until(fn, ms, what) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        const v = await fn();
        if (v) {
            return v;
        }
        await sleep(200);
    }
    throw new Error(`timed out waiting for ${what}`);
}

function text(result) {
    return (result.content || []).map((p) => (p && typeof p.value === 'string' ? p.value : '')).join('');
}

async function invoke(input) {
    try {
        const result = await vscode.lm.invokeTool(TOOL, { input, toolInvocationToken: undefined });
        return { ok: true, text: text(result) };
    } catch (e) {
        return { ok: false, name: e && e.name, message: String((e && e.message) || e) };
    }
}

exports.activate = function activate() {
    void scenario();
};

exports.deactivate = function deactivate() {};

async function scenario() {
    if (!dir) {
        throw new Error('MY_AGENT_E2E_HOST_DIR is not set');
    }
    try {
        report('started', { vscode: vscode.version });
        const ext = vscode.extensions.getExtension(EXT_ID);
        if (!ext) {
            throw new Error(`${EXT_ID} is not installed`);
        }
        await ext.activate();
        const info = await until(() => vscode.lm.tools.find((t) => t.name === TOOL), 60000, `${TOOL} in vscode.lm.tools`);
        report('listed', {
            name: info.name,
            description: info.description.slice(0, 200),
            required: info.inputSchema && info.inputSchema.required,
            tags: info.tags,
        });
        const entry = fs.readFileSync(path.join(dir, 'entry.txt'), 'utf8');
        const input = { target: 'memory', action: 'add', content: entry };

        report('invoking', { round: 1 }); // the Python side declines this one
        report('declined', await invoke(input));

        // The next dialog waits for the test: shown at once, it could be mistaken for the first one.
        await until(() => fs.existsSync(path.join(dir, 'round2')), 120000, 'the round2 file');
        report('invoking', { round: 2 }); // ... and accepts this one
        report('invoked', await invoke(input));

        await until(() => fs.existsSync(path.join(dir, 'release')), 180000, 'the release file');
        report('released');
    } catch (e) {
        report('error', { message: String((e && e.stack) || e) });
    }
}
