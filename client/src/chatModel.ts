/**
 * The chat transcript as data, and the reducer that folds server events into it. Pure (no VS Code, no DOM):
 * the extension host owns the state and posts it to the webview, which only renders it.
 */
import type { ChatEvent, SessionUsage } from './protocol';

export interface TextPart {
    kind: 'text';
    text: string;
}

export interface ToolPart {
    kind: 'tool';
    callId: string;
    name: string;
    arguments: string;
    result?: string;
    ok?: boolean;
}

export interface MemoryNoticePart {
    kind: 'memory';
    target: string;
    action: string;
    journalId?: string;
    undone?: boolean;
    undoMessage?: string;
}

export type TurnPart = TextPart | ToolPart | MemoryNoticePart;

export type TurnStatus = 'pending' | 'done' | 'stopped' | 'error';

export interface ChatTurn {
    id: number;
    user: string;
    parts: TurnPart[];
    status: TurnStatus;
    error?: string;
}

export interface ChatState {
    sessionId?: string;
    folderName?: string;
    memory?: boolean;
    turns: ChatTurn[];
    usage?: SessionUsage;
    /** A line shown under the header (e.g. "the server restarted"). */
    notice?: string;
    nextId: number;
}

export type ChatAction =
    | { type: 'sessionStarted'; sessionId: string; folderName: string; memory: boolean }
    | { type: 'sessionLost'; notice: string }
    | { type: 'userSent'; text: string }
    | { type: 'event'; event: ChatEvent }
    | { type: 'replied'; reply: string; usage?: SessionUsage }
    | { type: 'stopped' }
    | { type: 'failed'; message: string }
    | { type: 'undone'; journalId?: string; message: string }
    | { type: 'notice'; notice?: string };

export function initialState(): ChatState {
    return { turns: [], nextId: 1 };
}

export function isBusy(state: ChatState): boolean {
    const last = state.turns[state.turns.length - 1];
    return last?.status === 'pending';
}

function replaceLast(state: ChatState, f: (t: ChatTurn) => ChatTurn): ChatState {
    const last = state.turns[state.turns.length - 1];
    if (!last) {
        return state;
    }
    return { ...state, turns: [...state.turns.slice(0, -1), f(last)] };
}

function hasText(turn: ChatTurn): boolean {
    return turn.parts.some((p) => p.kind === 'text' && p.text.trim() !== '');
}

function appendText(parts: TurnPart[], text: string): TurnPart[] {
    const last = parts[parts.length - 1];
    if (last && last.kind === 'text') {
        return [...parts.slice(0, -1), { kind: 'text', text: last.text + text }];
    }
    return [...parts, { kind: 'text', text }];
}

/** The final reply when nothing was streamed (a server that does not send deltas). */
function settle(turn: ChatTurn, reply: string | undefined): ChatTurn {
    const parts = !hasText(turn) && reply ? appendText(turn.parts, reply) : turn.parts;
    return { ...turn, parts, status: turn.status === 'pending' ? 'done' : turn.status };
}

function applyEvent(state: ChatState, event: ChatEvent): ChatState {
    if (state.sessionId && event.sessionId !== state.sessionId) {
        return state;
    }
    const pending = (f: (t: ChatTurn) => ChatTurn): ChatState =>
        replaceLast(state, (t) => (t.status === 'pending' ? f(t) : t));
    switch (event.kind) {
        case 'delta':
            return pending((t) => ({ ...t, parts: appendText(t.parts, event.text) }));
        case 'tool_call':
            return pending((t) => ({
                ...t,
                parts: [...t.parts, { kind: 'tool', callId: event.callId, name: event.name, arguments: event.arguments }],
            }));
        case 'tool_result':
            return pending((t) => ({
                ...t,
                parts: t.parts.map((p) =>
                    p.kind === 'tool' && p.callId === event.callId ? { ...p, result: event.content, ok: event.ok } : p,
                ),
            }));
        case 'memory_changed':
            // Shown even after a stop: the write happened and the user may want to undo it.
            return replaceLast(state, (t) => ({
                ...t,
                parts: [
                    ...t.parts,
                    { kind: 'memory', target: event.target, action: event.action, journalId: event.journalId },
                ],
            }));
        case 'usage':
            return state;
        case 'done': {
            const next = pending((t) => settle(t, event.reply));
            return event.usage ? { ...next, usage: event.usage } : next;
        }
        case 'error':
            return pending((t) => ({ ...t, status: 'error', error: event.message }));
    }
    return state;
}

export function reduce(state: ChatState, action: ChatAction): ChatState {
    switch (action.type) {
        case 'sessionStarted':
            return {
                turns: [],
                nextId: state.nextId,
                sessionId: action.sessionId,
                folderName: action.folderName,
                memory: action.memory,
            };
        case 'sessionLost': {
            const closed = replaceLast(state, (t) =>
                t.status === 'pending' ? { ...t, status: 'error', error: action.notice } : t,
            );
            return { ...closed, sessionId: undefined, notice: action.notice, usage: undefined };
        }
        case 'userSent':
            return {
                ...state,
                notice: undefined,
                nextId: state.nextId + 1,
                turns: [...state.turns, { id: state.nextId, user: action.text, parts: [], status: 'pending' }],
            };
        case 'event':
            return applyEvent(state, action.event);
        case 'replied': {
            const next = replaceLast(state, (t) => settle(t, action.reply));
            return action.usage ? { ...next, usage: action.usage } : next;
        }
        case 'stopped':
            return replaceLast(state, (t) => (t.status === 'pending' ? { ...t, status: 'stopped' } : t));
        case 'failed':
            return replaceLast(state, (t) =>
                t.status === 'pending' || t.status === 'done'
                    ? { ...t, status: 'error', error: t.error ?? action.message }
                    : t,
            );
        case 'undone':
            return {
                ...state,
                turns: state.turns.map((t) => ({
                    ...t,
                    parts: t.parts.map((p) =>
                        p.kind === 'memory' && p.journalId === action.journalId && !p.undone
                            ? { ...p, undone: true, undoMessage: action.message }
                            : p,
                    ),
                })),
            };
        case 'notice':
            return { ...state, notice: action.notice };
    }
    return state;
}

/** "87%" for the header; undefined until the session has sent a request. */
export function cacheHitText(usage: SessionUsage | undefined): string | undefined {
    if (!usage || !usage.requests || !usage.promptTokens) {
        return undefined;
    }
    const rate = Number.isFinite(usage.cacheHitRate) ? usage.cacheHitRate : usage.cachedTokens / usage.promptTokens;
    return `${Math.round(rate * 100)}%`;
}
