/**
 * The chat transcript as data, and the reducer that folds server events and user actions into it. Pure (no
 * VS Code, no DOM): the extension host owns the state and posts it to the webview, which only renders it.
 */
import type {
    ApprovalKind,
    ApprovalReason,
    ApproveSource,
    CacheDrop,
    ChatEvent,
    CompactReason,
    Range,
    RequestUsage,
    SessionUsage,
} from './protocol';
import { classifyFailure, FailureKind } from './chat/failures';

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
    /** A running command's output so far (its latest part), from `command_output` events. */
    output?: string;
    /** When the call started to run (ms since the epoch; a command: when it was approved). */
    startedAt?: number;
}

export interface MemoryNoticePart {
    kind: 'memory';
    target: string;
    action: string;
    journalId?: string;
    /** The change in words, quoting the entry (memoryChange.ts), once its journal record is fetched. */
    summary?: string;
    undone?: boolean;
    undoMessage?: string;
}

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'cancelled';

/** A request for the user's approval (a card with Approve / Deny), or a decision the server reported. */
export interface ApprovalPart {
    kind: 'approval';
    callId: string;
    approvalKind?: ApprovalKind;
    title: string;
    /** A unified diff (edit, memory) or the command line (command); '' for a decision without a card. */
    detail: string;
    /** The file an edit or memory write changes, workspace-relative when possible. */
    path?: string;
    cwd?: string;
    /** An "Open Diff" button is offered (the request carried the file and its proposed text). */
    canDiff: boolean;
    /** A memory write's sources, as the server listed them (validated); absent: only `detail` names them. */
    sources?: ApproveSource[];
    status: ApprovalStatus;
    reason?: ApprovalReason;
    /** The server asked nothing: it reported a decision (e.g. pre-approved by a setting). */
    reportOnly?: boolean;
}

/** Where the server compacted the session: older turns were replaced by a summary. */
export interface CompactedPart {
    kind: 'compacted';
    reason: CompactReason;
    before: number;
    after: number;
}

/** A request read fewer tokens from the prompt cache than expected, and why. */
export interface CacheDropPart {
    kind: 'cacheDrop';
    drop: CacheDrop;
}

/** A resumed history message that is neither the user's nor the agent's (e.g. a compaction summary). */
export interface NotePart {
    kind: 'note';
    role: string;
    text: string;
}

/** The server appended recalled memory (the memory provider) to this turn's user message. */
export interface RecallPart {
    kind: 'recall';
    chars: number;
    items: number;
}

/** A memory provider broke; the session goes on without it (shown once per provider and session). */
export interface ProviderErrorPart {
    kind: 'providerError';
    provider: string;
    message: string;
}

export type TurnPart =
    | TextPart
    | ToolPart
    | MemoryNoticePart
    | ApprovalPart
    | CompactedPart
    | CacheDropPart
    | NotePart
    | RecallPart
    | ProviderErrorPart;

export type TurnStatus = 'pending' | 'done' | 'stopped' | 'error';

/** Editor context attached to a message: a file, or a selection of it (LSP range, 0-based). */
export interface ContextChip {
    /** Stable key (uri + range) used to remove a chip and to skip duplicates. */
    id: string;
    uri: string;
    label: string;
    range?: Range;
}

export interface ChatTurn {
    id: number;
    user: string;
    parts: TurnPart[];
    status: TurnStatus;
    error?: string;
    /** What kind of failure `error` is (it decides the buttons the error offers). */
    errorKind?: FailureKind;
    /** What was attached to the user's message. */
    context?: ContextChip[];
    /** Rebuilt from a persisted session (`chat/resume`), not lived in this window. */
    restored?: boolean;
}

/** The prompt-cache meter: the server's session totals plus the requests reported since them. */
export interface CacheMeter {
    base?: SessionUsage;
    live: RequestUsage[];
    lastDrop?: CacheDrop;
}

/** One row of the past-sessions list, already formatted for display by the host. */
export interface HistoryRow {
    sessionId: string;
    title: string;
    when: string;
    folderName: string;
    messages: number;
    /** The session the chat shows now. */
    current: boolean;
}

export interface HistoryPanel {
    open: boolean;
    loading: boolean;
    rows: HistoryRow[];
    error?: string;
}

