/**
 * What a call of the memory tool asks for, read the way the server reads it (server/my_agent_core/memory/
 * tool.py: the top-level edit, then any `operations`; `new_text` or `content` stand in for `new_content` on
 * replace), so the confirmation a user sees describes the write that will happen. Pure: no VS Code imports.
 */
import type { EditAction, Target } from '../protocol';

/** The tool's id in `contributes.languageModelTools` and `vscode.lm.registerTool`. */
export const MEMORY_TOOL_ID = 'myAgent_memory';

/** How much of one text a confirmation quotes; the rest is summarized (a call may carry a huge text). */
export const MAX_QUOTE = 1500;

/** How many edits of an `operations` batch a confirmation lists one by one. */
export const MAX_LISTED = 20;

export interface PlannedEdit {
    /** `undefined`: not add / replace / remove (the server refuses the call). */
    action?: EditAction;
    content?: string;
    oldText?: string;
    newContent?: string;
}

export interface PlannedCall {
    /** `undefined`: not "memory" or "user" exactly (the server refuses the call). */
    target?: Target;
    file?: 'MEMORY.md' | 'USER.md';
    edits: PlannedEdit[];
    /** Why the server will refuse it, when that is certain from its shape alone. */
    malformed?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function edit(raw: Obj): PlannedEdit {
    const a = raw.action;
    const action = a === 'add' || a === 'replace' || a === 'remove' ? a : undefined;
    const out: PlannedEdit = { action };
    if (action === 'add') {
        out.content = text(raw.content);
    } else if (action === 'replace') {
        out.oldText = text(raw.old_text);
        out.newContent = text(raw.new_content) ?? text(raw.new_text) ?? text(raw.content);
    } else if (action === 'remove') {
        out.oldText = text(raw.old_text);
    }
    return out;
}

/** Reads a call's input (anything a model may send) into the edits it asks for. */
export function planCall(input: unknown): PlannedCall {
    if (!isObj(input)) {
        return { edits: [], malformed: 'the input is not a JSON object' };
    }
    const t = input.target;
    const target: Target | undefined = t === 'memory' || t === 'user' ? t : undefined;
    const plan: PlannedCall = { target, file: target === 'user' ? 'USER.md' : target === 'memory' ? 'MEMORY.md' : undefined, edits: [] };
    const extra = input.operations;
    const topHasFields = ['content', 'old_text', 'new_content', 'new_text'].some((k) => input[k] !== undefined && input[k] !== null);
    if (extra === undefined || extra === null || topHasFields) {
        plan.edits.push(edit(input));
    }
    if (Array.isArray(extra)) {
        for (const item of extra) {
            plan.edits.push(isObj(item) ? edit(item) : {});
        }
    } else if (extra !== undefined && extra !== null) {
        plan.malformed = '`operations` is not a list';
    }
    if (!target) {
        plan.malformed ??= '`target` must be "memory" or "user"';
    } else if (plan.edits.some((e) => !e.action)) {
        plan.malformed ??= '`action` must be "add", "replace" or "remove"';
    }
    return plan;
}

/** A code fence longer than any run of backticks in `s`, so quoted text can never close it. */
export function fenceFor(s: string): string {
    let longest = 0;
    for (const m of s.matchAll(/`+/g)) {
        longest = Math.max(longest, m[0].length);
    }
    return '`'.repeat(Math.max(3, longest + 1));
}

/** `s` cut to `max` characters (never inside a surrogate pair), and how many were left out. */
export function cutText(s: string, max = MAX_QUOTE): { shown: string; omitted: number } {
    if (s.length <= max) {
        return { shown: s, omitted: 0 };
    }
    let end = max;
    const code = s.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) {
        end -= 1;
    }
    return { shown: s.slice(0, end), omitted: s.length - end };
}
