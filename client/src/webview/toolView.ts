/**
 * What a tool call did, in one line: "Read src/app.py", "Searched 'def volume_discount': 1 match", "Ran
 * pytest -q: exit 1", and a status that says what happened (done, failed, denied, stopped, timed out). Pure:
 * it reads the call's arguments and the tool's result text (docs/coding-tools.md fixes their shapes), and
 * the approval card of the same call when there is one.
 */
import type { ApprovalPart, ToolPart, TurnStatus } from '../chatModel';
import { escapeHtml, fmt, UiStrings } from './strings';

export type ToolState = 'waiting' | 'running' | 'done' | 'failed' | 'denied' | 'stopped' | 'timedOut';

/** Commands and paths longer than this are cut in a summary (the card or the details hold them whole). */
const MAX_SUBJECT = 80;

// The tool layer's refusal texts (coding_tools/files.py `refusal`, running.py): a result without a card
// (a restored session) still says what happened.
const DECLINED = /^\s*(?:Error:\s*)?(?:The user declined\b|.{1,200}? was not approved\b)/;
const CANCELLED = /^\s*(?:Error:\s*)?(?:The user cancelled the turn|The turn was cancelled)\b/;
const TIMED_OUT = /^\s*(?:Error:\s*)?The command did not finish within\b/;

export function toolState(tool: ToolPart, approval: ApprovalPart | undefined, turn: TurnStatus): ToolState {
    if (approval?.status === 'denied') {
        return 'denied';
    }
    if (approval?.status === 'cancelled') {
        return 'stopped';
    }
    if (tool.result === undefined) {
        if (turn !== 'pending') {
            return 'stopped'; // the turn ended (Stop, an error, a reload) before the call answered
        }
        return approval?.status === 'pending' ? 'waiting' : 'running';
    }
    if (tool.ok !== false) {
        return 'done';
    }
    if (TIMED_OUT.test(tool.result)) {
        return 'timedOut';
    }
    if (CANCELLED.test(tool.result)) {
        return 'stopped';
    }
    if (DECLINED.test(tool.result)) {
        return 'denied';
    }
    return 'failed';
}

export function stateText(state: ToolState, s: UiStrings): string {
    switch (state) {
        case 'waiting':
            return s.toolWaiting;
        case 'running':
            return s.toolRunning;
        case 'done':
            return s.toolOk;
        case 'failed':
            return s.toolFailed;
        case 'denied':
            return s.toolDenied;
        case 'stopped':
            return s.toolStopped;
        case 'timedOut':
            return s.toolTimedOut;
    }
}

/** The call's arguments (a JSON object string); {} when they are not one. */
export function toolArgs(tool: ToolPart): Record<string, unknown> {
    try {
        const value: unknown = JSON.parse(tool.arguments);
        return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
    } catch {
        return {};
    }
}

function text(v: unknown): string | undefined {
    return typeof v === 'string' && v.trim() !== '' ? v : undefined;
}

function shortened(value: string): string {
    const one = value.split(/\s+/).join(' ').trim();
    return one.length <= MAX_SUBJECT ? one : `${one.slice(0, MAX_SUBJECT - 1)}…`;
}

const code = (value: string): string => `<code>${escapeHtml(shortened(value))}</code>`;
const quoted = (value: string): string => `<code>'${escapeHtml(shortened(value))}'</code>`;

/** How a command ended, read from run_command's result (`$ cmd`, `exit code 1 · 3.2 s`, stdout:, stderr:). */
export interface CommandResult {
    exit?: number;
    signal?: string;
    seconds?: number;
    /** stdout and stderr as the tool reported them; '' when both were empty. */
    output: string;
}

const STATUS_LINE = /^(?:exit code (-?\d+)|killed by signal (\w+)|stopped \((?:timeout|cancelled)\)) · ([\d.]+) s$/;

export function parseCommandResult(content: string): CommandResult {
    const lines = content.split('\n');
    const at = lines.findIndex((l, i) => l.startsWith('$ ') && STATUS_LINE.test(lines[i + 1] ?? ''));
    if (at < 0) {
        return { output: content };
    }
    const m = STATUS_LINE.exec(lines[at + 1]) as RegExpExecArray;
    return {
        exit: m[1] !== undefined ? Number(m[1]) : undefined,
        signal: m[2],
        seconds: Number(m[3]),
        output: streams(lines.slice(at + 2)),
    };
}

/**
 * The output as a terminal would show it: notes, stdout, then stderr (labelled only when both have text).
 * The tool writes `stdout:` / `stdout: (empty)`, then `stderr:` / `stderr: (empty)` (running.py `describe`).
 */
function streams(lines: string[]): string {
    const out = lines.findIndex((l) => l === 'stdout:' || l === 'stdout: (empty)');
    let err = -1;
    for (let i = lines.length - 1; i > out; i -= 1) {
        if (lines[i] === 'stderr:' || lines[i] === 'stderr: (empty)') {
            err = i;
            break;
        }
    }
    if (out < 0 || err < 0) {
        return lines.join('\n');
    }
    const notes = lines.slice(0, out);
    const stdout = lines[out] === 'stdout:' ? lines.slice(out + 1, err) : [];
    const stderr = lines[err] === 'stderr:' ? lines.slice(err + 1) : [];
    const both = stdout.length > 0 && stderr.length > 0;
    return [...notes, ...stdout, ...(both ? ['stderr:'] : []), ...stderr].join('\n');
}

function count(n: number, one: string, many: string, none?: string): string {
    if (n === 0 && none) {
        return none;
    }
    return n === 1 ? one : fmt(many, n.toLocaleString('en-US'));
}

