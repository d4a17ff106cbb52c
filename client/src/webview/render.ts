/**
 * Turns the chat transcript into HTML strings for the webview. Model output is untrusted: Markdown is rendered
 * by markdown-it with raw HTML off and images off, then passed through a sanitizer (DOMPurify in the
 * webview); every other string is escaped. No VS Code or DOM imports, so Node unit tests can run it.
 */
import MarkdownIt from 'markdown-it';
import type { ChatTurn, TurnPart } from '../chatModel';
import { renderApproval } from './cards';
import { cacheDropText, renderSentContext } from './panels';
import { escapeHtml, fmt, UiStrings } from './strings';

export { escapeHtml, fmt } from './strings';
export type { UiStrings } from './strings';
export { renderHeader } from './panels';

export type Sanitize = (html: string) => string;

/** DOMPurify options used in the webview (and by the tests with jsdom). */
export const PURIFY_CONFIG = {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'img', 'svg', 'math', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed'],
    FORBID_ATTR: ['style', 'srcset', 'action', 'formaction'],
    ALLOW_DATA_ATTR: false,
};

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

function compactReason(reason: string, s: UiStrings): string {
    switch (reason) {
        case 'manual':
            return s.compactManual;
        case 'context_error':
            return s.compactContextError;
    }
    return s.compactThreshold;
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
            // The summary quotes the entry (plain text, bounded, never a blocked one); escaped like all text.
            const whatText = part.summary ?? fmt(s.memoryChanged, part.action, part.target === 'user' ? 'USER.md' : 'MEMORY.md');
            const what = escapeHtml(whatText);
            if (part.undone) {
                // The undo note names the change in words ("Undid: added 'x' to MEMORY.md").
                return `<div class="notice memory undone" role="status">${escapeHtml(part.undoMessage || fmt(s.undone, whatText))}</div>`;
            }
            const journal = part.journalId
                ? ` data-journal-id="${escapeHtml(part.journalId)}" data-key="undo:${escapeHtml(part.journalId)}"`
                : '';
            const button = ` <button type="button" class="undo" data-action="undo"${journal} aria-label="${escapeHtml(
                s.undoAria,
            )}">${escapeHtml(s.undo)}</button>`;
            return `<div class="notice memory" role="status"><span>${what}</span>${button}</div>`;
        }
        case 'approval':
            return renderApproval(part, s);
        case 'compacted':
            return (
                `<div class="compacted" role="separator">${escapeHtml(
                    fmt(s.compacted, String(part.before), String(part.after), compactReason(part.reason, s)),
                )}</div>`
            );
        case 'cacheDrop':
            return `<div class="notice cache-drop" role="status">${escapeHtml(cacheDropText(part.drop, s))}</div>`;
        case 'recall': {
            const text = part.items === 1 ? fmt(s.recallOne, String(part.chars)) : fmt(s.recallMany, String(part.items), String(part.chars));
            return `<div class="note recall" role="note">${escapeHtml(text)}</div>`;
        }
        case 'providerError':
            return `<div class="notice provider-error" role="status">${escapeHtml(fmt(s.providerError, part.provider, part.message))}</div>`;
        case 'note': {
            const label = part.role === 'recalled' ? s.noteRecalled : fmt(s.noteOther, part.role);
            return `<details class="note"><summary>${escapeHtml(label)}</summary><pre>${escapeHtml(part.text)}</pre></details>`;
        }
    }
    return '';
}

/** One turn: the user's message (escaped, never Markdown) and the assistant's parts in arrival order. */
export function renderTurn(turn: ChatTurn, s: UiStrings, md: MarkdownIt, sanitize: Sanitize): string {
    const parts = turn.parts.map((p) => renderPart(p, s, md, sanitize)).join('');
    let tail = '';
    if (turn.status === 'pending' && turn.parts.every((p) => p.kind === 'recall' || p.kind === 'providerError')) {
        tail = `<div class="thinking" aria-busy="true">${escapeHtml(s.thinking)}</div>`;
    } else if (turn.status === 'stopped') {
        tail = `<div class="stopped">${escapeHtml(s.stopped)}</div>`;
    } else if (turn.status === 'error') {
        tail = `<div class="error" role="alert">${escapeHtml(fmt(s.errorPrefix, turn.error ?? ''))}</div>`;
    }
    const user = turn.user
        ? `<div class="message user"><div class="who">${escapeHtml(s.you)}</div>` +
          `<div class="text">${escapeHtml(turn.user)}</div>${renderSentContext(turn.context, s)}</div>`
        : '';
    return (
        user +
        `<div class="message assistant${turn.status === 'pending' ? ' pending' : ''}">` +
        `<div class="who">${escapeHtml(s.assistant)}</div>${parts}${tail}</div>`
    );
}
