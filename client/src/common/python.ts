import * as cp from 'child_process';
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

/**
 * Finds the Python that runs the language server: the configured interpreter when it already has
 * my_agent_core, otherwise a private venv in the extension's global storage, built once from the bundled
 * wheelhouse (offline) and reused while the extension and Python versions stay the same.
 * The decisions are pure functions (unit-tested); the I/O around them is small.
 */

export const MIN_PYTHON: readonly [number, number] = [3, 10];
export const SUPPORTED_RANGE = '3.10–3.13';
export const PACKAGE_NAME = 'my-agent-core';
export const STAMP_FILE = 'my-agent-stamp.json';

/** Prints what we need to know about an interpreter as one JSON line. */
export const PROBE_SCRIPT = [
    'import json, sys',
    'try:',
    '    import my_agent_core  # noqa: F401',
    '    ok = True',
    'except Exception:',
    '    ok = False',
    'print(json.dumps({"executable": sys.executable, "version": list(sys.version_info[:3]), "hasServer": ok}))',
].join('\n');

export interface PythonProbe {
    executable: string;
    version: [number, number, number];
    hasServer: boolean;
}

export type ProbeOutcome = { ok: true; probe: PythonProbe } | { ok: false; error: string };

export interface VenvStamp {
    extensionVersion: string;
    pythonVersion: string;
    basePython: string;
    /** Names and sizes of the bundled wheels: a rebuilt .vsix with the same version still gets a fresh venv. */
    wheels?: string;
}

export type Plan =
    | { kind: 'direct'; python: string; probe: PythonProbe }
    | { kind: 'venv'; basePython: string; probe: PythonProbe }
    | { kind: 'error'; reason: 'notFound' | 'tooOld' | 'settingBroken'; message: string };

/** Parses the probe's output (the last JSON line, so a noisy sitecustomize does not break it). */
export function parseProbe(stdout: string): PythonProbe | undefined {
    const lines = stdout.trim().split(/\r?\n/).reverse();
    for (const line of lines) {
        try {
            const v = JSON.parse(line) as Partial<PythonProbe>;
            if (
                v &&
                typeof v.executable === 'string' &&
                Array.isArray(v.version) &&
                v.version.length === 3 &&
                v.version.every((n) => typeof n === 'number')
            ) {
                return {
                    executable: v.executable,
                    version: [v.version[0], v.version[1], v.version[2]],
                    hasServer: v.hasServer === true,
                };
            }
        } catch {
            // not the JSON line
        }
    }
    return undefined;
}

export function versionString(v: readonly number[]): string {
    return v.join('.');
}

export function isSupportedVersion(v: readonly number[]): boolean {
    return v[0] > MIN_PYTHON[0] || (v[0] === MIN_PYTHON[0] && v[1] >= MIN_PYTHON[1]);
}

/**
 * Decides which interpreter to use. `setting` is myAgent.python.interpreter ('' when unset); `settingProbe`
 * is the probe of that interpreter, `pathProbe` the probe of python3 on PATH (only needed without a setting).
 */
export function planInterpreter(setting: string, settingProbe?: ProbeOutcome, pathProbe?: ProbeOutcome): Plan {
    const source = setting ? settingProbe : pathProbe;
    if (!source || !source.ok) {
        const detail = source && !source.ok ? source.error : '';
        return setting
            ? {
                  kind: 'error',
                  reason: 'settingBroken',
                  message: vscode.l10n.t(
                      'The Python interpreter set in myAgent.python.interpreter ({0}) could not be run: {1}',
                      setting,
                      detail,
                  ),
              }
            : {
                  kind: 'error',
                  reason: 'notFound',
                  message: vscode.l10n.t(
                      'No Python found: install Python {0} or set myAgent.python.interpreter.',
                      SUPPORTED_RANGE,
                  ),
              };
    }
    const probe = source.probe;
    if (!isSupportedVersion(probe.version)) {
        return {
            kind: 'error',
            reason: 'tooOld',
            message: vscode.l10n.t(
                'Python {0} at {1} is too old: My Agent needs Python {2}.',
                versionString(probe.version),
                probe.executable,
                SUPPORTED_RANGE,
            ),
        };
    }
    if (setting && probe.hasServer) {
        return { kind: 'direct', python: setting, probe };
    }
    return { kind: 'venv', basePython: setting || probe.executable, probe };
}

export function expectedStamp(extensionVersion: string, probe: PythonProbe, wheels = ''): VenvStamp {
    return { extensionVersion, pythonVersion: versionString(probe.version), basePython: probe.executable, wheels };
}

