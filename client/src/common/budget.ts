/** Budget arithmetic shared by the tree, the status bar and their tests (no VS Code imports). */

export type BudgetLevel = 'ok' | 'near' | 'over';

export function budgetLevel(used: number, limit: number, nearShare: number): BudgetLevel {
    if (limit > 0 && used > limit) {
        return 'over';
    }
    if (limit > 0 && used >= nearShare * limit) {
        return 'near';
    }
    return 'ok';
}

export function percent(used: number, limit: number): number {
    return limit > 0 ? Math.round((100 * used) / limit) : 0;
}

export function worst(levels: readonly BudgetLevel[]): BudgetLevel {
    return levels.includes('over') ? 'over' : levels.includes('near') ? 'near' : 'ok';
}

export const FILE_NAMES: Record<string, string> = { memory: 'MEMORY.md', user: 'USER.md' };

export function fileName(target: string): string {
    return FILE_NAMES[target] ?? target;
}

/** The tree label of an entry: its first non-empty line, shortened. */
export function entryLabel(entry: string, max = 80): string {
    const line = entry.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
    return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * The 0-based line where entry `index` starts in the file text. Searches the entry's text first (entries are
 * stored stripped, with \n line ends); falls back to counting `§` delimiter lines.
 */
export function locateEntry(fileText: string, entries: readonly string[], index: number): number {
    const text = fileText.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
    const entry = entries[index];
    if (entry) {
        // Skip past earlier entries so a repeated text finds the right copy.
        let from = 0;
        for (let i = 0; i < index; i++) {
            const at = text.indexOf(entries[i], from);
            if (at >= 0) {
                from = at + entries[i].length;
            }
        }
        let at = text.indexOf(entry, from);
        if (at < 0) {
            at = text.indexOf(entry);
        }
        if (at >= 0) {
            return text.slice(0, at).split('\n').length - 1;
        }
    }
    const lines = text.split('\n');
    let seen = 0;
    for (let i = 0; i < lines.length; i++) {
        if (seen === index && lines[i].trim() !== '' && lines[i].trim() !== '§') {
            return i;
        }
        if (lines[i].trim() === '§') {
            seen++;
        }
    }
    return 0;
}

/** An input box is one line: a multi-line entry is shown with ⏎ marks and turned back on accept. */
export const NEWLINE_MARK = ' ⏎ ';

export function toSingleLine(entry: string): string {
    return entry.split('\n').join(NEWLINE_MARK);
}

export function fromSingleLine(value: string): string {
    return value
        .split(/ ?⏎ ?/)
        .join('\n')
        .trim();
}

/**
 * The one figure a file shows: its unsaved buffer's when the file is open with unsaved edits (the figure the
 * file's diagnostics and code lens show), else the disk's. `unsaved` labels it; `disk` keeps the other one.
 */
export interface ShownFigure {
    used: number;
    limit: number;
    unsaved: boolean;
    /** The figure on disk, when the shown one is the buffer's. */
    disk?: { used: number; limit: number };
}

export function shownFigure(disk: { used: number; limit: number }, buffer?: { used: number; limit: number }): ShownFigure {
    if (!buffer) {
        return { used: disk.used, limit: disk.limit, unsaved: false };
    }
    return { used: buffer.used, limit: buffer.limit, unsaved: true, disk: { used: disk.used, limit: disk.limit } };
}
