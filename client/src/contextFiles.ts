import * as path from 'path';
import type { ContextFileInfo } from './protocol';

/**
 * The context files (AGENTS.md, CLAUDE.md, ...) that the current chat's system prompt froze, as
 * `myAgent/chat/snapshot` reports them: validated, and resolved to a file of the session's folder so a row
 * can open it. Pure (paths only; no VS Code), unit-tested.
 */

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** More than the server ever freezes; a longer list is cut (each row is a tree item). */
export const MAX_CONTEXT_FILES = 50;

export function parseContextFiles(raw: unknown): ContextFileInfo[] {
    if (!Array.isArray(raw)) {
        return [];
    }
    const out: ContextFileInfo[] = [];
    for (const f of raw.slice(0, MAX_CONTEXT_FILES)) {
        if (!isObj(f) || typeof f.name !== 'string' || f.name === '' || typeof f.path !== 'string') {
            continue;
        }
        out.push({
            name: f.name.slice(0, 200),
            path: f.path,
            chars: typeof f.chars === 'number' && Number.isFinite(f.chars) && f.chars >= 0 ? Math.floor(f.chars) : 0,
            cut: f.cut === true,
            blocked: f.blocked === true,
        });
    }
    return out;
}

/**
 * The file on disk for a context file of `folderPath`: its path taken as absolute or relative to the folder,
 * and only when it stays inside the folder (a row never opens a file elsewhere).
 */
export function contextFilePath(file: ContextFileInfo, folderPath: string): string | undefined {
    const root = path.resolve(folderPath);
    const raw = file.path || file.name;
    const full = path.resolve(root, raw);
    const rel = path.relative(root, full);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) {
        return undefined;
    }
    return full;
}
