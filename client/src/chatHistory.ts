/**
 * Past sessions for the chat view, pure: the rows of the history list, and a resumed session's messages
 * turned back into transcript turns (`myAgent/chat/resume`). No VS Code and no DOM, so both are unit-tested.
 */
import type { ChatTurn, HistoryRow, TurnPart } from './chatModel';
import type { HistoryMessage, SessionInfo } from './protocol';

/** The recall block the server appends to a user message (stored as sent); shown apart, collapsed. */
const RECALLED = /\n*<recalled_memory>[\s\S]*?<\/recalled_memory>\s*$/;

export function splitRecalled(text: string): { text: string; recalled?: string } {
    const m = RECALLED.exec(text);
    if (!m) {
        return { text };
    }
    const inner = m[0].replace(/^\s*<recalled_memory>/, '').replace(/<\/recalled_memory>\s*$/, '').trim();
    return { text: text.slice(0, m.index), recalled: inner };
}

/** A tool message that starts with "Error:" is a failed call (the tool layer's convention). */
function toolOk(content: string): boolean {
    return !/^\s*Error:/.test(content);
}

/**
 * Rebuilds turns from a session's history: each user message opens a turn; assistant text and tool calls,
 * and the tool results matched by call id, fill it. Ids are provisional (the reducer renumbers them).
 */
export function turnsFromHistory(messages: readonly HistoryMessage[]): ChatTurn[] {
    const turns: ChatTurn[] = [];
    let current: ChatTurn | undefined;
    const open = (user: string): ChatTurn => {
        const turn: ChatTurn = { id: turns.length + 1, user, parts: [], status: 'done', restored: true };
        turns.push(turn);
        return turn;
    };
    for (const m of messages) {
        if (m.role === 'user') {
            const { text, recalled } = splitRecalled(m.content);
            current = open(text);
            if (recalled) {
                current.parts.push({ kind: 'note', role: 'recalled', text: recalled });
            }
            continue;
        }
        const turn = current ?? (current = open(''));
        if (m.role === 'assistant') {
            if (m.content.trim() !== '') {
                turn.parts.push({ kind: 'text', text: m.content });
            }
            for (const call of m.toolCalls ?? []) {
                turn.parts.push({ kind: 'tool', callId: call.id, name: call.name, arguments: call.arguments });
            }
        } else if (m.role === 'tool') {
            const part = turn.parts.find((p): p is Extract<TurnPart, { kind: 'tool' }> => p.kind === 'tool' && p.callId === m.toolCallId && p.result === undefined);
            if (part) {
                part.result = m.content;
                part.ok = toolOk(m.content);
            } else {
                turn.parts.push({ kind: 'tool', callId: m.toolCallId ?? '', name: m.name ?? '', arguments: '', result: m.content, ok: toolOk(m.content) });
            }
        } else {
            turn.parts.push({ kind: 'note', role: m.role, text: m.content });
        }
    }
    // A last message the agent never answered (the window closed mid-turn) shows as interrupted.
    const last = turns[turns.length - 1];
    if (last && !last.parts.some((p) => p.kind === 'text')) {
        last.status = 'stopped';
    }
    return turns;
}

export interface RowOptions {
    currentId?: string;
    /** The display name of a folder URI ('' when unknown). */
    folderName: (uri: string) => string;
    /** A date/time label for epoch seconds. */
    formatWhen: (epochSeconds: number) => string;
    /** Used as the title of a session that has none (no message yet, or an older server). */
    untitled: string;
}

/**
 * The history list: newest first (as the server sends it, re-sorted defensively); sessions without a
 * message are left out unless they are the current one (a New Chat that was never used has nothing to reopen).
 */
export function historyRows(sessions: readonly SessionInfo[], opts: RowOptions): HistoryRow[] {
    return [...sessions]
        .filter((s) => s.messages > 0 || s.sessionId === opts.currentId)
        .sort((a, b) => b.updated - a.updated)
        .map((s) => ({
            sessionId: s.sessionId,
            title: s.title.trim() || opts.untitled,
            when: s.updated ? opts.formatWhen(s.updated) : '',
            folderName: s.folder ? opts.folderName(s.folder) : '',
            messages: s.messages,
            current: s.sessionId === opts.currentId,
        }));
}