/** A short fingerprint of the wheelhouse (names and sizes; the server wheel's bytes); '' when there is none. */
export function wheelsFingerprint(wheelsDir: string): string {
    let names: string[];
    try {
        names = fs.readdirSync(wheelsDir).filter((n) => n.endsWith('.whl')).sort();
    } catch {
        return '';
    }
    const hash = crypto.createHash('sha256');
    for (const n of names) {
        const file = path.join(wheelsDir, n);
        hash.update(`${n}:${fs.statSync(file).size}\n`);
        if (n.startsWith('my_agent_core-')) {
            hash.update(fs.readFileSync(file)); // the server itself: content, since its version rarely changes
        }
    }
    return hash.digest('hex').slice(0, 16);
}

/** Reuse the venv only when its stamp matches exactly and its interpreter is still there. */
export function venvDecision(stamp: VenvStamp | undefined, expected: VenvStamp, venvPythonExists: boolean): 'reuse' | 'create' {
    if (!stamp || !venvPythonExists) {
        return 'create';
    }
    return stamp.extensionVersion === expected.extensionVersion &&
        stamp.pythonVersion === expected.pythonVersion &&
        stamp.basePython === expected.basePython &&
        (stamp.wheels ?? '') === (expected.wheels ?? '')
        ? 'reuse'
        : 'create';
}

export function venvPython(venvDir: string, platform: NodeJS.Platform = process.platform): string {
    return platform === 'win32' ? path.join(venvDir, 'Scripts', 'python.exe') : path.join(venvDir, 'bin', 'python');
}

/**
 * The environment for `-m venv` and `pip install`: no pip configuration files and (with --isolated) no PIP_*
 * variables, so a user's index, constraints or find-links cannot change what gets installed offline.
 */
export function isolatedPipEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(base)) {
        if (!k.toUpperCase().startsWith('PIP_') && k !== 'PYTHONPATH' && k !== 'PYTHONHOME') {
            env[k] = v;
        }
    }
    env.PIP_CONFIG_FILE = os.devNull;
    return env;
}

export function pipInstallArgs(wheelsDir: string): string[] {
    return [
        '-m',
        'pip',
        'install',
        '--isolated',
        '--no-index',
        '--find-links',
        wheelsDir,
        '--disable-pip-version-check',
        '--no-input',
        PACKAGE_NAME,
    ];
}

export function readStamp(venvDir: string): VenvStamp | undefined {
    try {
        const v = JSON.parse(fs.readFileSync(path.join(venvDir, STAMP_FILE), 'utf8')) as VenvStamp;
        return typeof v.extensionVersion === 'string' ? v : undefined;
    } catch {
        return undefined;
    }
}

// ---- I/O --------------------------------------------------------------------------------------------------

export interface Logger {
    info(message: string): void;
    error(message: string): void;
}

/** Runs a process, logging its output; resolves with the exit code and the output. */
export function run(
    command: string,
    args: string[],
    log: Logger,
    timeoutMs = 600_000,
    env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number | null; stdout: string; stderr: string; error?: string }> {
    return new Promise((resolve) => {
        let stdout = '';
        let stderr = '';
        let child: cp.ChildProcess;
        try {
            child = cp.spawn(command, args, { env, windowsHide: true });
        } catch (e) {
            resolve({ code: null, stdout, stderr, error: String(e) });
            return;
        }
        const timer = setTimeout(() => child.kill(), timeoutMs);
        child.stdout?.on('data', (d: Buffer) => {
            stdout += d.toString();
        });
        child.stderr?.on('data', (d: Buffer) => {
            stderr += d.toString();
        });
        child.on('error', (err) => {
            clearTimeout(timer);
            resolve({ code: null, stdout, stderr, error: err.message });
        });
        child.on('close', (code) => {
            clearTimeout(timer);
            const tail = (stdout + stderr).trim();
            if (tail) {
                log.info(`${path.basename(command)} ${args.slice(0, 3).join(' ')}…: ${tail.slice(-4000)}`);
            }
            resolve({ code, stdout, stderr });
        });
    });
}

export async function probePython(python: string, log: Logger): Promise<ProbeOutcome> {
    const r = await run(python, ['-c', PROBE_SCRIPT], log, 30_000);
    if (r.error) {
        return { ok: false, error: r.error };
    }
    const probe = parseProbe(r.stdout);
    if (r.code !== 0 || !probe) {
        return { ok: false, error: (r.stderr || r.stdout || `exit code ${r.code}`).trim().slice(-500) };
    }
    return { ok: true, probe };
}

export class PythonSetupError extends Error {}

/** True when the process that wrote a lock is gone (a window closed mid-setup must not block the next one). */
export function lockOwnerGone(lockDir: string): boolean {
    let pid: number;
    try {
        pid = Number(fs.readFileSync(path.join(lockDir, 'owner'), 'utf8').trim());
    } catch {
        // The owner writes its pid right after mkdir: a lock without one for a minute is left over.
        try {
            return Date.now() - fs.statSync(lockDir).mtimeMs > 60_000;
        } catch {
            return false;
        }
    }
    if (!Number.isInteger(pid) || pid <= 0) {
        return true;
    }
    try {
        process.kill(pid, 0);
        return false;
    } catch (e) {
        return (e as NodeJS.ErrnoException).code === 'ESRCH';
    }
}

