'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const py = {
    ...require('../../client/out/common/pythonPlan.js'),
    ...require('../../client/out/common/pythonStamp.js'),
    ...require('../../client/out/common/setupLock.js'),
    ...require('../../client/out/common/python.js'),
};
const { withLock } = require('../../client/out/common/setupLock.js');

const probe = (version, hasServer = false, executable = '/usr/bin/python3') => ({
    ok: true,
    probe: { executable, version, hasServer },
});
const quiet = { info: () => undefined, error: () => undefined };

// Every temporary folder a test makes is removed at the end.
const made = [];
const realMkdtemp = fs.mkdtempSync;
fs.mkdtempSync = (prefix, ...rest) => {
    const dir = realMkdtemp(prefix, ...rest);
    made.push(dir);
    return dir;
};
test.after(() => {
    fs.mkdtempSync = realMkdtemp;
    for (const dir of made) {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test('parseProbe takes the last JSON line and ignores noise', () => {
    const out = 'hello from sitecustomize\n{"executable": "/x/python", "version": [3, 12, 1], "hasServer": true}\n';
    assert.deepEqual(py.parseProbe(out), { executable: '/x/python', version: [3, 12, 1], hasServer: true });
    assert.equal(py.parseProbe('not json'), undefined);
    assert.equal(py.parseProbe('{"version": [3]}'), undefined);
});

test('versions below 3.10 are refused', () => {
    assert.equal(py.isSupportedVersion([3, 9, 18]), false);
    assert.equal(py.isSupportedVersion([3, 10, 0]), true);
    assert.equal(py.isSupportedVersion([3, 13, 1]), true);
    assert.equal(py.isSupportedVersion([4, 0, 0]), true);
});

test('a configured interpreter that already has my_agent_core is used directly (no venv)', () => {
    const plan = py.planInterpreter('/opt/py/bin/python', probe([3, 11, 7], true, '/opt/py/bin/python'));
    assert.equal(plan.kind, 'direct');
    assert.equal(plan.python, '/opt/py/bin/python');
});

test('a configured interpreter without my_agent_core is the base of the venv', () => {
    const plan = py.planInterpreter('/opt/py/bin/python', probe([3, 11, 7], false, '/opt/py/bin/python3.11'));
    assert.equal(plan.kind, 'venv');
    assert.equal(plan.basePython, '/opt/py/bin/python');
});

test('without a setting, python3 on PATH builds the venv even when it has my_agent_core', () => {
    const plan = py.planInterpreter('', undefined, probe([3, 12, 0], true, '/usr/bin/python3.12'));
    assert.equal(plan.kind, 'venv');
    assert.equal(plan.basePython, '/usr/bin/python3.12');
});

test('failures give clear errors: not found, too old, broken setting', () => {
    const notFound = py.planInterpreter('', undefined, { ok: false, error: 'spawn python3 ENOENT' });
    assert.equal(notFound.kind, 'error');
    assert.equal(notFound.reason, 'notFound');
    assert.match(notFound.message, /No Python found/);
    assert.match(notFound.message, /myAgent\.python\.interpreter/);

    const old = py.planInterpreter('', undefined, probe([3, 8, 10]));
    assert.equal(old.reason, 'tooOld');
    assert.match(old.message, /3\.8\.10/);
    assert.match(old.message, /3\.10/);

    const broken = py.planInterpreter('/nope/python', { ok: false, error: 'ENOENT' });
    assert.equal(broken.reason, 'settingBroken');
    assert.match(broken.message, /\/nope\/python/);
});

test('the venv is reused only when extension version, python version and base python match', () => {
    const expected = py.expectedStamp('0.1.0', probe([3, 11, 7]).probe);
    assert.deepEqual(expected, {
        extensionVersion: '0.1.0',
        pythonVersion: '3.11.7',
        basePython: '/usr/bin/python3',
        wheels: '',
    });
    assert.equal(py.venvDecision(expected, expected, true), 'reuse');
    assert.equal(py.venvDecision(expected, expected, false), 'create');
    assert.equal(py.venvDecision(undefined, expected, true), 'create');
    assert.equal(py.venvDecision({ ...expected, extensionVersion: '0.0.9' }, expected, true), 'create');
    assert.equal(py.venvDecision({ ...expected, pythonVersion: '3.11.6' }, expected, true), 'create');
    const rebuilt = { ...expected, wheels: 'abc' };
    assert.equal(py.venvDecision(expected, rebuilt, true), 'create');
});

test('the wheelhouse fingerprint changes when a wheel changes', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-wheels-'));
    assert.equal(py.wheelsFingerprint(path.join(dir, 'missing')), '');
    fs.writeFileSync(path.join(dir, 'my_agent_core-0.1.0-py3-none-any.whl'), 'a');
    const one = py.wheelsFingerprint(dir);
    assert.match(one, /^[0-9a-f]{16}$/);
    fs.writeFileSync(path.join(dir, 'my_agent_core-0.1.0-py3-none-any.whl'), 'b'); // same size, new bytes
    const two = py.wheelsFingerprint(dir);
    assert.notEqual(two, one);
    fs.writeFileSync(path.join(dir, 'pygls-2.1.1-py3-none-any.whl'), 'x');
    assert.notEqual(py.wheelsFingerprint(dir), two);
});

test('pip installs offline from the wheelhouse', () => {
    const args = py.pipInstallArgs('/ext/bundled/wheels');
    assert.deepEqual(args.slice(0, 3), ['-m', 'pip', 'install']);
    assert.ok(args.includes('--no-index'));
    assert.equal(args[args.indexOf('--find-links') + 1], '/ext/bundled/wheels');
    assert.equal(args[args.length - 1], 'my-agent-core');
    assert.equal(py.venvPython('/v', 'linux'), path.join('/v', 'bin', 'python'));
    assert.equal(py.venvPython('/v', 'win32'), path.join('/v', 'Scripts', 'python.exe'));
});

/** A fake interpreter: a shell script that prints a probe line. */
function fakePython(dir, name, version, hasServer) {
    const file = path.join(dir, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const json = JSON.stringify({ executable: file, version, hasServer });
    fs.writeFileSync(file, `#!/bin/sh\necho '${json}'\n`, { mode: 0o755 });
    return file;
}

test('resolveServerPython: a configured interpreter with the server is returned as is', { skip: process.platform === 'win32' }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-py-'));
    const python = fakePython(dir, 'python', [3, 12, 3], true);
    const got = await py.resolveServerPython({
        setting: python,
        extensionVersion: '0.1.0',
        storageDir: path.join(dir, 'storage'),
        wheelsDir: path.join(dir, 'wheels'),
        log: quiet,
    });
    assert.equal(got, python);
    assert.equal(fs.existsSync(path.join(dir, 'storage')), false);
});

test('resolveServerPython: too old an interpreter raises PythonSetupError', { skip: process.platform === 'win32' }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-py-'));
    const python = fakePython(dir, 'python', [3, 9, 2], true);
    await assert.rejects(
        py.resolveServerPython({ setting: python, extensionVersion: '0.1.0', storageDir: dir, wheelsDir: dir, log: quiet }),
        (e) => e instanceof py.PythonSetupError && /too old/.test(e.message),
    );
});

test('resolveServerPython: a matching stamp reuses the venv without touching it', { skip: process.platform === 'win32' }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-py-'));
    const base = fakePython(dir, 'base/python', [3, 11, 4], false);
    const storage = path.join(dir, 'storage');
    const venvDir = path.join(storage, 'python-env');
    const venvPy = fakePython(venvDir, 'bin/python', [3, 11, 4], true);
    fs.writeFileSync(
        path.join(venvDir, py.STAMP_FILE),
        JSON.stringify({ extensionVersion: '0.1.0', pythonVersion: '3.11.4', basePython: base }),
    );
    const got = await py.resolveServerPython({
        setting: base,
        extensionVersion: '0.1.0',
        storageDir: storage,
        wheelsDir: path.join(dir, 'no-wheels'),
        log: quiet,
    });
    assert.equal(got, venvPy);
});

