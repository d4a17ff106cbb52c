/**
 * Validates what the server sends the chat (events, approval requests, sessions, resumed transcripts) before
 * the reducer sees it. The server is ours, but it is built in parallel and relays model output: a field of
 * the wrong type must drop one message (with a log line), never break the view or render "undefined".
 */
import type {
    ApprovalKind,
    ApprovalReason,
    ApproveParams,
    CacheDrop,
    CacheDropReason,
    ChatEvent,
    CompactReason,
    CompactResult,
    HistoryMessage,
    ResumeResult,
    SessionInfo,
    SessionUsage,
    ToolCallRecord,
} from './protocol';
import { ERROR_KINDS } from './protocol';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === 'string';
const int = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const oneOf = <T extends string>(v: unknown, values: readonly T[]): v is T => str(v) && (values as readonly string[]).includes(v);

export const APPROVAL_KINDS: readonly ApprovalKind[] = ['edit', 'command', 'memory'];
const APPROVAL_REASONS: readonly ApprovalReason[] = ['user', 'setting', 'cancelled', 'error'];
const COMPACT_REASONS: readonly CompactReason[] = ['threshold', 'manual', 'context_error'];
const DROP_REASONS: readonly CacheDropReason[] = ['compaction', 'resume', 'model_change', 'expired', 'unknown'];

/** Longest callId / sessionId we accept (they are opaque ids, never text to show at length). */
export const MAX_ID = 200;

const id = (v: unknown): v is string => str(v) && v !== '' && v.length <= MAX_ID;

/** One command_output event's text is at most this long (the server sends a flood's tail only). */
export const MAX_OUTPUT_EVENT = 20_000;

/** A provider's error message is shown once; a huge one (a stack, a dump) is cut. */
export const MAX_PROVIDER_MESSAGE = 2000;

/** `cachedTokens`: a count, or null / missing = the provider reports nothing. */
function cached(v: unknown): number | null | undefined {
    if (v === null || v === undefined) {
        return null;
    }
    return int(v) ? v : undefined;
}

function parseDrop(v: unknown): CacheDrop | undefined {
    if (!isObj(v) || !int(v.expected) || !int(v.got)) {
        return undefined;
    }
    return { reason: oneOf(v.reason, DROP_REASONS) ? v.reason : 'unknown', expected: v.expected, got: v.got };
}

export function parseSessionUsage(v: unknown): SessionUsage | undefined {
    if (!isObj(v) || !int(v.promptTokens) || !int(v.completionTokens)) {
        return undefined;
    }
    const c = cached(v.cachedTokens);
    if (c === undefined) {
        return undefined;
    }
    const rate = typeof v.cacheHitRate === 'number' && Number.isFinite(v.cacheHitRate) ? v.cacheHitRate : null;
    return {
        promptTokens: v.promptTokens,
        completionTokens: v.completionTokens,
        cachedTokens: c,
        requests: int(v.requests) ? v.requests : 0,
        cacheHitRate: c === null ? null : rate,
    };
}

/** A `myAgent/chat/event` payload, or undefined when it is not one we can show. */
export function parseChatEvent(raw: unknown): ChatEvent | undefined {
    if (!isObj(raw) || !str(raw.sessionId) || !str(raw.kind)) {
        return undefined;
    }
    const sessionId = raw.sessionId;
    switch (raw.kind) {
        case 'delta':
            return str(raw.text) ? { sessionId, kind: 'delta', text: raw.text } : undefined;
        case 'tool_call':
            return id(raw.callId) && str(raw.name)
                ? {
                      sessionId,
                      kind: 'tool_call',
                      callId: raw.callId,
                      name: raw.name,
                      arguments: str(raw.arguments) ? raw.arguments : JSON.stringify(raw.arguments ?? null),
                  }
                : undefined;
        case 'tool_result':
            return id(raw.callId) && str(raw.content)
                ? {
                      sessionId,
                      kind: 'tool_result',
                      callId: raw.callId,
                      name: str(raw.name) ? raw.name : '',
                      ok: raw.ok === true,
                      content: raw.content,
                  }
                : undefined;
        case 'memory_changed':
            return oneOf(raw.target, ['memory', 'user'] as const) && str(raw.action)
                ? {
                      sessionId,
                      kind: 'memory_changed',
                      target: raw.target,
                      action: raw.action,
                      journalId: str(raw.journalId) ? raw.journalId : undefined,
                  }
                : undefined;
        case 'usage': {
            const c = cached(raw.cachedTokens);
            if (!int(raw.promptTokens) || c === undefined) {
                return undefined;
            }
            const drop = parseDrop(raw.cacheDrop);
            return {
                sessionId,
                kind: 'usage',
                promptTokens: raw.promptTokens,
                completionTokens: int(raw.completionTokens) ? raw.completionTokens : 0,
                cachedTokens: c,
                ...(drop ? { cacheDrop: drop } : {}),
            };
        }
        case 'done': {
            const usage = parseSessionUsage(raw.usage);
            return { sessionId, kind: 'done', reply: str(raw.reply) ? raw.reply : '', ...(usage ? { usage } : {}) };
        }
        case 'error':
            return {
                sessionId,
                kind: 'error',
                message: str(raw.message) ? raw.message : 'unknown error',
                ...(oneOf(raw.errorKind, ERROR_KINDS) ? { errorKind: raw.errorKind } : {}),
            };
        case 'command_output':
            // A running command's new output (run_command streams it); shown live under its card.
            return id(raw.callId) && oneOf(raw.stream, ['stdout', 'stderr'] as const) && str(raw.text)
                ? { sessionId, kind: 'command_output', callId: raw.callId, stream: raw.stream, text: raw.text.slice(0, MAX_OUTPUT_EVENT) }
                : undefined;
        case 'approval': {
            if (!id(raw.callId) || typeof raw.approved !== 'boolean') {
                return undefined;
            }
            // The event's own `kind` is "approval"; the server names the approval's kind `approvalKind`.
            const approvalKind = oneOf(raw.approvalKind, APPROVAL_KINDS) ? raw.approvalKind : undefined;
            return {
                sessionId,
                kind: 'approval',
                callId: raw.callId,
                approved: raw.approved,
                reason: oneOf(raw.reason, APPROVAL_REASONS) ? raw.reason : raw.approved ? 'user' : 'error',
                ...(approvalKind ? { approvalKind } : {}),
            };
        }
        case 'recall':
            // A small note on the turn: how much recalled memory the server appended to the user message.
            return int(raw.chars) && int(raw.items) ? { sessionId, kind: 'recall', chars: raw.chars, items: raw.items } : undefined;
        case 'provider_error':
            return str(raw.provider) && raw.provider !== '' && raw.provider.length <= MAX_ID
                ? {
                      sessionId,
                      kind: 'provider_error',
                      provider: raw.provider,
                      message: str(raw.message) ? raw.message.slice(0, MAX_PROVIDER_MESSAGE) : '',
                  }
                : undefined;
        case 'compacted':
            return int(raw.before) && int(raw.after)
                ? {
                      sessionId,
                      kind: 'compacted',
                      reason: oneOf(raw.reason, COMPACT_REASONS) ? raw.reason : 'threshold',
                      before: raw.before,
                      after: raw.after,
                  }
                : undefined;
    }
    return undefined;
}