/** What the chat needs before the first message: a model, an endpoint, a key, and the workspace's trust. */
export interface SetupInfo {
    /** The model the server will use ('' = none: the chat shows its setup state). */
    model: string;
    /** Where the model comes from: the `myAgent.model` setting or the MY_AGENT_MODEL variable. */
    modelFrom: 'setting' | 'env' | '';
    baseUrl: string;
    baseUrlFrom: 'setting' | 'env' | '';
    /** Where the API key comes from (secret storage, OPENAI_API_KEY), or none. */
    key: 'secret' | 'env' | 'none';
    /** Workspace Trust: false in Restricted Mode (no memory, no tools, no context files). */
    trusted: boolean;
}

export interface ChatState {
    /** What is configured (undefined until the host read it). */
    setup?: SetupInfo;
    sessionId?: string;
    folderName?: string;
    memory?: boolean;
    turns: ChatTurn[];
    meter: CacheMeter;
    /** A line shown under the header (e.g. "the server restarted"). */
    notice?: string;
    nextId: number;
    /** Editor context chips waiting for the next message. */
    attachments: ContextChip[];
    history: HistoryPanel;
    /** A session is being reopened (`chat/resume`); sending waits for it. */
    restoring?: boolean;
    /** A Compact request is running; `compactSeen` once its `compacted` event arrived. */
    compacting?: boolean;
    compactSeen?: boolean;
    /** Providers whose failure this session already showed (the note appears once). */
    providerErrors?: string[];
}

/** How many chips one message may carry (each one is read into the turn's user message by the server). */
export const MAX_ATTACHMENTS = 10;

export type ApprovalRequest = Omit<ApprovalPart, 'kind' | 'status' | 'reason' | 'reportOnly'>;

export type ChatAction =
    | { type: 'sessionStarted'; sessionId: string; folderName: string; memory: boolean }
    | { type: 'sessionResumed'; sessionId: string; folderName: string; memory: boolean; turns: ChatTurn[]; notice?: string }
    | { type: 'restoring'; on: boolean; notice?: string }
    | { type: 'sessionLost'; notice: string }
    | { type: 'userSent'; text: string; context?: ContextChip[]; retry?: boolean }
    | { type: 'event'; event: ChatEvent; at?: number }
    | { type: 'replied'; reply: string; usage?: SessionUsage }
    | { type: 'stopped' }
    | { type: 'failed'; message: string; code?: number }
    | { type: 'setup'; setup: SetupInfo }
    | { type: 'dropTurn'; id: number }
    | { type: 'undone'; journalId?: string; message: string }
    | { type: 'memoryDescribed'; journalId: string; summary: string }
    | { type: 'notice'; notice?: string }
    | { type: 'attach'; chips: ContextChip[] }
    | { type: 'detach'; id: string }
    | { type: 'approvalRequested'; request: ApprovalRequest }
    | { type: 'approvalDecided'; callId: string; status: Exclude<ApprovalStatus, 'pending'>; at?: number }
    | { type: 'compactStarted' }
    | { type: 'compactFinished'; compacted: boolean; before: number; after: number; notice?: string }
    | { type: 'historyOpened' }
    | { type: 'historyLoaded'; rows: HistoryRow[] }
    | { type: 'historyFailed'; error: string }
    | { type: 'historyClosed' }
    | { type: 'historyRemoved'; sessionId: string };

export function initialState(): ChatState {
    return { turns: [], nextId: 1, meter: { live: [] }, attachments: [], history: { open: false, loading: false, rows: [] } };
}

export function isBusy(state: ChatState): boolean {
    const last = state.turns[state.turns.length - 1];
    return last?.status === 'pending' || state.restoring === true || state.compacting === true;
}

/** Approval cards still waiting for the user, oldest first. */
export function pendingApprovals(state: ChatState): ApprovalPart[] {
    return state.turns.flatMap((t) => t.parts.filter((p): p is ApprovalPart => p.kind === 'approval' && p.status === 'pending'));
}

function replaceLast(state: ChatState, f: (t: ChatTurn) => ChatTurn): ChatState {
    const last = state.turns[state.turns.length - 1];
    if (!last) {
        return state;
    }
    return { ...state, turns: [...state.turns.slice(0, -1), f(last)] };
}

