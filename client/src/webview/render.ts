/**
 * Turns the chat transcript into HTML strings for the webview. Model output is untrusted: Markdown is rendered
 * by markdown-it with raw HTML off and images off, then passed through a sanitizer (DOMPurify in the
 * webview); every other string is escaped. No VS Code or DOM imports, so Node unit tests can run it.
 */
import MarkdownIt from 'markdown-it';
import { failureActions, FailureAction } from '../chat/failures';
import type { ApprovalPart, ChatTurn, ToolPart, TurnPart } from '../chatModel';
import { renderApproval, renderDecidedCard } from './cards';
import { cacheDropText, renderSentContext } from './panels';
import { workspacePaths } from './pathLinks';
import { escapeHtml, fmt, inlineCode, UiStrings } from './strings';
import { changedLines, parseCommandResult, stateText, summarizes, toolArgs, ToolState, toolState, toolSummary } from './toolView';

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

/**
 * Raw HTML and images off; links only with a scheme (no fuzzy links: "MEMORY.md" is not http://MEMORY.md);
 * workspace paths link to the file in the editor (`pathTitle` makes their tooltip).
 */
export function createMarkdown(pathTitle?: (path: string) => string): MarkdownIt {
    const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
    md.linkify.set({ fuzzyLink: false, fuzzyEmail: false, fuzzyIP: false });
    md.disable('image');
    workspacePaths(md, pathTitle);
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

function stateName(state: ToolState): string {
    return state === 'timedOut' ? 'timed-out' : state;
}

/** The running clock (the webview ticks `data-started`) or the time the tool reported. */
function elapsed(tool: ToolPart, state: ToolState, seconds: number | undefined, s: UiStrings): string {
    if (state === 'running' && tool.startedAt !== undefined) {
        return ` <span class="elapsed" data-started="${tool.startedAt}" aria-live="off"></span>`;
    }
    return seconds !== undefined ? ` <span class="elapsed">${escapeHtml(fmt(s.seconds, seconds.toFixed(1)))}</span>` : '';
}

/** A command's output: live while it runs, then what the tool reported; always in view, scrollable. */
function commandOutput(tool: ToolPart, state: ToolState, s: UiStrings): { html: string; seconds?: number } {
    const command = String(toolArgs(tool).command ?? '');
    const aria = escapeHtml(fmt(s.outputAria, command.slice(0, 80)));
    const pre = (text: string, cls: string): string =>
        `<pre class="output${cls}" tabindex="0" aria-label="${aria}">${escapeHtml(text)}</pre>`;
    if (tool.result === undefined) {
        return { html: tool.output ? pre(tool.output, state === 'running' ? ' live' : '') : '' };
    }
    if (state === 'denied') {
        return { html: '' };
    }
    const r = parseCommandResult(tool.result);
    if (r.seconds === undefined && !tool.ok) {
        // Refused before it ran (an empty command, a bad timeout): the tool's message says why.
        return { html: `<div class="error">${inlineCode(tool.result.replace(/^\s*Error:\s*/, ''))}</div>` };
    }
    return { html: r.output ? pre(r.output, '') : pre(s.noOutput, ' empty'), seconds: r.seconds };
}

/** Under an approved edit's card: which lines changed, and a way to open the file there. */
function editOutcome(tool: ToolPart, approval: ApprovalPart, state: ToolState, s: UiStrings): string {
    if (tool.result === undefined || approval.status !== 'approved' || state === 'stopped') {
        return '';
    }
    if (!tool.ok) {
        return `<div class="error">${inlineCode(tool.result.replace(/^\s*Error:\s*/, ''))}</div>`;
    }
    const lines = changedLines(approval.detail);
    const file = approval.path ?? String(toolArgs(tool).path ?? '');
    if (!lines || !file || approval.approvalKind !== 'edit') {
        return '';
    }
    const code = `<code>${escapeHtml(file)}</code>`;
    const note =
        lines.start === lines.end
            ? fmt(escapeHtml(s.changedLine), code, String(lines.start))
            : fmt(escapeHtml(s.changedLines), code, String(lines.start), String(lines.end));
    const id = escapeHtml(approval.callId);
    return (
        `<div class="change-note" role="status"><span>${note}</span> <button type="button" class="secondary" data-action="openChange" ` +
        `data-call-id="${id}" data-key="openChange:${id}" aria-label="${escapeHtml(
            fmt(s.openChangeAria, file, String(lines.start)),
        )}">${escapeHtml(s.openChange)}</button></div>`
    );
}

/**
 * One tool call. While its approval card waits, the card (what it will do, Approve / Deny); once decided,
 * the card becomes the call's row: one line (what it did, the decision) and what came of it (a command's
 * output, an edit's changed lines), so card and output stay together, in order. A call without a card is a
 * one-line summary with its state; a command shows its output in view, other tools in a collapsed details.
 */
function renderTool(tool: ToolPart, approval: ApprovalPart | undefined, turn: ChatTurn, s: UiStrings): string {
    const state = toolState(tool, approval, turn.status);
    const summary = toolSummary(tool, state, s);
    const command = tool.name === 'run_command';
    // Said once: "done" where the line already says what happened, a denial or a stop the card's status names.
    const card = approval && !approval.reportOnly;
    const said =
        (state === 'done' && (command || card)) ||
        (card && state === 'denied' && approval.status === 'denied') ||
        (card && state === 'stopped' && approval.status === 'cancelled');
    const words = said ? undefined : stateText(state, s);
    const status = words ? ` <span class="status">${escapeHtml(words)}</span>` : '';
    if (approval && card) {
        if (approval.status === 'pending') {
            return renderApproval(approval, s);
        }
        const out = command && approval.status === 'approved' ? commandOutput(tool, state, s) : { html: '' };
        return renderDecidedCard(approval, s, {
            summary,
            state: stateName(state),
            stateText: words,
            elapsed: elapsed(tool, state, out.seconds, s),
            outcome: command ? out.html : editOutcome(tool, approval, state, s),
        });
    }
    const report = approval ? renderApproval(approval, s) : '';
    const id = escapeHtml(tool.callId);
    const open = (tag: string, cls: string): string =>
        `<${tag} class="${cls} is-${stateName(state)}" data-call-id="${id}" data-state="${stateName(state)}">`;
    if (command) {
        const out = commandOutput(tool, state, s);
        return (
            `${open('div', 'tool command')}<div class="run"><span class="tool-summary">${summary}</span>` +
            `${elapsed(tool, state, out.seconds, s)}${status}</div>${report}${out.html}</div>`
        );
    }
    const args = summarizes(tool.name)
        ? ''
        : `<div class="label">${escapeHtml(s.toolArguments)}</div><pre>${escapeHtml(prettyJson(tool.arguments))}</pre>`;
    const result =
        tool.result === undefined ? '' : `<div class="label">${escapeHtml(s.toolResult)}</div><pre>${escapeHtml(tool.result)}</pre>`;
    return `${open('details', 'tool')}<summary><span class="tool-summary">${summary}</span>${status}</summary>${report}${args}${result}</details>`;
}

const ACTION_LABEL: Record<FailureAction, keyof UiStrings> = {
    retry: 'actionRetry',
    setApiKey: 'actionSetApiKey',
    openSettings: 'actionOpenSettings',
    showOutput: 'actionShowOutput',
};

/** A failed turn: the message (inline code rendered) and the buttons that fix what failed. */
function renderError(turn: ChatTurn, s: UiStrings): string {
    const buttons = failureActions(turn.errorKind ?? 'other')
        .filter((a) => a !== 'retry' || (turn.user !== '' && !turn.restored))
        .map(
            (a) =>
                `<button type="button" class="${a === 'retry' ? '' : 'secondary'}" data-action="${a}" data-turn="${turn.id}" ` +
                `data-key="${a}:${turn.id}">${escapeHtml(s[ACTION_LABEL[a]])}</button>`,
        )
        .join(' ');
    return (
        `<div class="error" role="alert"><div class="error-text">${inlineCode(fmt(s.errorPrefix, turn.error ?? ''))}</div>` +
        `<div class="error-actions">${buttons}</div></div>`
    );
}

function renderPart(part: TurnPart, s: UiStrings, md: MarkdownIt, sanitize: Sanitize): string {
    switch (part.kind) {
        case 'text':
            return `<div class="markdown">${renderMarkdown(md, part.text, sanitize)}</div>`;
        case 'tool':
            return ''; // rendered with its approval card by renderTurn
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
            return `<div class="notice provider-error" role="status">${inlineCode(fmt(s.providerError, part.provider, part.message))}</div>`;
        case 'note': {
            const label = part.role === 'recalled' ? s.noteRecalled : fmt(s.noteOther, part.role);
            return `<details class="note"><summary>${escapeHtml(label)}</summary><pre>${escapeHtml(part.text)}</pre></details>`;
        }
    }
    return '';
}

/** One turn: the user's message (escaped, never Markdown) and the assistant's parts in arrival order. */
export function renderTurn(turn: ChatTurn, s: UiStrings, md: MarkdownIt, sanitize: Sanitize): string {
    const approvals = new Map<string, ApprovalPart>();
    const tools = new Set<string>();
    for (const p of turn.parts) {
        if (p.kind === 'approval') {
            approvals.set(p.callId, p);
        } else if (p.kind === 'tool') {
            tools.add(p.callId);
        }
    }
    const parts = turn.parts
        .map((p) => {
            if (p.kind === 'tool') {
                return renderTool(p, approvals.get(p.callId), turn, s);
            }
            if (p.kind === 'approval' && tools.has(p.callId)) {
                return ''; // shown with its tool call
            }
            return renderPart(p, s, md, sanitize);
        })
        .join('');
    let tail = '';
    if (turn.status === 'pending' && turn.parts.every((p) => p.kind === 'recall' || p.kind === 'providerError')) {
        tail = `<div class="thinking" aria-busy="true">${escapeHtml(s.thinking)}</div>`;
    } else if (turn.status === 'stopped') {
        tail = `<div class="stopped">${escapeHtml(s.stopped)}</div>`;
    } else if (turn.status === 'error') {
        tail = renderError(turn, s);
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