/** "12 files" from list_files' first line ("12 files under src:", "No files under src"). */
function listedCount(result: string, s: UiStrings): string | undefined {
    if (/^No files under\b/.test(result)) {
        return fmt(s.filesMany, '0');
    }
    const m = /^(more than )?([\d,]+) files? under\b/.exec(result);
    if (!m) {
        return undefined;
    }
    const n = Number(m[2].replace(/,/g, ''));
    return (m[1] ? '>' : '') + count(n, s.filesOne, s.filesMany);
}

/** "1 match" from search_text's first line ("1 matching line in 1 file for ...", "No matches for ..."). */
function matchCount(result: string, s: UiStrings): string | undefined {
    if (/^No matches for\b/.test(result)) {
        return s.matchesNone;
    }
    const m = /^(more than )?([\d,]+) matching lines?\b/.exec(result);
    if (!m) {
        return undefined;
    }
    const n = Number(m[2].replace(/,/g, ''));
    return (m[1] ? '>' : '') + count(n, s.matchesOne, s.matchesMany, s.matchesNone);
}

function memoryFile(args: Record<string, unknown>): string {
    return args.target === 'user' ? 'USER.md' : 'MEMORY.md';
}

/** The one-line summary (HTML: subjects as code, everything escaped). */
export function toolSummary(tool: ToolPart, state: ToolState, s: UiStrings): string {
    const args = toolArgs(tool);
    const done = state === 'done' && tool.result !== undefined;
    const result = tool.result ?? '';
    const path = text(args.path);
    switch (tool.name) {
        case 'read_file': {
            const subject = code(path ?? '?');
            const from = typeof args.start_line === 'number' ? args.start_line : undefined;
            const to = typeof args.end_line === 'number' ? args.end_line : undefined;
            return from !== undefined || to !== undefined
                ? fmt(escapeHtml(s.sumReadLines), subject, String(from ?? 1), to !== undefined ? String(to) : '…')
                : fmt(escapeHtml(s.sumRead), subject);
        }
        case 'list_files': {
            const subject = code(path ?? s.workspaceRoot) + (text(args.glob) ? ` ${code(String(args.glob))}` : '');
            const n = done ? listedCount(result, s) : undefined;
            return n ? fmt(escapeHtml(s.sumListCount), subject, escapeHtml(n)) : fmt(escapeHtml(s.sumList), subject);
        }
        case 'search_text': {
            const subject = quoted(text(args.query) ?? '');
            const n = done ? matchCount(result, s) : undefined;
            return n ? fmt(escapeHtml(s.sumSearchCount), subject, escapeHtml(n)) : fmt(escapeHtml(s.sumSearch), subject);
        }
        case 'edit_file':
            return fmt(escapeHtml(done ? s.sumEdited : s.sumEdit), code(path ?? '?'));
        case 'write_file':
            return fmt(escapeHtml(done ? s.sumWrote : s.sumWrite), code(path ?? '?'));
        case 'run_command': {
            const subject = code(text(args.command) ?? '?');
            if (state === 'running') {
                return fmt(escapeHtml(s.sumRunning), subject);
            }
            if (!done) {
                return fmt(escapeHtml(s.sumRun), subject);
            }
            const r = parseCommandResult(result);
            if (r.exit !== undefined) {
                return fmt(escapeHtml(s.sumRanExit), subject, String(r.exit));
            }
            return r.signal ? fmt(escapeHtml(s.sumRanSignal), subject, escapeHtml(r.signal)) : fmt(escapeHtml(s.sumRan), subject);
        }
        case 'memory': {
            const file = code(memoryFile(args));
            if (!done) {
                return fmt(escapeHtml(s.sumMemory), file);
            }
            if (Array.isArray(args.operations)) {
                return fmt(escapeHtml(s.sumMemoryBatch), file, String(args.operations.length));
            }
            switch (args.action) {
                case 'add':
                    return fmt(escapeHtml(s.sumMemoryAdd), file);
                case 'replace':
                    return fmt(escapeHtml(s.sumMemoryReplace), file);
                case 'remove':
                    return fmt(escapeHtml(s.sumMemoryRemove), file);
            }
            return fmt(escapeHtml(s.sumMemory), file);
        }
        case 'memory_search':
            return fmt(escapeHtml(s.sumMemorySearch), quoted(text(args.query) ?? ''));
    }
    return fmt(escapeHtml(s.sumTool), code(tool.name || '?'));
}

/** Tools whose summary names their subject: their raw arguments need not be shown. */
export function summarizes(name: string): boolean {
    return ['read_file', 'list_files', 'search_text', 'edit_file', 'write_file', 'run_command', 'memory', 'memory_search'].includes(name);
}

/** The lines an edit changed in the new text (1-based), from its unified diff; undefined without hunks. */
export function changedLines(diff: string): { start: number; end: number } | undefined {
    let next = 0; // the new-side number of the next line of the current hunk
    let inHunk = false;
    let start: number | undefined;
    let end: number | undefined;
    const mark = (line: number): void => {
        const at = Math.max(1, line);
        start = start === undefined ? at : Math.min(start, at);
        end = end === undefined ? at : Math.max(end, at);
    };
    for (const line of diff.split('\n')) {
        const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
        if (hunk) {
            inHunk = true;
            next = Number(hunk[1]);
            if (hunk[2] === '0') {
                next += 1; // a pure deletion names the line before it
            }
            continue;
        }
        if (!inHunk) {
            continue;
        }
        if (line.startsWith('+')) {
            mark(next);
            next += 1;
        } else if (line.startsWith('-')) {
            mark(next);
        } else if (line.startsWith(' ') || line === '') {
            next += 1;
        }
    }
    return start === undefined || end === undefined ? undefined : { start, end };
}