function mapParts(state: ChatState, f: (p: TurnPart) => TurnPart): ChatState {
    return { ...state, turns: state.turns.map((t) => ({ ...t, parts: t.parts.map(f) })) };
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

function appendPart(state: ChatState, part: TurnPart): ChatState {
    return replaceLast(state, (t) => ({ ...t, parts: [...t.parts, part] }));
}

/** Cards still waiting when their turn ends can no longer be answered: the server has moved on. */
function cancelPending(turn: ChatTurn): ChatTurn {
    if (!turn.parts.some((p) => p.kind === 'approval' && p.status === 'pending')) {
        return turn;
    }
    return {
        ...turn,
        parts: turn.parts.map((p) => (p.kind === 'approval' && p.status === 'pending' ? { ...p, status: 'cancelled' } : p)),
    };
}

/** The final reply when nothing was streamed (a server that does not send deltas). */
function settle(turn: ChatTurn, reply: string | undefined): ChatTurn {
    const parts = !hasText(turn) && reply ? appendText(turn.parts, reply) : turn.parts;
    return cancelPending({ ...turn, parts, status: turn.status === 'pending' ? 'done' : turn.status });
}

function withUsage(state: ChatState, usage: SessionUsage | undefined): ChatState {
    return usage ? { ...state, meter: { ...state.meter, base: usage, live: [] } } : state;
}

function statusOf(approved: boolean, reason: ApprovalReason): Exclude<ApprovalStatus, 'pending'> {
    if (approved) {
        return 'approved';
    }
    return reason === 'cancelled' ? 'cancelled' : 'denied';
}

/** The call starts to run (it was approved): its clock starts, once. */
function started(state: ChatState, callId: string, at: number | undefined): ChatState {
    if (at === undefined) {
        return state;
    }
    return mapParts(state, (p) => (p.kind === 'tool' && p.callId === callId && p.startedAt === undefined ? { ...p, startedAt: at } : p));
}

/** How much of a running command's output the chat keeps (its latest part; the result has it all). */
export const MAX_LIVE_OUTPUT = 20_000;

function appendOutput(output: string | undefined, text: string): string {
    const all = (output ?? '') + text;
    if (all.length <= MAX_LIVE_OUTPUT) {
        return all;
    }
    const cut = all.slice(all.length - MAX_LIVE_OUTPUT);
    const newline = cut.indexOf('\n');
    return newline >= 0 && newline < 200 ? cut.slice(newline + 1) : cut;
}

function applyApprovalEvent(state: ChatState, event: Extract<ChatEvent, { kind: 'approval' }>, at?: number): ChatState {
    const status = statusOf(event.approved, event.reason);
    const running = event.approved ? started(state, event.callId, at) : state;
    const known = state.turns.some((t) => t.parts.some((p) => p.kind === 'approval' && p.callId === event.callId));
    if (known) {
        return mapParts(running, (p) =>
            p.kind === 'approval' && p.callId === event.callId ? { ...p, status, reason: event.reason } : p,
        );
    }
    return appendPart(running, {
        kind: 'approval',
        callId: event.callId,
        approvalKind: event.approvalKind,
        title: '',
        detail: '',
        canDiff: false,
        status,
        reason: event.reason,
        reportOnly: true,
    });
}

function applyEvent(state: ChatState, event: ChatEvent, at?: number): ChatState {
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
                    // The result holds the whole output: the live copy is no longer needed.
                    p.kind === 'tool' && p.callId === event.callId ? { ...p, result: event.content, ok: event.ok, output: undefined } : p,
                ),
            }));
        case 'memory_changed':
            // Shown even after a stop: the write happened and the user may want to undo it.
            return appendPart(state, { kind: 'memory', target: event.target, action: event.action, journalId: event.journalId });
        case 'usage': {
            const request: RequestUsage = {
                promptTokens: event.promptTokens,
                completionTokens: event.completionTokens,
                cachedTokens: event.cachedTokens,
            };
            const meter: CacheMeter = {
                ...state.meter,
                live: [...state.meter.live, request],
                lastDrop: event.cacheDrop ?? state.meter.lastDrop,
            };
            const next = { ...state, meter };
            return event.cacheDrop ? appendPart(next, { kind: 'cacheDrop', drop: event.cacheDrop }) : next;
        }
        case 'done':
            return withUsage(pending((t) => settle(t, event.reply)), event.usage);
        case 'error':
            return pending((t) =>
                cancelPending({
                    ...t,
                    status: 'error',
                    error: event.message,
                    errorKind: classifyFailure(event.message, undefined, event.errorKind),
                }),
            );
        case 'approval':
            return applyApprovalEvent(state, event, at);
        case 'command_output':
            return pending((t) => ({
                ...t,
                parts: t.parts.map((p) =>
                    p.kind === 'tool' && p.callId === event.callId && p.result === undefined
                        ? { ...p, output: appendOutput(p.output, event.text), startedAt: p.startedAt ?? at }
                        : p,
                ),
            }));
        case 'recall':
            return pending((t) => ({ ...t, parts: [...t.parts, { kind: 'recall', chars: event.chars, items: event.items }] }));
        case 'provider_error': {
            const shown = state.providerErrors ?? [];
            if (shown.includes(event.provider)) {
                return state;
            }
            const next = { ...state, providerErrors: [...shown, event.provider] };
            return appendPart(next, { kind: 'providerError', provider: event.provider, message: event.message });
        }
        case 'compacted': {
            const next = appendPart(state, { kind: 'compacted', reason: event.reason, before: event.before, after: event.after });
            return state.compacting ? { ...next, compactSeen: true } : next;
        }
    }
    return state;
}

