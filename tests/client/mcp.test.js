'use strict';
// "Add memory server to this workspace's MCP configuration", on real files in a temp folder: comments,
// formatting and other servers survive; a conflict asks; a broken, linked, FIFO or huge file is never touched.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const vscode = require('vscode');
const { parse } = require('jsonc-parser');
const cfg = require('../../client/out/lm/mcpConfig.js');
const file = require('../../client/out/lm/mcpFile.js');
const { addMemoryServerToWorkspace } = require('../../client/out/lm/mcpCommand.js');

const PY = '/opt/venv/bin/python';

function tmpFolder() {
    return fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-test-'));
}

function entry(folder, python = PY) {
    return cfg.mcpEntry(python, path.join(folder, '.my_agent_core', 'memory'));
}

const never = async () => {
    throw new Error('must not ask');
};

test('mcpEntry: `-m my_agent_core mcp --dir <memory folder>`; non-default budgets travel too', () => {
    assert.deepEqual(cfg.mcpEntry('/py', '/w/.my_agent_core/memory'), {
        type: 'stdio',
        command: '/py',
        args: ['-m', 'my_agent_core', 'mcp', '--dir', '/w/.my_agent_core/memory'],
    });
    assert.deepEqual(cfg.mcpEntry('/py', '/m', { memory: 2200, user: 1375 }).args.length, 5);
    assert.deepEqual(cfg.mcpEntry('/py', '/m', { memory: 3000, user: 1375 }).args.slice(5), ['--memory-limit', '3000', '--user-limit', '1375']);
});

test('no mcp.json yet: .vscode and the file are created with our one server', async () => {
    const dir = tmpFolder();
    const out = await file.addMcpServer(dir, entry(dir), never);
    assert.equal(out.kind, 'added');
    const text = fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8');
    assert.deepEqual(JSON.parse(text), { servers: { 'my-agent-memory': entry(dir) } });
    assert.ok(text.endsWith('\n'));
    assert.deepEqual(fs.readdirSync(path.join(dir, '.vscode')), ['mcp.json'], 'no temp file left behind');
    // Again: nothing to do, the file is not rewritten.
    const mtime = fs.statSync(path.join(dir, '.vscode', 'mcp.json')).mtimeMs;
    assert.equal((await file.addMcpServer(dir, entry(dir), never)).kind, 'unchanged');
    assert.equal(fs.statSync(path.join(dir, '.vscode', 'mcp.json')).mtimeMs, mtime);
});

test('an existing file with comments, tabs, CRLF, a BOM and another server keeps all of them', async () => {
    const dir = tmpFolder();
    fs.mkdirSync(path.join(dir, '.vscode'));
    const before =
        '\uFEFF// team servers: keep this comment\r\n{\r\n\t"inputs": [],\r\n\t"servers": {\r\n\t\t/* the linter */\r\n' +
        '\t\t"lint": { "type": "stdio", "command": "npx", "args": ["lint-mcp"] }, // trailing comment\r\n\t},\r\n}\r\n';
    fs.writeFileSync(path.join(dir, '.vscode', 'mcp.json'), before);
    fs.chmodSync(path.join(dir, '.vscode', 'mcp.json'), 0o600);
    assert.equal((await file.addMcpServer(dir, entry(dir), never)).kind, 'added');
    const after = fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8');
    assert.ok(after.startsWith('\uFEFF// team servers: keep this comment\r\n'), 'BOM and leading comment kept');
    assert.ok(after.includes('/* the linter */'));
    assert.ok(after.includes('"lint": { "type": "stdio", "command": "npx", "args": ["lint-mcp"] }, // trailing comment'), 'the other entry is byte-identical');
    assert.ok(!/[^\r]\n/.test(after), 'CRLF line ends kept');
    assert.ok(after.includes('\t\t"my-agent-memory"'), 'tab indentation followed');
    const errors = [];
    const parsed = parse(after.slice(1), errors, { allowTrailingComma: true });
    assert.deepEqual(errors, []);
    assert.deepEqual(Object.keys(parsed.servers).sort(), ['lint', 'my-agent-memory']);
    assert.deepEqual(parsed.servers['my-agent-memory'], entry(dir));
    assert.deepEqual(parsed.inputs, []);
    assert.equal(fs.statSync(path.join(dir, '.vscode', 'mcp.json')).mode & 0o777, 0o600, 'the file mode is kept');
});