test('resolveServerPython: a venv is needed but no wheels are bundled -> clear error', { skip: process.platform === 'win32' }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-py-'));
    const base = fakePython(dir, 'python', [3, 11, 4], false);
    await assert.rejects(
        py.resolveServerPython({
            setting: base,
            extensionVersion: '0.1.0',
            storageDir: path.join(dir, 'storage'),
            wheelsDir: path.join(dir, 'no-wheels'),
            log: quiet,
        }),
        (e) => e instanceof py.PythonSetupError && /no bundled wheels/.test(e.message),
    );
});

test('a setup lock left by a dead process is stale; a live owner keeps it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-lock-'));
    const lock = path.join(dir, 'python-env.lock');
    fs.mkdirSync(lock);
    assert.equal(py.lockOwnerGone(lock), false); // no owner file yet
    const old = new Date(Date.now() - 120_000);
    fs.utimesSync(lock, old, old);
    assert.equal(py.lockOwnerGone(lock), true); // ... and none for two minutes: left over
    fs.writeFileSync(path.join(lock, 'owner'), String(process.pid));
    assert.equal(py.lockOwnerGone(lock), false);
    const child = require('child_process').spawnSync(process.execPath, ['-e', 'console.log(process.pid)']);
    fs.writeFileSync(path.join(lock, 'owner'), child.stdout.toString().trim());
    assert.equal(py.lockOwnerGone(lock), true);
});

