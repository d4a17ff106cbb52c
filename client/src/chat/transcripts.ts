import type { ApprovalPart, ChatTurn, ToolPart, TurnPart } from '../chatModel';

/**
 * The transcript as the user saw it (approval cards and their outcomes, memory notices, stopped and failed
 * turns), kept per session in workspaceState so a reload brings it back: the server's history has only the
 * messages. On resume the kept turns are matched with the server's by the user's words; what does not match
 * (a session continued elsewhere, or compacted) comes from the server, with the kept cards of its calls.
 */

/** workspaceState key of the Memento fallback: `{[name]: {text, mtime}}`. */
export const TRANSCRIPTS_KEY = 'myAgent.chat.transcripts';

/** How many sessions keep their transcript, and how big one turn's pieces may be. */
export const MAX_SESSIONS = 10;
export const MAX_TURNS = 200;
const MAX_TEXT = 50_000;
const MAX_RESULT = 8_000;
const MAX_DETAIL = 20_000;

export interface SavedTranscript {
    savedAt: number;
    turns: ChatTurn[];
}

export interface Memento {
    get<T>(key: string): T | undefined;
    update(key: string, value: unknown): Thenable<void>;
}

function cut(text: string, max: number): string {
    return text.length <= max ? text : `${text.slice(0, max)}\n…`;
}

function trimPart(part: TurnPart): TurnPart {
    switch (part.kind) {
        case 'text':
            return { ...part, text: cut(part.text, MAX_TEXT) };
        case 'tool': {
            // The clock ends with the window; the result holds what the call did.
            const kept: ToolPart = { kind: 'tool', callId: part.callId, name: part.name, arguments: cut(part.arguments, MAX_RESULT) };
            if (part.result !== undefined) {
                kept.result = cut(part.result, MAX_RESULT);
                kept.ok = part.ok;
            } else if (part.output) {
                kept.output = part.output.slice(-MAX_RESULT); // a stopped command: what it printed
            }
            return kept;
        }
        case 'approval':
            return { ...part, detail: cut(part.detail, MAX_DETAIL) };
        case 'note':
            return { ...part, text: cut(part.text, MAX_RESULT) };
    }
    return part;
}

/** A turn as it is kept: bounded pieces, and nothing still running (a reload ends whatever ran). */
export function settledTurn(turn: ChatTurn): ChatTurn {
    const parts = turn.parts.map((p) => (p.kind === 'approval' && p.status === 'pending' ? { ...p, status: 'cancelled' as const } : p));
    return {
        ...turn,
        user: cut(turn.user, MAX_TEXT),
        parts: parts.map(trimPart),
        status: turn.status === 'pending' ? 'stopped' : turn.status,
    };
}

export function trimForStorage(turns: readonly ChatTurn[]): ChatTurn[] {
    return turns.slice(-MAX_TURNS).map(settledTurn);
}

/** Kept turns whose server turn may be missing: a failed or stopped turn is rolled back by the agent. */
function mayBeAbsent(turn: ChatTurn): boolean {
    return turn.status === 'error' || turn.status === 'stopped';
}

/** The server keeps what went with a message (attached editor text) after the user's words. */
function sameMessage(fromServer: string, typed: string): boolean {
    return fromServer === typed || fromServer.startsWith(`${typed}\n`);
}

function restored(turn: ChatTurn): ChatTurn {
    return { ...turn, restored: true };
}

/** The server's turns with the kept approval cards of their calls (matched by call id). */
function withCards(fromServer: readonly ChatTurn[], kept: readonly ChatTurn[]): ChatTurn[] {
    const cards = new Map<string, ApprovalPart>();
    for (const t of kept) {
        for (const p of t.parts) {
            if (p.kind === 'approval' && !p.reportOnly) {
                cards.set(p.callId, p);
            }
        }
    }
    return fromServer.map((t) => {
        const extra = t.parts.flatMap((p) => (p.kind === 'tool' && cards.has(p.callId) ? [cards.get(p.callId) as ApprovalPart] : []));
        return extra.length ? { ...t, parts: [...t.parts, ...extra] } : t;
    });
}

/**
 * The transcript to show for a resumed session: the kept turns where they match the server's history (same
 * user message, in order; a kept failed or stopped turn may be missing there), then the server's newer turns;
 * when they diverge, the server's turns with the kept cards.
 */
