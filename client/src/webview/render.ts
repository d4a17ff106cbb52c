/**
 * Turns the chat state into HTML strings for the webview. Model output is untrusted: Markdown is rendered
 * by markdown-it with raw HTML off and images off, then passed through a sanitizer (DOMPurify in the
 * webview); every other string is escaped. No VS Code or DOM imports, so Node unit tests can run it.
 */
import MarkdownIt from 'markdown-it';
import type { ChatState, ChatTurn, TurnPart } from '../chatModel';
import { cacheHitText } from '../chatModel';

export type Sanitize = (html: string) => string;

/** The strings the webview shows, localized by the extension host (vscode.l10n) and posted once. */
export interface UiStrings {
    newChat: string;
    newChatAria: string;
    send: string;
    sendAria: string;
    stop: string;
    stopAria: string;
    inputPlaceholder: string;
    inputAria: string;
    transcriptAria: string;
    you: string;
    assistant: string;
    toolCall: string;
    toolArguments: string;
    toolResult: string;
    toolOk: string;
    toolFailed: string;
    toolRunning: string;
    memoryChanged: string;
    undo: string;
    undoAria: string;
    undone: string;
    stopped: string;
    thinking: string;
    errorPrefix: string;
    cacheHitRate: string;
    memoryOn: string;
    memoryOff: string;
    noSession: string;
    emptyTranscript: string;
    showSnapshot: string;
    showSnapshotAria: string;
}

/** DOMPurify options used in the webview (and by the tests with jsdom). */
export const PURIFY_CONFIG = {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'img', 'svg', 'math', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed'],
    FORBID_ATTR: ['style', 'srcset', 'action', 'formaction'],
    ALLOW_DATA_ATTR: false,
};

export function escapeHtml(text: string): string {
    return text
        .replace(/&/g, '&amp;')
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .replace(/"/g, '&quot;')
        .replace(/'/g, '&#39;');
}

/** "{0} in {1}"-style templates, filled with already-escaped values. */
export function fmt(template: string, ...args: string[]): string {
    return template.replace(/\{(\d+)\}/g, (m, i: string) => args[Number(i)] ?? m);
}

export function createMarkdown(): MarkdownIt {
    const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
    md.disable('image');
    return md;
}

export function renderMarkdown(md: MarkdownIt, text: string, sanitize: Sanitize): string {
    return sanitize(md.render(text));
}

function prettyJson(text: string): string {
    try {
        return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
        return text;
    }
}

function renderPart(part: TurnPart, s: UiStrings, md: MarkdownIt, sanitize: Sanitize): string {
    switch (part.kind) {
        case 'text':
            return `<div class="markdown">${renderMarkdown(md, part.text, sanitize)}</div>`;
        case 'tool': {
            const status = part.ok === undefined ? s.toolRunning : part.ok ? s.toolOk : s.toolFailed;
            const cls = part.ok === false ? 'tool failed' : 'tool';
            const result =
                part.result === undefined
                    ? ''
                    : `<div class="label">${escapeHtml(s.toolResult)}</div><pre>${escapeHtml(part.result)}</pre>`;
            return (
                `<details class="${cls}"><summary>${escapeHtml(fmt(s.toolCall, part.name))} ` +
                `<span class="status">${escapeHtml(status)}</span></summary>` +
                `<div class="label">${escapeHtml(s.toolArguments)}</div><pre>${escapeHtml(prettyJson(part.arguments))}</pre>` +
                `${result}</details>`
            );
        }
        case 'memory': {
            const what = escapeHtml(fmt(s.memoryChanged, part.action, part.target === 'user' ? 'USER.md' : 'MEMORY.md'));
            if (part.undone) {
                return `<div class="notice memory undone" role="status">${what} — ${escapeHtml(
                    fmt(s.undone, part.undoMessage ?? ''),
                )}</div>`;
            }
            const button = part.journalId
                ? ` <button type="button" class="undo" data-action="undo" data-journal-id="${escapeHtml(
                      part.journalId,
                  )}" aria-label="${escapeHtml(s.undoAria)}">${escapeHtml(s.undo)}</button>`
                : ` <button type="button" class="undo" data-action="undo" aria-label="${escapeHtml(s.undoAria)}">${escapeHtml(
                      s.undo,
                  )}</button>`;
            return `<div class="notice memory" role="status"><span>${what}</span>${button}</div>`;
        }
    }
    return '';
}

/** One turn: the user's message (escaped, never Markdown) and the assistant's parts in arrival order. */
export function renderTurn(turn: ChatTurn, s: UiStrings, md: MarkdownIt, sanitize: Sanitize): string {
    const parts = turn.parts.map((p) => renderPart(p, s, md, sanitize)).join('');
    let tail = '';
    if (turn.status === 'pending' && turn.parts.length === 0) {
        tail = `<div class="thinking" aria-busy="true">${escapeHtml(s.thinking)}</div>`;
    } else if (turn.status === 'stopped') {
        tail = `<div class="stopped">${escapeHtml(s.stopped)}</div>`;
    } else if (turn.status === 'error') {
        tail = `<div class="error" role="alert">${escapeHtml(fmt(s.errorPrefix, turn.error ?? ''))}</div>`;
    }
    return (
        `<div class="message user"><div class="who">${escapeHtml(s.you)}</div>` +
        `<div class="text">${escapeHtml(turn.user)}</div></div>` +
        `<div class="message assistant${turn.status === 'pending' ? ' pending' : ''}">` +
        `<div class="who">${escapeHtml(s.assistant)}</div>${parts}${tail}</div>`
    );
}

/** The session line: folder, whether memory is in the prompt, and the session's prompt-cache hit rate. */
export function renderHeader(state: ChatState, s: UiStrings): string {
    const bits: string[] = [];
    if (state.sessionId) {
        bits.push(`<span class="folder">${escapeHtml(state.folderName ?? '')}</span>`);
        bits.push(`<span class="badge">${escapeHtml(state.memory ? s.memoryOn : s.memoryOff)}</span>`);
        const rate = cacheHitText(state.usage);
        if (rate) {
            bits.push(`<span class="cache" title="${escapeHtml(String(state.usage?.cachedTokens ?? 0))}/${escapeHtml(
                String(state.usage?.promptTokens ?? 0),
            )}">${escapeHtml(fmt(s.cacheHitRate, rate))}</span>`);
        }
    } else {
        bits.push(`<span class="folder">${escapeHtml(s.noSession)}</span>`);
    }
    if (state.notice) {
        bits.push(`<div class="session-notice" role="status">${escapeHtml(state.notice)}</div>`);
    }
    return bits.join(' ');
}