/** One venv setup at a time across windows: a lock directory holding the owner's pid. */
async function withLock<T>(lockDir: string, log: Logger, fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + 10 * 60_000;
    let waiting = false;
    for (;;) {
        try {
            fs.mkdirSync(lockDir);
            fs.writeFileSync(path.join(lockDir, 'owner'), String(process.pid));
            break;
        } catch {
            let age = 0;
            try {
                age = Date.now() - fs.statSync(lockDir).mtimeMs;
            } catch {
                continue;
            }
            if (lockOwnerGone(lockDir) || age > 10 * 60_000 || Date.now() > deadline) {
                log.info(`removing stale lock ${lockDir}`);
                fs.rmSync(lockDir, { recursive: true, force: true });
                continue;
            }
            if (!waiting) {
                waiting = true;
                log.info(`waiting for another window to finish the Python setup (${lockDir})`);
            }
            await new Promise((r) => setTimeout(r, 1000));
        }
    }
    try {
        return await fn();
    } finally {
        fs.rmSync(lockDir, { recursive: true, force: true });
    }
}

export interface ResolveOptions {
    setting: string;
    extensionVersion: string;
    storageDir: string;
    wheelsDir: string;
    log: Logger;
}

/** Returns the interpreter that runs `-m my_agent_core serve`, creating the venv (with progress) when needed. */
export async function resolveServerPython(opts: ResolveOptions): Promise<string> {
    const { setting, log } = opts;
    let plan: Plan;
    if (setting) {
        plan = planInterpreter(setting, await probePython(setting, log));
    } else {
        let outcome = await probePython('python3', log);
        if (!outcome.ok && process.platform === 'win32') {
            outcome = await probePython('python', log);
        }
        plan = planInterpreter('', undefined, outcome);
    }
    if (plan.kind === 'error') {
        throw new PythonSetupError(plan.message);
    }
    if (plan.kind === 'direct') {
        log.info(`using ${plan.python} (Python ${versionString(plan.probe.version)}, my_agent_core importable)`);
        return plan.python;
    }
    const venvDir = path.join(opts.storageDir, 'python-env');
    const expected = expectedStamp(opts.extensionVersion, plan.probe, wheelsFingerprint(opts.wheelsDir));
    const py = venvPython(venvDir);
    if (venvDecision(readStamp(venvDir), expected, fs.existsSync(py)) === 'reuse') {
        log.info(`reusing venv ${venvDir} (Python ${expected.pythonVersion})`);
        return py;
    }
    if (!fs.existsSync(opts.wheelsDir)) {
        throw new PythonSetupError(
            vscode.l10n.t(
                'This build of My Agent has no bundled wheels ({0}). Set myAgent.python.interpreter to a Python that has my_agent_core installed.',
                opts.wheelsDir,
            ),
        );
    }
    fs.mkdirSync(opts.storageDir, { recursive: true });
    return withLock(path.join(opts.storageDir, 'python-env.lock'), log, async () =>
        vscode.window.withProgress(
            {
                location: vscode.ProgressLocation.Notification,
                title: vscode.l10n.t('My Agent: setting up its Python environment (first run only)…'),
            },
            async (progress) => {
                // Another window may have finished while we waited for the lock.
                if (venvDecision(readStamp(venvDir), expected, fs.existsSync(py)) === 'reuse') {
                    return py;
                }
                const started = Date.now();
                fs.rmSync(venvDir, { recursive: true, force: true });
                progress.report({ message: vscode.l10n.t('creating a virtual environment') });
                log.info(`creating venv ${venvDir} with ${plan.basePython}`);
                const made = await run(plan.basePython, ['-m', 'venv', venvDir], log, 600_000, isolatedPipEnv());
                if (made.code !== 0) {
                    throw new PythonSetupError(
                        vscode.l10n.t(
                            'Could not create a virtual environment with {0} (on Debian/Ubuntu install python3-venv): {1}',
                            plan.basePython,
                            (made.error ?? made.stderr).trim().slice(-300),
                        ),
                    );
                }
                progress.report({ message: vscode.l10n.t('installing the language server from bundled wheels') });
                const installed = await run(py, pipInstallArgs(opts.wheelsDir), log, 600_000, isolatedPipEnv());
                if (installed.code !== 0) {
                    fs.rmSync(venvDir, { recursive: true, force: true });
                    throw new PythonSetupError(
                        vscode.l10n.t(
                            'Installing the My Agent server into a venv failed (Python {0}; supported: {1}). See the output for details.',
                            expected.pythonVersion,
                            SUPPORTED_RANGE,
                        ),
                    );
                }
                fs.writeFileSync(path.join(venvDir, STAMP_FILE), JSON.stringify(expected, null, 2));
                log.info(`venv ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
                return py;
            },
        ),
    );
}
