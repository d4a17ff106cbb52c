import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

/**
 * Pure planning for the server's Python: which interpreter to probe, whether to use it directly or build a
 * private venv, whether an existing venv can be reused, and exactly which commands the setup runs. No
 * processes and no file system here, so every decision is unit-tested on plain data.
 */

export const MIN_PYTHON: readonly [number, number] = [3, 10];
export const SUPPORTED_RANGE = '3.10–3.13';
export const PACKAGE_NAME = 'my-agent-core';

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

/** One process the venv setup runs, in order. */
export interface SetupStep {
    what: 'createVenv' | 'installServer';
    command: string;
    args: string[];
}

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

/** The interpreters to probe, in order, when no setting names one (Windows often has only `python`). */
export function probeCandidates(platform: NodeJS.Platform = process.platform): string[] {
    return platform === 'win32' ? ['python3', 'python'] : ['python3'];
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

/** What building the venv runs: `<base> -m venv <dir>`, then an offline pip install from the wheelhouse. */
export function venvSetupSteps(
    basePython: string,
    venvDir: string,
    wheelsDir: string,
    platform: NodeJS.Platform = process.platform,
): SetupStep[] {
    return [
        { what: 'createVenv', command: basePython, args: ['-m', 'venv', venvDir] },
        { what: 'installServer', command: venvPython(venvDir, platform), args: pipInstallArgs(wheelsDir) },
    ];
}
