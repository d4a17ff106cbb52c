import * as crypto from 'crypto';
import { promises as fs } from 'fs';
import * as path from 'path';
import type { TranscriptFiles } from './transcripts';

/**
 * Kept transcripts as files in the extension's workspace storage folder (`<storageUri>/transcripts`),
 * written by the extension host itself, so a write is done when it returns (workspaceState, routed through
 * the window, could be lost by a window reload right after a turn). A write goes to a private temporary file
 * first and is renamed over the old one, so a crash never leaves half a transcript; temporary files a
 * killed extension host left behind are removed by the next save.
 */

/** A kept transcript is bounded when written; anything larger on disk is not ours to read. */
const MAX_FILE = 20 * 1024 * 1024;

export function storageFiles(storageDir: string): TranscriptFiles {
    const dir = path.join(storageDir, 'transcripts');
    const file = (name: string): string => path.join(dir, path.basename(name));
    return {
        async read(name) {
            try {
                const info = await fs.lstat(file(name));
                return info.isFile() && info.size <= MAX_FILE ? await fs.readFile(file(name), 'utf8') : undefined;
            } catch {
                return undefined;
            }
        },
        async write(name, text) {
            await fs.mkdir(dir, { recursive: true, mode: 0o700 });
            const tmp = file(`.${name}.${crypto.randomBytes(6).toString('hex')}.tmp`);
            // No fsync: a kept transcript is a convenience, and on a busy disk an fsync took seconds, long
            // enough for a window reload to end the extension host before the rename.
            await fs.writeFile(tmp, text, { encoding: 'utf8', flag: 'wx', mode: 0o600 });
            try {
                await fs.rename(tmp, file(name));
            } catch (e) {
                await fs.unlink(tmp).catch(() => undefined);
                throw e;
            }
        },
        async remove(name) {
            await fs.unlink(file(name)).catch(() => undefined);
        },
        async list() {
            let names: string[];
            try {
                names = await fs.readdir(dir);
            } catch {
                return [];
            }
            for (const stale of names.filter((n) => n.startsWith('.') && n.endsWith('.tmp'))) {
                const at = (await fs.lstat(file(stale)).catch(() => undefined))?.mtimeMs ?? Date.now();
                if (Date.now() - at > 60_000) {
                    await fs.unlink(file(stale)).catch(() => undefined); // a write a killed host never finished
                }
            }
            const out: { name: string; mtime: number }[] = [];
            for (const name of names.filter((n) => !n.startsWith('.'))) {
                try {
                    out.push({ name, mtime: (await fs.lstat(file(name))).mtimeMs });
                } catch {
                    // removed meanwhile
                }
            }
            return out;
        },
    };
}
