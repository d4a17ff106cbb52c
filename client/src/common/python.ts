import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import {
    expectedStamp,
    isolatedPipEnv,
    Plan,
    planInterpreter,
    probeCandidates,
    SUPPORTED_RANGE,
    venvDecision,
    venvPython,
    venvSetupSteps,
    versionString,
} from './pythonPlan';
import { Logger, probePython, run } from './pythonProcess';
import { readStamp, wheelsFingerprint, writeStamp } from './pythonStamp';
import { withLock } from './setupLock';
import { notificationProgress, ProgressRunner } from './setupProgress';

/**
 * Finds the Python that runs the language server: the configured interpreter when it already has
 * my_agent_core, otherwise a private venv in the extension's global storage, built once from the bundled
 * wheelhouse (offline) and reused while the extension and Python versions stay the same. This module only
 * sequences the parts: decisions (pythonPlan), processes (pythonProcess), the lock (setupLock), stamps
 * (pythonStamp) and the progress UI (setupProgress).
 */

export class PythonSetupError extends Error {}

export interface ResolveOptions {
    setting: string;
    extensionVersion: string;
    storageDir: string;
    wheelsDir: string;
    log: Logger;
    /** How the setup shows its progress (a VS Code notification unless a test passes its own). */
    progress?: ProgressRunner;
}

async function planFor(setting: string, log: Logger): Promise<Plan> {
    if (setting) {
        return planInterpreter(setting, await probePython(setting, log));
    }
    let outcome = await probePython(probeCandidates()[0], log);
    for (const candidate of probeCandidates().slice(1)) {
        if (outcome.ok) {
            break;
        }
        outcome = await probePython(candidate, log);
    }
    return planInterpreter('', undefined, outcome);
}

/** Returns the interpreter that runs `-m my_agent_core serve`, creating the venv (with progress) when needed. */
export async function resolveServerPython(opts: ResolveOptions): Promise<string> {
    const { log } = opts;
    const plan = await planFor(opts.setting, log);
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
    const progress = opts.progress ?? notificationProgress;
    return withLock(path.join(opts.storageDir, 'python-env.lock'), log, () =>
        progress(async (report) => {
            // Another window may have finished while we waited for the lock.
            if (venvDecision(readStamp(venvDir), expected, fs.existsSync(py)) === 'reuse') {
                return py;
            }
            const started = Date.now();
            fs.rmSync(venvDir, { recursive: true, force: true });
            const [create, install] = venvSetupSteps(plan.basePython, venvDir, opts.wheelsDir);
            report.report(vscode.l10n.t('creating a virtual environment'));
            log.info(`creating venv ${venvDir} with ${plan.basePython}`);
            const made = await run(create.command, create.args, log, 600_000, isolatedPipEnv());
            if (made.code !== 0) {
                throw new PythonSetupError(
                    vscode.l10n.t(
                        'Could not create a virtual environment with {0} (on Debian/Ubuntu install python3-venv): {1}',
                        plan.basePython,
                        (made.error ?? made.stderr).trim().slice(-300),
                    ),
                );
            }
            report.report(vscode.l10n.t('installing the language server from bundled wheels'));
            const installed = await run(install.command, install.args, log, 600_000, isolatedPipEnv());
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
            writeStamp(venvDir, expected);
            log.info(`venv ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
            return py;
        }),
    );
}
