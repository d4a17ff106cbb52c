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

const yes = async () => true;
const no = async () => false;
const readJson = (p) => JSON.parse(fs.readFileSync(p, 'utf8'));

test('entries: the shared one names no path of this machine; the user one runs this machine\'s interpreter', () => {
    assert.deepEqual(cfg.portableEntry(), {
        type: 'stdio',
        command: 'my-agent',
        args: ['mcp', '--dir', '${workspaceFolder}/.my_agent_core/memory'],
    });
    assert.deepEqual(cfg.portableEntry({ memory: 3000, user: 1375 }).args.slice(3), ['--memory-limit', '3000', '--user-limit', '1375']);
    assert.deepEqual(cfg.userEntry('/home/u/venv/bin/python'), {
        type: 'stdio',
        command: '/home/u/venv/bin/python',
        args: ['-m', 'my_agent_core', 'mcp', '--dir', '${workspaceFolder}/.my_agent_core/memory'],
    });
});

test('the command: with my-agent on PATH, .vscode/mcp.json gets the portable entry, no path of this machine', async () => {
    vscode.__test.reset();
    const dir = tmpFolder();
    vscode.__test.state.folders = [vscode.__test.folder(dir, 'proj')];
    const server = { python: '/home/u/.vscode/globalStorage/python-env/bin/python', ready: async () => undefined };
    await addMemoryServerToWorkspace(server, yes);
    const text = fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8');
    assert.deepEqual(JSON.parse(text).servers['my-agent-memory'], {
        type: 'stdio',
        command: 'my-agent',
        args: ['mcp', '--dir', '${workspaceFolder}/.my_agent_core/memory'],
    });
    assert.ok(!text.includes(dir) && !text.includes('python-env') && !text.includes(os.homedir()), text);
    assert.match(vscode.__test.state.messages.at(-1).text, /Added "my-agent-memory" to \.vscode\/mcp\.json of proj/);
    assert.equal(vscode.__test.state.messages.filter((m) => m.rest?.[0]?.modal).length, 0, 'no question asked');

    // An older entry with this machine's interpreter and folder: the user is asked (modal), declining keeps it.
    fs.writeFileSync(path.join(dir, '.vscode', 'mcp.json'), JSON.stringify({ servers: { 'my-agent-memory': cfg.mcpEntry('/usr/bin/python3', path.join(dir, '.my_agent_core', 'memory')) } }));
    const before = fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8');
    vscode.__test.state.answers = [undefined];
    await addMemoryServerToWorkspace(server, yes);
    const ask = vscode.__test.state.messages.at(-1);
    assert.equal(ask.kind, 'warning');
    assert.match(ask.text, /already has a server named "my-agent-memory" with another command/);
    assert.equal(ask.rest[0].modal, true);
    assert.match(ask.rest[0].detail, /\/usr\/bin\/python3[\s\S]*"my-agent"/);
    assert.equal(fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8'), before);
    vscode.__test.state.answers = ['Replace'];
    await addMemoryServerToWorkspace(server, yes);
    assert.equal(readJson(path.join(dir, '.vscode', 'mcp.json')).servers['my-agent-memory'].command, 'my-agent');

    // Unsaved edits of mcp.json in the editor: refused, so none of them is lost.
    fs.writeFileSync(path.join(dir, '.vscode', 'mcp.json'), before);
    vscode.__test.state.textDocuments = [{ uri: vscode.Uri.file(path.join(dir, '.vscode', 'mcp.json')), isDirty: true }];
    await addMemoryServerToWorkspace(server, yes);
    assert.match(vscode.__test.state.messages.at(-1).text, /unsaved changes/);
    assert.equal(fs.readFileSync(path.join(dir, '.vscode', 'mcp.json'), 'utf8'), before);
    vscode.__test.reset();
});

test('the command: without my-agent on PATH it offers the user\'s own configuration or the shared file anyway', async () => {
    vscode.__test.reset();
    const dir = tmpFolder();
    vscode.__test.state.folders = [vscode.__test.folder(dir, 'proj')];
    const server = { python: '/home/u/venv/bin/python', ready: async () => undefined };
    // Dismissed: nothing written anywhere.
    vscode.__test.state.answers = [undefined];
    await addMemoryServerToWorkspace(server, no);
    const ask = vscode.__test.state.messages.at(-1);
    assert.equal(ask.rest[0].modal, true);
    assert.match(ask.text, /"my-agent" is not on your PATH/);
    assert.deepEqual(ask.rest.slice(1), ['Add to My MCP Configuration', 'Write the Shared File Anyway']);
    assert.match(ask.rest[0].detail, /shared with everyone who clones proj/);
    assert.equal(fs.existsSync(path.join(dir, '.vscode')), false);
    assert.deepEqual(vscode.__test.state.updates, []);
    // The shared file anyway: the portable entry, for teammates who install my-agent-core.
    vscode.__test.state.answers = ['Write the Shared File Anyway'];
    await addMemoryServerToWorkspace(server, no);
    assert.equal(readJson(path.join(dir, '.vscode', 'mcp.json')).servers['my-agent-memory'].command, 'my-agent');
    vscode.__test.reset();
});

test('the user\'s own configuration: VS Code 1.102+ opens its mcp.json, which is edited and saved (one undo step)', async () => {
    vscode.__test.reset();
    const dir = tmpFolder();
    vscode.__test.state.folders = [vscode.__test.folder(dir, 'proj')];
    const userJson = vscode.Uri.file('/home/u/.config/Code/User/mcp.json');
    const original = '{\n  // mine\n  "servers": {\n    "other": { "command": "x" }\n  },\n  "inputs": []\n}\n';
    const doc = vscode.__test.memoryDocument(userJson, original);
    vscode.__test.state.knownCommands = ['workbench.mcp.openUserMcpJson'];
    vscode.__test.state.commandHandlers['workbench.mcp.openUserMcpJson'] = () => {
        vscode.__test.state.textDocuments = [doc];
        vscode.__test.state.activeEditor = { document: doc };
    };
    vscode.__test.state.answers = ['Add to My MCP Configuration'];
    await addMemoryServerToWorkspace({ python: '/home/u/venv/bin/python', ready: async () => undefined }, no);
    assert.equal(vscode.__test.state.appliedEdits.length, 1, 'one edit: one undo step');
    assert.equal(doc.saved, 1);
    const parsed = parse(doc.text);
    assert.deepEqual(parsed.servers['my-agent-memory'], cfg.userEntry('/home/u/venv/bin/python'));
    assert.deepEqual(parsed.servers.other, { command: 'x' });
    assert.ok(doc.text.includes('// mine'), 'comments kept');
    assert.match(vscode.__test.state.messages.at(-1).text, /Added "my-agent-memory" to your MCP configuration/);
    assert.equal(fs.existsSync(path.join(dir, '.vscode')), false, 'the shared file is not touched');

    // Again: nothing to do. With unsaved edits in that file: refused, nothing changed.
    vscode.__test.state.answers = ['Add to My MCP Configuration'];
    await addMemoryServerToWorkspace({ python: '/home/u/venv/bin/python', ready: async () => undefined }, no);
    assert.match(vscode.__test.state.messages.at(-1).text, /already runs this memory server/);
    doc.isDirty = true;
    const text = doc.text;
    vscode.__test.state.answers = ['Add to My MCP Configuration'];
    await addMemoryServerToWorkspace({ python: '/other/python', ready: async () => undefined }, no);
    assert.match(vscode.__test.state.messages.at(-1).text, /Could not update your MCP configuration: your mcp\.json has unsaved changes/);
    assert.equal(doc.text, text);
    vscode.__test.reset();
});

test('the user\'s own configuration: VS Code 1.100-1.101 keeps it in the "mcp" user setting, merged', async () => {
    vscode.__test.reset();
    const dir = tmpFolder();
    vscode.__test.state.folders = [vscode.__test.folder(dir, 'proj')];
    vscode.__test.state.globalConfig.mcp = { servers: { other: { command: 'x' } }, inputs: [{ id: 'k' }] };
    vscode.__test.state.answers = ['Add to My MCP Configuration'];
    await addMemoryServerToWorkspace({ python: '/home/u/venv/bin/python', ready: async () => undefined }, no);
    const [u] = vscode.__test.state.updates;
    assert.equal(u.key, 'mcp');
    assert.equal(u.target, vscode.ConfigurationTarget.Global, 'the user settings, never the workspace\'s');
    assert.deepEqual(u.value, {
        servers: { other: { command: 'x' }, 'my-agent-memory': cfg.userEntry('/home/u/venv/bin/python') },
        inputs: [{ id: 'k' }],
    });
    // Another interpreter later: asked first; declined, nothing written.
    vscode.__test.state.answers = ['Add to My MCP Configuration', undefined];
    await addMemoryServerToWorkspace({ python: '/usr/bin/python3', ready: async () => undefined }, no);
    assert.match(vscode.__test.state.messages.at(-1).text, /Your MCP configuration already has a server named "my-agent-memory"/);
    assert.equal(vscode.__test.state.updates.length, 1);
    // The interpreter is not known (the server did not start): an error, nothing written.
    vscode.__test.state.answers = ['Add to My MCP Configuration'];
    await addMemoryServerToWorkspace({ python: undefined, ready: async () => undefined }, no);
    assert.match(vscode.__test.state.messages.at(-1).text, /interpreter that runs the memory server is not known/);
    assert.equal(vscode.__test.state.updates.length, 1);
    // A setting that is not an object is left alone.
    vscode.__test.state.globalConfig.mcp = 'junk';
    vscode.__test.state.answers = ['Add to My MCP Configuration'];
    await addMemoryServerToWorkspace({ python: '/p', ready: async () => undefined }, no);
    assert.match(vscode.__test.state.messages.at(-1).text, /cannot be edited safely \(the "mcp" setting is not an object\)/);
    assert.equal(vscode.__test.state.updates.length, 1);
    vscode.__test.reset();
});

test('the probe: a my-agent on PATH that serves MCP counts; another program of that name, or none, does not', { skip: process.platform === 'win32' }, async (t) => {
    const { probePortableCommand } = require('../../client/out/lm/mcpCommand.js');
    const bin = tmpFolder();
    const saved = process.env.PATH;
    t.after(() => {
        process.env.PATH = saved;
    });
    const script = (body) => {
        fs.writeFileSync(path.join(bin, 'my-agent'), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    };
    process.env.PATH = bin;
    assert.equal(await probePortableCommand(), false, 'not on PATH');
    script('echo "usage: my-agent mcp [--dir PATH]"');
    assert.equal(await probePortableCommand(), true);
    script('echo "some other my-agent"');
    assert.equal(await probePortableCommand(), false);
    script('echo "--dir"; exit 3');
    assert.equal(await probePortableCommand(), false, 'a failing command does not count');
});

test('the command refuses Restricted Mode before anything else, and writes nothing', async () => {
    vscode.__test.reset();
    const dir = tmpFolder();
    vscode.__test.state.folders = [vscode.__test.folder(dir, 'proj')];
    vscode.__test.state.trusted = false;
    let probed = 0;
    await addMemoryServerToWorkspace({ python: PY, ready: async () => undefined }, async () => (probed++, true));
    assert.match(vscode.__test.state.messages.at(-1).text, /Trust this workspace first/);
    assert.equal(probed, 0);
    assert.equal(fs.existsSync(path.join(dir, '.vscode')), false);
    assert.deepEqual(vscode.__test.state.updates, []);
    vscode.__test.reset();
});
