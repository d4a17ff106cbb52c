import * as cp from 'child_process';
import * as path from 'path';
import { parseProbe, PROBE_SCRIPT, ProbeOutcome } from './pythonPlan';

/** Running processes for the Python setup: a bounded spawn that logs its output, and the interpreter probe. */

export interface Logger {
    info(message: string): void;
    error(message: string): void;
}

export interface RunResult {
    code: number | null;
    stdout: string;
    stderr: string;
    /** Set when the process could not be started (or failed to spawn) at all. */
    error?: string;
}

/** Runs a process, logging its output; resolves (never rejects) with the exit code and the output. */
export function run(
    command: string,
    args: string[],
    log: Logger,
    timeoutMs = 600_000,
    env: NodeJS.ProcessEnv = process.env,
): Promise<RunResult> {
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