function freshSession(state: ChatState): ChatState {
    return {
        ...initialState(),
        setup: state.setup,
        nextId: state.nextId,
        attachments: state.attachments, // a draft for the next message, whichever session gets it
        history: { ...state.history, rows: state.history.rows.map((r) => ({ ...r, current: false })) },
    };
}

function markCurrent(rows: HistoryRow[], sessionId: string | undefined): HistoryRow[] {
    return rows.map((r) => ({ ...r, current: r.sessionId === sessionId }));
}

export function reduce(state: ChatState, action: ChatAction): ChatState {
    switch (action.type) {
        case 'sessionStarted': {
            const next = freshSession(state);
            return {
                ...next,
                sessionId: action.sessionId,
                folderName: action.folderName,
                memory: action.memory,
                history: { ...next.history, rows: markCurrent(next.history.rows, action.sessionId) },
            };
        }
        case 'sessionResumed': {
            const next = freshSession(state);
            const turns = action.turns.map((t, i) => ({ ...t, id: state.nextId + i }));
            return {
                ...next,
                sessionId: action.sessionId,
                folderName: action.folderName,
                memory: action.memory,
                turns,
                notice: action.notice,
                nextId: state.nextId + turns.length,
                history: { ...next.history, rows: markCurrent(next.history.rows, action.sessionId) },
            };
        }
        case 'restoring':
            return { ...state, restoring: action.on, notice: action.notice ?? (action.on ? state.notice : undefined) };
        case 'sessionLost': {
            const closed = replaceLast(state, (t) =>
                t.status === 'pending' ? cancelPending({ ...t, status: 'error', error: action.notice }) : t,
            );
            return {
                ...closed,
                sessionId: undefined,
                notice: action.notice,
                meter: { live: [] },
                restoring: false,
                compacting: false,
                compactSeen: false,
            };
        }
        case 'userSent':
            return {
                ...state,
                notice: undefined,
                nextId: state.nextId + 1,
                // The chips went with this message (a retry resends its own: the new ones wait).
                attachments: action.context?.length && !action.retry ? [] : state.attachments,
                turns: [
                    ...state.turns,
                    {
                        id: state.nextId,
                        user: action.text,
                        parts: [],
                        status: 'pending',
                        ...(action.context?.length ? { context: action.context } : {}),
                    },
                ],
            };
        case 'event':
            return applyEvent(state, action.event, action.at);
        case 'replied':
            return withUsage(replaceLast(state, (t) => settle(t, action.reply)), action.usage);
        case 'stopped':
            return replaceLast(state, (t) => (t.status === 'pending' ? cancelPending({ ...t, status: 'stopped' }) : t));
        case 'failed':
            return replaceLast(state, (t) =>
                t.status === 'pending' || t.status === 'done'
                    ? cancelPending({
                          ...t,
                          status: 'error',
                          error: t.error ?? action.message,
                          errorKind: t.error ? t.errorKind : classifyFailure(action.message, action.code),
                      })
                    : t,
            );
        case 'memoryDescribed':
            return mapParts(state, (p) => (p.kind === 'memory' && p.journalId === action.journalId ? { ...p, summary: action.summary } : p));
        case 'setup':
            return { ...state, setup: action.setup };
        case 'dropTurn':
            return { ...state, turns: state.turns.filter((t) => t.id !== action.id) };
        case 'undone':
            return mapParts(state, (p) =>
                p.kind === 'memory' && p.journalId === action.journalId && !p.undone
                    ? { ...p, undone: true, undoMessage: action.message }
                    : p,
            );
        case 'notice':
            return { ...state, notice: action.notice };
        case 'attach': {
            const have = new Set(state.attachments.map((c) => c.id));
            const added: ContextChip[] = [];
            for (const chip of action.chips) {
                if (!have.has(chip.id)) {
                    have.add(chip.id);
                    added.push(chip);
                }
            }
            return { ...state, attachments: [...state.attachments, ...added].slice(0, MAX_ATTACHMENTS) };
        }
        case 'detach':
            return { ...state, attachments: state.attachments.filter((c) => c.id !== action.id) };
        case 'approvalRequested': {
            const part: ApprovalPart = { kind: 'approval', ...action.request, status: 'pending' };
            return appendPart(state, part);
        }
        case 'approvalDecided':
            return mapParts(action.status === 'approved' ? started(state, action.callId, action.at) : state, (p) =>
                p.kind === 'approval' && p.callId === action.callId && p.status === 'pending'
                    ? { ...p, status: action.status, reason: action.status === 'cancelled' ? 'cancelled' : 'user' }
                    : p,
            );
        case 'compactStarted':
            return { ...state, compacting: true, compactSeen: false };
        case 'compactFinished': {
            const done = { ...state, compacting: false, compactSeen: false, notice: action.notice };
            if (!action.compacted || state.compactSeen) {
                return done;
            }
            return appendPart(done, { kind: 'compacted', reason: 'manual', before: action.before, after: action.after });
        }
        case 'historyOpened':
            return { ...state, history: { ...state.history, open: true, loading: true, error: undefined } };
        case 'historyLoaded':
            return {
                ...state,
                history: { open: true, loading: false, rows: markCurrent(action.rows, state.sessionId) },
            };
        case 'historyFailed':
            return { ...state, history: { ...state.history, loading: false, error: action.error } };
        case 'historyClosed':
            return { ...state, history: { ...state.history, open: false, loading: false } };
        case 'historyRemoved':
            return {
                ...state,
                history: { ...state.history, rows: state.history.rows.filter((r) => r.sessionId !== action.sessionId) },
            };
    }
    return state;
}

