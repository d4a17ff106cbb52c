import * as vscode from 'vscode';
import type { RequestClient } from './chat/seams';
import { fileName } from './common/budget';
import { plural } from './common/plural';
import { JournalChange, JournalEntry, MemoryLogResult, Methods, Target } from './protocol';

/**
 * A memory change in words, for the chat's "agent changed memory" notice and its undo note: the journal record
 * the event names (fetched with `myAgent/memory/log`) becomes "added 'Tests run with uv run pytest -q' to
 * MEMORY.md". Entry text is quoted as one bounded line of plain text (no line breaks, no control or bidi
 * characters), and a side the server marks blocked is never quoted, nor is anything from an older server that
 * does not mark them.
 */

/** Longest quote of an entry (code points, the ellipsis included). */
export const QUOTE_MAX = 80;

/** How far back the notice looks for its record: the change is normally the newest one. */
const LOG_WINDOW = 20;
const LOG_MAX = 200; // the journal keeps 200 records

// C0/C1 controls and the bidi controls that could reorder what the user reads; line breaks and tabs become
// spaces first. ZWJ/ZWNJ stay: emoji and Persian need them.
// eslint-disable-next-line no-control-regex
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** One line of plain text, at most `max` code points (never half a surrogate pair), "…" when cut. */
export function oneLine(text: string, max = QUOTE_MAX): string {
    const flat = text.replace(/\s+/g, ' ').replace(INVISIBLE, '').trim();
    const points = Array.from(flat);
    return points.length > max ? `${points.slice(0, max - 1).join('').trimEnd()}…` : flat;
}

/** An entry as a notice quotes it: 'text', or a note saying it is not quoted. */
export function quoteEntry(text: string | null | undefined, blocked: boolean | undefined): string {
    if (blocked !== false || !text) {
        // Unknown (an older server) counts as blocked: only a side the server vouched for is quoted.
        return blocked ? vscode.l10n.t('an entry the safety scanner blocks (not quoted)') : vscode.l10n.t('an entry');
    }
    return vscode.l10n.t("'{0}'", oneLine(text));
}

function describeOne(change: JournalChange, file: string): string {
    if (change.before === null && change.after !== null) {
        return vscode.l10n.t('added {0} to {1}', quoteEntry(change.after, change.afterBlocked), file);
    }
    if (change.after === null && change.before !== null) {
        return vscode.l10n.t('removed {0} from {1}', quoteEntry(change.before, change.beforeBlocked), file);
    }
    return vscode.l10n.t(
        'changed {0} to {1} in {2}',
        quoteEntry(change.before, change.beforeBlocked),
        quoteEntry(change.after, change.afterBlocked),
        file,
    );
}

/** What a record did, in words: "added 'uses uv' to MEMORY.md", "made 3 changes to USER.md". */
export function describeChange(record: JournalEntry): string {
    const file = fileName(record.target);
    if (record.action === 'undo') {
        return vscode.l10n.t('undid a change to {0}', file);
    }
    const changes = record.changes;
    if (changes && changes.length === 1) {
        return describeOne(changes[0], file);
    }
    if (changes && changes.length > 1) {
        const n = changes.length;
        return plural(n, {
            one: vscode.l10n.t('made {0} change to {1}', n, file),
            other: vscode.l10n.t('made {0} changes to {1}', n, file),
        });
    }
    // An older server (no `changes`): the action only, nothing quoted.
    switch (record.action) {
        case 'add':
            return vscode.l10n.t('added an entry to {0}', file);
        case 'remove':
            return vscode.l10n.t('removed an entry from {0}', file);
        case 'replace':
            return vscode.l10n.t('changed an entry in {0}', file);
    }
    return vscode.l10n.t('changed {0}', file);
}

/** A record that changed entries itself (not an undo, nor a `skip` / `gap` marker): what a plain undo reverts. */
export function isPlainChange(record: JournalEntry): boolean {
    return ['add', 'remove', 'replace', 'batch'].includes(record.action);
}

/** The chat's notice for an agent's write. */
export function agentNotice(record: JournalEntry): string {
    return vscode.l10n.t('The agent changed memory: {0}.', describeChange(record));
}

/** The note an undo leaves: "Undid: added 'uses uv' to MEMORY.md". */
export function undoNote(record: JournalEntry): string {
    return vscode.l10n.t('Undid: {0}', describeChange(record));
}

// ---- the journal record, validated ------------------------------------------------------------------------

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const textOrNull = (v: unknown): string | null | undefined => (v === null ? null : typeof v === 'string' ? v : undefined);

function parseChange(raw: unknown): JournalChange | undefined {
    if (!isObj(raw)) {
        return undefined;
    }
    const before = textOrNull(raw.before);
    const after = textOrNull(raw.after);
    if (before === undefined || after === undefined || (before === null && after === null)) {
        return undefined;
    }
    // A flag that is not exactly `false` counts as blocked: quoting needs the server's word that it is safe.
    return { before, after, beforeBlocked: raw.beforeBlocked !== false, afterBlocked: raw.afterBlocked !== false };
}

/** A journal record from `memory/log`, or undefined when it is not one (wrong types, unknown target). */
export function parseJournalEntry(raw: unknown): JournalEntry | undefined {
    if (!isObj(raw) || typeof raw.id !== 'string' || typeof raw.action !== 'string' || typeof raw.author !== 'string') {
        return undefined;
    }
    if (raw.target !== 'memory' && raw.target !== 'user') {
        return undefined;
    }
    const entry: JournalEntry = {
        id: raw.id,
        time: String(raw.time ?? ''),
        action: raw.action,
        target: raw.target as Target,
        author: raw.author,
    };
    if (Array.isArray(raw.changes)) {
        const changes = raw.changes.map(parseChange);
        if (changes.every((c): c is JournalChange => !!c)) {
            entry.changes = changes;
        }
    }
    return entry;
}

/** The records of a `memory/log` answer that are records (newest last). */
export function parseLog(raw: unknown): JournalEntry[] {
    const entries = isObj(raw) && Array.isArray(raw.entries) ? raw.entries : [];
    return entries.map(parseJournalEntry).filter((e): e is JournalEntry => !!e);
}

/** The journal record `journalId` of a folder, from the newest records; undefined when it is not there. */
export async function fetchJournalRecord(
    client: RequestClient,
    folder: string | undefined,
    journalId: string,
): Promise<JournalEntry | undefined> {
    for (const limit of [LOG_WINDOW, LOG_MAX]) {
        const log = parseLog(await client.sendRequest<MemoryLogResult>(Methods.memoryLog, { folder, limit }));
        const found = log.find((e) => e.id === journalId);
        if (found || log.length < limit) {
            return found;
        }
    }
    return undefined;
}