test('ours with another command: asked first; declining leaves the file byte-identical, agreeing replaces only ours', async () => {
    const dir = tmpFolder();
    fs.mkdirSync(path.join(dir, '.vscode'));
    const old = { type: 'stdio', command: '/old/python', args: ['-m', 'my_agent_core', 'mcp'] };
    const before = JSON.stringify({ servers: { other: { command: 'x' }, 'my-agent-memory': old } }, null, 4);
    const mcp = path.join(dir, '.vscode', 'mcp.json');
    fs.writeFileSync(mcp, before);
    const asked = [];
    const no = await file.addMcpServer(dir, entry(dir), async (existing) => {
        asked.push(existing);
        return false;
    });
    assert.equal(no.kind, 'cancelled');
    assert.deepEqual(asked, [old]);
    assert.equal(fs.readFileSync(mcp, 'utf8'), before);
    const yes = await file.addMcpServer(dir, entry(dir), async () => true);
    assert.equal(yes.kind, 'replaced');
    const parsed = JSON.parse(fs.readFileSync(mcp, 'utf8'));
    assert.deepEqual(parsed.servers, { other: { command: 'x' }, 'my-agent-memory': entry(dir) });
});

test('a file that is not JSON with comments, or not the shape VS Code reads, is left exactly as it is', async () => {
    for (const text of ['{ "servers": { "a": { } ', '[1, 2]', '{"servers": ["a"]}', '{"servers": {}} trailing']) {
        const dir = tmpFolder();
        fs.mkdirSync(path.join(dir, '.vscode'));
        fs.writeFileSync(path.join(dir, '.vscode', 'mcp.json'), text);
        const out = await file.addMcpServer(dir, entry(dir), never);
        assert.equal(out.kind, 'invalid', text);
        assert.ok(out.reason.length > 0);
        assert.equal(fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8'), text);
    }
    // Not UTF-8: refused rather than rewritten with replacement characters.
    const dir = tmpFolder();
    fs.mkdirSync(path.join(dir, '.vscode'));
    const bytes = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    fs.writeFileSync(path.join(dir, '.vscode', 'mcp.json'), bytes);
    await assert.rejects(file.addMcpServer(dir, entry(dir), never), file.McpFileError);
    assert.deepEqual(fs.readFileSync(path.join(dir, '.vscode', 'mcp.json')), bytes);
});

test('a hostile clone: a linked mcp.json or .vscode, a FIFO, a huge file are refused and nothing outside changes', async () => {
    const victim = path.join(tmpFolder(), 'bashrc');
    fs.writeFileSync(victim, 'export PATH=/usr/bin\n');
    const linked = tmpFolder();
    fs.mkdirSync(path.join(linked, '.vscode'));
    fs.symlinkSync(victim, path.join(linked, '.vscode', 'mcp.json'));
    await assert.rejects(file.addMcpServer(linked, entry(linked), never), /symbolic link/);
    assert.equal(fs.readFileSync(victim, 'utf8'), 'export PATH=/usr/bin\n');

    const outside = tmpFolder();
    const linkedDir = tmpFolder();
    fs.symlinkSync(outside, path.join(linkedDir, '.vscode'));
    await assert.rejects(file.addMcpServer(linkedDir, entry(linkedDir), never), /symbolic link/);
    assert.deepEqual(fs.readdirSync(outside), []);

    const fifo = tmpFolder();
    fs.mkdirSync(path.join(fifo, '.vscode'));
    execFileSync('mkfifo', [path.join(fifo, '.vscode', 'mcp.json')]);
    await assert.rejects(file.addMcpServer(fifo, entry(fifo), never), /not a regular file/); // and it did not block

    const huge = tmpFolder();
    fs.mkdirSync(path.join(huge, '.vscode'));
    fs.writeFileSync(path.join(huge, '.vscode', 'mcp.json'), Buffer.alloc(file.MAX_MCP_FILE + 1, 0x20));
    await assert.rejects(file.addMcpServer(huge, entry(huge), never), /more than an MCP configuration can be/);

    const notDir = tmpFolder();
    fs.writeFileSync(path.join(notDir, '.vscode'), 'x');
    await assert.rejects(file.addMcpServer(notDir, entry(notDir), never), /not a folder/);
});

test('another writer between the read and the write: nothing is written, the other change survives', async () => {
    const dir = tmpFolder();
    fs.mkdirSync(path.join(dir, '.vscode'));
    const mcp = path.join(dir, '.vscode', 'mcp.json');
    fs.writeFileSync(mcp, '{"servers": {}}');
    const before = file.readMcpFile(dir);
    fs.writeFileSync(mcp, '{"servers": {"theirs": {"command": "y"}}}');
    assert.throws(() => file.writeMcpFile(dir, '{"servers": {"mine": {}}}', before), /changed while it was being edited/);
    assert.equal(fs.readFileSync(mcp, 'utf8'), '{"servers": {"theirs": {"command": "y"}}}');
    assert.deepEqual(fs.readdirSync(path.join(dir, '.vscode')), ['mcp.json']);
});

test('the command: the interpreter the extension resolved, the folder\'s memory path, and what the user is told', async () => {
    vscode.__test.reset();
    const dir = tmpFolder();
    vscode.__test.state.folders = [vscode.__test.folder(dir, 'proj')];
    let started = 0;
    const server = {
        python: undefined,
        ready: async () => {
            started++;
            server.python = '/home/u/.vscode/globalStorage/python-env/bin/python';
        },
    };
    await addMemoryServerToWorkspace(server);
    assert.equal(started, 1, 'the server is started so its interpreter is known');
    const parsed = JSON.parse(fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8'));
    assert.deepEqual(parsed.servers['my-agent-memory'], {
        type: 'stdio',
        command: '/home/u/.vscode/globalStorage/python-env/bin/python',
        args: ['-m', 'my_agent_core', 'mcp', '--dir', path.join(dir, '.my_agent_core', 'memory')],
    });
    assert.match(vscode.__test.state.messages.at(-1).text, /Added "my-agent-memory" to \.vscode\/mcp\.json of proj/);

    // Another interpreter now: the user is asked (modal), and declining changes nothing.
    server.ready = async () => {
        server.python = '/usr/bin/python3';
    };
    const before = fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8');
    vscode.__test.state.answers = [undefined];
    await addMemoryServerToWorkspace(server);
    const ask = vscode.__test.state.messages.at(-1);
    assert.equal(ask.kind, 'warning');
    assert.match(ask.text, /already has a server named "my-agent-memory" with another command/);
    assert.equal(ask.rest[0].modal, true);
    assert.match(ask.rest[0].detail, /python-env\/bin\/python[\s\S]*\/usr\/bin\/python3/);
    assert.equal(fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8'), before);
    vscode.__test.state.answers = ['Replace'];
    await addMemoryServerToWorkspace(server);
    assert.equal(JSON.parse(fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8')).servers['my-agent-memory'].command, '/usr/bin/python3');

    // Unsaved edits of mcp.json in the editor: refused, so none of them is lost.
    vscode.__test.state.textDocuments = [{ uri: vscode.Uri.file(path.join(dir, '.vscode', 'mcp.json')), isDirty: true }];
    server.ready = async () => {
        server.python = '/other/python';
    };
    await addMemoryServerToWorkspace(server);
    assert.match(vscode.__test.state.messages.at(-1).text, /unsaved changes/);
    assert.equal(JSON.parse(fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8')).servers['my-agent-memory'].command, '/usr/bin/python3');
    vscode.__test.reset();
});

test('the command refuses Restricted Mode and a server that never started, and writes nothing', async () => {
    vscode.__test.reset();
    const dir = tmpFolder();
    vscode.__test.state.folders = [vscode.__test.folder(dir, 'proj')];
    vscode.__test.state.trusted = false;
    await addMemoryServerToWorkspace({ python: PY, ready: async () => undefined });
    assert.match(vscode.__test.state.messages.at(-1).text, /Trust this workspace first/);
    vscode.__test.state.trusted = true;
    await addMemoryServerToWorkspace({ python: undefined, ready: async () => undefined });
    assert.match(vscode.__test.state.messages.at(-1).text, /interpreter that runs the memory server is not known/);
    assert.equal(fs.existsSync(path.join(dir, '.vscode')), false);
    vscode.__test.reset();
});
