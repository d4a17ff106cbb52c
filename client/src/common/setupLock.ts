import * as fs from 'fs';
import * as path from 'path';
import type { Logger } from './pythonProcess';

/**
 * One venv setup at a time across windows: a lock directory holding the owner's pid. A lock whose owner
 * died is taken over at once, and no lock is honoured forever (a hung owner cannot block every window).
 */

export interface LockOptions {
    /** Give up waiting and take the lock over after this long (ms). */
    waitMs?: number;
    /** A lock older than this is stale whoever holds it (ms). */
    staleMs?: number;
    /** How often a waiter looks again (ms). */
    pollMs?: number;
}

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

/** Runs `fn` holding the lock directory `lockDir`; the lock is removed afterwards, also when `fn` throws. */
export async function withLock<T>(lockDir: string, log: Logger, fn: () => Promise<T>, opts: LockOptions = {}): Promise<T> {
    const waitMs = opts.waitMs ?? 10 * 60_000;
    const staleMs = opts.staleMs ?? 10 * 60_000;
    const pollMs = opts.pollMs ?? 1000;
    const deadline = Date.now() + waitMs;
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
                continue; // released between our mkdir and stat: try again at once
            }
            if (lockOwnerGone(lockDir) || age > staleMs || Date.now() > deadline) {
                log.info(`removing stale lock ${lockDir}`);
                fs.rmSync(lockDir, { recursive: true, force: true });
                continue;
            }
            if (!waiting) {
                waiting = true;
                log.info(`waiting for another window to finish the Python setup (${lockDir})`);
            }
            await new Promise((r) => setTimeout(r, pollMs));
        }
    }
    try {
        return await fn();
    } finally {
        fs.rmSync(lockDir, { recursive: true, force: true });
    }
}