// ---- the cache meter ---------------------------------------------------------------------------------------

export interface MeterFigures {
    requests: number;
    promptTokens: number;
    /** Tokens read from the prompt cache; null when the provider reported no figure at all. */
    cachedTokens: number | null;
    /** cached / prompt over the requests that reported a figure; null when none did. */
    hitRate: number | null;
}

/** The session's cache figures: server totals plus the requests reported since (a missing figure is not 0). */
export function meterFigures(meter: CacheMeter): MeterFigures {
    let requests = 0;
    let promptTokens = 0;
    let cached = 0;
    let promptReported = 0;
    let anyReported = false;
    const add = (prompt: number, cachedTokens: number | null, count: number): void => {
        requests += count;
        promptTokens += prompt;
        if (cachedTokens !== null) {
            anyReported = true;
            cached += cachedTokens;
            promptReported += prompt;
        }
    };
    if (meter.base) {
        add(meter.base.promptTokens, meter.base.cachedTokens, meter.base.requests);
    }
    for (const r of meter.live) {
        add(r.promptTokens, r.cachedTokens, 1);
    }
    return {
        requests,
        promptTokens,
        cachedTokens: anyReported ? cached : null,
        hitRate: anyReported && promptReported > 0 ? Math.min(1, cached / promptReported) : null,
    };
}

/** "87%" for the header, "n/a" when the provider reports nothing; undefined before the first request. */
export function cacheHitText(figures: MeterFigures): string | undefined {
    if (!figures.requests) {
        return undefined;
    }
    return figures.hitRate === null ? 'n/a' : `${Math.round(figures.hitRate * 100)}%`;
}

/** "12.3k" style token counts for the meter. */
export function tokenCount(n: number): string {
    if (n < 1000) {
        return String(n);
    }
    if (n < 1_000_000) {
        return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
    }
    return `${(n / 1_000_000).toFixed(1)}M`;
}
