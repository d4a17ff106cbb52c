import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import type { VenvStamp } from './pythonPlan';

/** The venv's stamp file and the wheelhouse fingerprint: the files the reuse decision is made from. */

export const STAMP_FILE = 'my-agent-stamp.json';

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

export function readStamp(venvDir: string): VenvStamp | undefined {
    try {
        const v = JSON.parse(fs.readFileSync(path.join(venvDir, STAMP_FILE), 'utf8')) as VenvStamp;
        return typeof v.extensionVersion === 'string' ? v : undefined;
    } catch {
        return undefined;
    }
}

/** Written last, after a successful install: a venv without a stamp is never reused. */
export function writeStamp(venvDir: string, stamp: VenvStamp): void {
    fs.writeFileSync(path.join(venvDir, STAMP_FILE), JSON.stringify(stamp, null, 2));
}