test('pip runs without the user pip configuration', () => {
    const env = py.isolatedPipEnv({ PATH: '/bin', PIP_INDEX_URL: 'https://evil', PIP_FIND_LINKS: '/x', PYTHONPATH: '/p' });
    assert.equal(env.PATH, '/bin');
    assert.equal(env.PIP_INDEX_URL, undefined);
    assert.equal(env.PIP_FIND_LINKS, undefined);
    assert.equal(env.PYTHONPATH, undefined);
    assert.equal(env.PIP_CONFIG_FILE, os.devNull);
    assert.ok(py.pipInstallArgs('/w').includes('--isolated'));
});

test('the setup steps: venv from the base interpreter, then an offline install with the venv python', () => {
    const steps = py.venvSetupSteps('/usr/bin/python3.12', '/s/python-env', '/ext/bundled/wheels', 'linux');
    assert.deepEqual(
        steps.map((s) => s.what),
        ['createVenv', 'installServer'],
    );
    assert.deepEqual(steps[0], { what: 'createVenv', command: '/usr/bin/python3.12', args: ['-m', 'venv', '/s/python-env'] });
    assert.equal(steps[1].command, path.join('/s/python-env', 'bin', 'python'));
    assert.deepEqual(steps[1].args, py.pipInstallArgs('/ext/bundled/wheels'));
    assert.deepEqual(py.probeCandidates('linux'), ['python3']);
    assert.deepEqual(py.probeCandidates('win32'), ['python3', 'python']);
});

/**
 * A fake base interpreter that answers the probe and implements `-m venv DIR` by writing DIR/bin/python, a
 * fake venv interpreter whose `-m pip install` exits with `pipExit` and logs its arguments.
 */
function fakeBasePython(dir, pipExit) {
    const file = path.join(dir, 'base', 'python');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const probeJson = JSON.stringify({ executable: file, version: [3, 11, 4], hasServer: false });
    const template = path.join(dir, 'venv-python');
    fs.writeFileSync(
        template,
        [
            '#!/bin/sh',
            'here=$(dirname "$0")',
            `if [ "$1" = "-m" ]; then echo "$@" >> "$here/../pip-args"; exit ${pipExit}; fi`,
            `echo '${JSON.stringify({ executable: 'venv', version: [3, 11, 4], hasServer: true })}'`,
        ].join('\n') + '\n',
        { mode: 0o755 },
    );
    fs.writeFileSync(
        file,
        [
            '#!/bin/sh',
            'if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then',
            `  mkdir -p "$3/bin" && cp "${template}" "$3/bin/python" && exit 0`,
            'fi',
            `echo '${probeJson}'`,
        ].join('\n') + '\n',
        { mode: 0o755 },
    );
    return { file };
}

