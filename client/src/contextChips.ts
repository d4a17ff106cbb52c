/**
 * Editor context as chips, pure: a file or a selection becomes a chip with a readable label
 * (`src/app.ts:12-20`), a stable id (to skip duplicates and to remove it), and the wire shape
 * `{uri, range?}` of `myAgent/chat/send` (LSP positions, 0-based).
 */
import type { ContextChip } from './chatModel';
import type { ContextRef, Range } from './protocol';

export interface SelectionLike {
    start: { line: number; character: number };
    end: { line: number; character: number };
    isEmpty: boolean;
}

/** 1-based lines for people; a selection ending at column 0 of a line does not include that line. */
export function chipLabel(relPath: string, range?: Range): string {
    if (!range) {
        return relPath;
    }
    const first = range.start.line + 1;
    const last = range.end.character === 0 && range.end.line > range.start.line ? range.end.line : range.end.line + 1;
    return last > first ? `${relPath}:${first}-${last}` : `${relPath}:${first}`;
}

export function chipId(uri: string, range?: Range): string {
    return range
        ? `${uri}#${range.start.line}:${range.start.character}-${range.end.line}:${range.end.character}`
        : uri;
}

/** The chips for an editor: one per non-empty selection, or the whole file when nothing is selected. */
export function chipsFromSelections(uri: string, relPath: string, selections: readonly SelectionLike[]): ContextChip[] {
    const ranges: Range[] = selections
        .filter((s) => !s.isEmpty)
        .map((s) => ({
            start: { line: s.start.line, character: s.start.character },
            end: { line: s.end.line, character: s.end.character },
        }));
    if (!ranges.length) {
        return [{ id: chipId(uri), uri, label: chipLabel(relPath) }];
    }
    return ranges.map((range) => ({ id: chipId(uri, range), uri, label: chipLabel(relPath, range), range }));
}

export function toContextRefs(chips: readonly ContextChip[]): ContextRef[] {
    return chips.map((c) => (c.range ? { uri: c.uri, range: c.range } : { uri: c.uri }));
}