export function mergeRestored(fromServer: readonly ChatTurn[], kept: readonly ChatTurn[] | undefined): ChatTurn[] {
    if (!kept?.length) {
        return [...fromServer];
    }
    const out: ChatTurn[] = [];
    let i = 0;
    for (const turn of kept) {
        if (i < fromServer.length && sameMessage(fromServer[i].user, turn.user)) {
            out.push(restored(settledTurn(turn)));
            i += 1;
        } else if (mayBeAbsent(turn)) {
            out.push(restored(settledTurn(turn)));
        } else {
            return withCards(fromServer, kept);
        }
    }
    return [...out, ...fromServer.slice(i)];
}

/** Where the kept transcripts live: one text per session (files in the extension's workspace storage). */
export interface TranscriptFiles {
    read(name: string): Promise<string | undefined>;
    write(name: string, text: string): Promise<void>;
    remove(name: string): Promise<void>;
    /** Every kept name with when it was written (ms), any order. */
    list(): Promise<{ name: string; mtime: number }[]>;
}

/** Session ids become file names: only plain ids are kept (anything else is not stored). */
const SAFE_ID = /^[A-Za-z0-9_-]{1,200}$/;

/**
 * The kept transcripts, newest sessions first, at most MAX_SESSIONS. Writes run one at a time in order (a
 * later save of a session never lands before an earlier one); a transcript that cannot be read is ignored.
 */
export class TranscriptStore {
    private chain: Promise<void> = Promise.resolve();

    constructor(private readonly files: TranscriptFiles) {}

    async get(sessionId: string): Promise<ChatTurn[] | undefined> {
        if (!SAFE_ID.test(sessionId)) {
            return undefined;
        }
        await this.chain;
        try {
            const text = await this.files.read(`${sessionId}.json`);
            const saved = text ? (JSON.parse(text) as Partial<SavedTranscript>) : undefined;
            return saved && Array.isArray(saved.turns) ? saved.turns : undefined;
        } catch {
            return undefined;
        }
    }

    save(sessionId: string, turns: readonly ChatTurn[], now = Date.now()): Promise<void> {
        if (!SAFE_ID.test(sessionId)) {
            return Promise.resolve();
        }
        const text = JSON.stringify({ savedAt: now, turns: trimForStorage(turns) } satisfies SavedTranscript);
        return this.queue(async () => {
            await this.files.write(`${sessionId}.json`, text);
            const kept = (await this.files.list()).filter((f) => f.name.endsWith('.json')).sort((a, b) => b.mtime - a.mtime);
            for (const old of kept.slice(MAX_SESSIONS)) {
                await this.files.remove(old.name);
            }
        });
    }

    /** Resolves once every write queued so far is done. */
    idle(): Promise<void> {
        return this.chain;
    }

    forget(sessionId: string): Promise<void> {
        return SAFE_ID.test(sessionId) ? this.queue(() => this.files.remove(`${sessionId}.json`)) : Promise.resolve();
    }

    private queue(work: () => Promise<void>): Promise<void> {
        const next = this.chain.then(work).catch(() => undefined); // kept transcripts are a convenience: never an error
        this.chain = next;
        return next;
    }
}

/** The same in a Memento (no workspace storage folder: an empty window; and the unit tests). */
export function mementoFiles(memento: Memento): TranscriptFiles {
    type Stored = Record<string, { text: string; mtime: number }>;
    const all = (): Stored => {
        const value = memento.get<unknown>(TRANSCRIPTS_KEY);
        return value && typeof value === 'object' && !Array.isArray(value) ? { ...(value as Stored) } : {};
    };
    return {
        read: async (name) => all()[name]?.text,
        write: async (name, text) => {
            const next = all();
            next[name] = { text, mtime: Date.now() };
            await memento.update(TRANSCRIPTS_KEY, next);
        },
        remove: async (name) => {
            const next = all();
            if (name in next) {
                delete next[name];
                await memento.update(TRANSCRIPTS_KEY, next);
            }
        },
        list: async () => Object.entries(all()).map(([name, v]) => ({ name, mtime: v.mtime ?? 0 })),
    };
}