test('resolveServerPython builds the venv offline, stamps it, reports each step, and reuses it next time', { skip: process.platform === 'win32' }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-py-'));
    const { file: base } = fakeBasePython(dir, 0);
    const wheels = path.join(dir, 'wheels');
    fs.mkdirSync(wheels);
    fs.writeFileSync(path.join(wheels, 'my_agent_core-0.1.0-py3-none-any.whl'), 'w');
    const storage = path.join(dir, 'storage');
    const reports = [];
    const progress = async (task) => task({ report: (m) => reports.push(m) });
    const opts = { setting: base, extensionVersion: '0.1.0', storageDir: storage, wheelsDir: wheels, log: quiet, progress };
    const got = await py.resolveServerPython(opts);
    const venvDir = path.join(storage, 'python-env');
    assert.equal(got, path.join(venvDir, 'bin', 'python'));
    assert.deepEqual(reports, ['creating a virtual environment', 'installing the language server from bundled wheels']);
    const pipArgs = fs.readFileSync(path.join(venvDir, 'pip-args'), 'utf8');
    assert.match(pipArgs, /-m pip install --isolated --no-index --find-links \S+wheels/);
    const stamp = py.readStamp(venvDir);
    assert.equal(stamp.basePython, base);
    assert.equal(stamp.pythonVersion, '3.11.4');
    assert.equal(stamp.wheels, py.wheelsFingerprint(wheels));
    assert.equal(fs.existsSync(path.join(storage, 'python-env.lock')), false, 'the lock is released');
    // Second activation: the stamp matches, nothing runs again.
    reports.length = 0;
    assert.equal(await py.resolveServerPython(opts), got);
    assert.deepEqual(reports, []);
    assert.equal(fs.readFileSync(path.join(venvDir, 'pip-args'), 'utf8'), pipArgs);
});

test('resolveServerPython: a failed install removes the half-built venv and says why', { skip: process.platform === 'win32' }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-py-'));
    const { file: base } = fakeBasePython(dir, 3);
    const wheels = path.join(dir, 'wheels');
    fs.mkdirSync(wheels);
    const storage = path.join(dir, 'storage');
    await assert.rejects(
        py.resolveServerPython({
            setting: base,
            extensionVersion: '0.1.0',
            storageDir: storage,
            wheelsDir: wheels,
            log: quiet,
            progress: async (task) => task({ report: () => undefined }),
        }),
        (e) => e instanceof py.PythonSetupError && /Installing the My Agent server into a venv failed \(Python 3\.11\.4/.test(e.message),
    );
    assert.equal(fs.existsSync(path.join(storage, 'python-env')), false);
    assert.equal(fs.existsSync(path.join(storage, 'python-env.lock')), false);
});

test('withLock runs one holder at a time and releases the lock when the holder throws', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-lock-'));
    const lock = path.join(dir, 'l.lock');
    const order = [];
    let release;
    const gate = new Promise((r) => (release = r));
    const first = withLock(lock, quiet, async () => {
        order.push('first:in');
        await gate;
        order.push('first:out');
        throw new Error('boom');
    }, { pollMs: 5 });
    await new Promise((r) => setTimeout(r, 20));
    const second = withLock(lock, quiet, async () => {
        order.push('second:in');
        return 42;
    }, { pollMs: 5 });
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(order, ['first:in'], 'the second waits while the first holds the lock');
    release();
    await assert.rejects(first, /boom/);
    assert.equal(await second, 42);
    assert.deepEqual(order, ['first:in', 'first:out', 'second:in']);
    assert.equal(fs.existsSync(lock), false);
});

test('withLock takes over a lock whose owner is gone, and one held past the wait limit', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'myagent-lock-'));
    const lock = path.join(dir, 'l.lock');
    fs.mkdirSync(lock);
    const child = require('child_process').spawnSync(process.execPath, ['-e', 'console.log(process.pid)']);
    fs.writeFileSync(path.join(lock, 'owner'), child.stdout.toString().trim());
    assert.equal(await withLock(lock, quiet, async () => 'dead owner', { pollMs: 5 }), 'dead owner');
    // A live owner (this very process) that never lets go: the waiter gives up waiting and takes over.
    fs.mkdirSync(lock);
    fs.writeFileSync(path.join(lock, 'owner'), String(process.pid));
    assert.equal(await withLock(lock, quiet, async () => 'took over', { pollMs: 5, waitMs: 30 }), 'took over');
});