/** Upper bounds on what an approval card shows and keeps (a whole file's diff stays readable and finite). */
export const MAX_DETAIL = 200_000;
export const MAX_TITLE = 500;

/** A `myAgent/chat/approve` request, or undefined when malformed (then the answer is a refusal). */
export function parseApproveParams(raw: unknown): ApproveParams | undefined {
    if (!isObj(raw) || !id(raw.sessionId) || !id(raw.callId) || !oneOf(raw.kind, APPROVAL_KINDS)) {
        return undefined;
    }
    if (!str(raw.title) || !str(raw.detail)) {
        return undefined;
    }
    const out: ApproveParams = {
        sessionId: raw.sessionId,
        callId: raw.callId,
        kind: raw.kind,
        title: raw.title.slice(0, MAX_TITLE),
        detail: raw.detail,
    };
    if (str(raw.uri) && raw.uri !== '') {
        out.uri = raw.uri;
    }
    if (str(raw.newText)) {
        out.newText = raw.newText;
    }
    if (str(raw.cwd) && raw.cwd !== '') {
        out.cwd = raw.cwd;
    }
    return out;
}

/** The sessions of `myAgent/chat/sessions`; fields an older server does not send get neutral values. */
export function parseSessions(raw: unknown): SessionInfo[] {
    const list = isObj(raw) && Array.isArray(raw.sessions) ? raw.sessions : [];
    const out: SessionInfo[] = [];
    for (const s of list) {
        if (!isObj(s) || !id(s.sessionId)) {
            continue;
        }
        out.push({
            sessionId: s.sessionId,
            title: str(s.title) ? s.title : '',
            created: int(s.created) ? s.created : 0,
            updated: int(s.updated) ? s.updated : int(s.created) ? s.created : 0,
            folder: str(s.folder) ? s.folder : '',
            messages: int(s.messages) ? s.messages : 0,
            memory: s.memory !== false,
            active: s.active === true,
        });
    }
    return out;
}

function parseToolCalls(v: unknown): ToolCallRecord[] | undefined {
    if (!Array.isArray(v)) {
        return undefined;
    }
    const calls: ToolCallRecord[] = [];
    for (const c of v) {
        if (isObj(c) && str(c.id) && str(c.name)) {
            calls.push({ id: c.id, name: c.name, arguments: str(c.arguments) ? c.arguments : JSON.stringify(c.arguments ?? null) });
        }
    }
    return calls;
}

/** A `myAgent/chat/resume` result, or undefined when it is not one (the resume then counts as failed). */
export function parseResume(raw: unknown): ResumeResult | undefined {
    if (!isObj(raw) || !id(raw.sessionId) || !Array.isArray(raw.messages)) {
        return undefined;
    }
    const messages: HistoryMessage[] = [];
    for (const m of raw.messages) {
        if (!isObj(m) || !oneOf(m.role, ['user', 'assistant', 'tool', 'system'] as const)) {
            continue;
        }
        const msg: HistoryMessage = { role: m.role, content: str(m.content) ? m.content : '' };
        if (str(m.name)) {
            msg.name = m.name;
        }
        const calls = parseToolCalls(m.toolCalls);
        if (calls && calls.length) {
            msg.toolCalls = calls;
        }
        if (str(m.toolCallId)) {
            msg.toolCallId = m.toolCallId;
        }
        messages.push(msg);
    }
    return { sessionId: raw.sessionId, folder: str(raw.folder) ? raw.folder : '', memory: raw.memory !== false, messages };
}

export function parseCompactResult(raw: unknown): CompactResult {
    if (!isObj(raw)) {
        return { compacted: false, before: 0, after: 0 };
    }
    return {
        compacted: raw.compacted === true,
        before: int(raw.before) ? raw.before : 0,
        after: int(raw.after) ? raw.after : 0,
    };
}
