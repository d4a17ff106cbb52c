/**
 * Approval cards: what the agent wants to do (an edit's file and diff, a command line and its folder, a
 * memory write's sources and diff), Approve / Deny / Open Diff while it waits, and the outcome afterwards.
 * Every string from the server is escaped; pure (no DOM), shared by the webview bundle and the unit tests.
 */
import type { ApprovalPart } from '../chatModel';
import { MemoryCardParts, memoryCardParts, renderMemorySources } from './memorySources';
import { escapeHtml, fmt, inlineCode, UiStrings } from './strings';

export interface DiffStats {
    added: number;
    removed: number;
}

/** Lines added and removed by a unified diff (file headers `---` / `+++` do not count). */
export function diffStats(diff: string): DiffStats {
    let added = 0;
    let removed = 0;
    for (const line of diff.split('\n')) {
        if (line.startsWith('+') && !line.startsWith('+++')) {
            added++;
        } else if (line.startsWith('-') && !line.startsWith('---')) {
            removed++;
        }
    }
    return { added, removed };
}

/** How many diff lines a card shows; the rest is one click away in the diff editor. */
export const MAX_DIFF_LINES = 300;

function lineClass(line: string): string {
    if (line.startsWith('+++') || line.startsWith('---')) {
        return 'meta';
    }
    if (line.startsWith('@@')) {
        return 'hunk';
    }
    if (line.startsWith('+')) {
        return 'add';
    }
    if (line.startsWith('-')) {
        return 'del';
    }
    return 'ctx';
}

/** A unified diff as a `<pre>` with one classed span per line, cut after `maxLines` with a note. */
export function renderDiff(diff: string, s: UiStrings, maxLines = MAX_DIFF_LINES): string {
    const lines = diff.replace(/\n$/, '').split('\n');
    const shown = lines.slice(0, maxLines);
    const body = shown.map((l) => `<span class="${lineClass(l)}">${escapeHtml(l)}</span>`).join('\n');
    const more =
        lines.length > maxLines
            ? `<div class="diff-more">${escapeHtml(fmt(s.diffMore, String(lines.length - maxLines)))}</div>`
            : '';
    return `<pre class="diff">${body}</pre>${more}`;
}

function kindLabel(part: ApprovalPart, s: UiStrings): string {
    switch (part.approvalKind) {
        case 'edit':
            return s.kindEdit;
        case 'command':
            return s.kindCommand;
        case 'memory':
            return s.kindMemory;
    }
    return s.kindAction;
}

export function statusText(part: ApprovalPart, s: UiStrings): string {
    switch (part.status) {
        case 'pending':
            return s.statusPending;
        case 'approved':
            return part.reason === 'setting' ? s.statusBySetting : s.statusApproved;
        case 'denied':
            return part.reason === 'error' ? s.statusError : s.statusDenied;
        case 'cancelled':
            return s.statusCancelled;
    }
}

function heading(part: ApprovalPart, s: UiStrings): string {
    const target = part.path ?? part.title;
    switch (part.approvalKind) {
        case 'edit':
            return fmt(s.approvalEdit, target);
        case 'command':
            return s.approvalCommand;
        case 'memory':
            return fmt(s.approvalMemory, target.split(/[\\/]/).pop() ?? target);
    }
    return part.title;
}

function button(action: string, part: ApprovalPart, label: string, aria: string, cls = ''): string {
    const id = escapeHtml(part.callId);
    return (
        `<button type="button" class="${cls}" data-action="${action}" data-call-id="${id}" ` +
        `data-key="${action}:${id}" aria-label="${escapeHtml(aria)}">${escapeHtml(label)}</button>`
    );
}

function statsHtml(diff: string, s: UiStrings): string {
    const stats = diffStats(diff);
    return `<span class="diff-stats" aria-label="${escapeHtml(
        fmt(s.diffSummary, String(stats.added), String(stats.removed)),
    )}"><span class="add">+${stats.added}</span> <span class="del">−${stats.removed}</span></span>`;
}

function cardOpen(part: ApprovalPart, label: string, extra = ''): string {
    const id = escapeHtml(part.callId);
    return (
        `<div class="approval approval-${escapeHtml(part.approvalKind ?? 'action')} ${part.status}${extra}" role="group" tabindex="-1" ` +
        `aria-label="${escapeHtml(label)}" data-call-id="${id}" data-key="card:${id}"`
    );
}

/** What a decided card shows of its call: the one-line summary, its state, and what it did (output, lines). */
export interface CallView {
    /** HTML: "Ran <code>pytest -q</code>: exit 1". */
    summary: string;
    /** The call's state (a class and `data-state`), and its words when there is something to say. */
    state: string;
    stateText?: string;
    /** HTML: the running clock or the time the call took. */
    elapsed: string;
    /** HTML under the head: a command's output, an edit's changed lines. */
    outcome: string;
}

/**
 * A decided card with its call: one line (what the call did, the decision) and what came of it. The
 * command line, folder and buttons that were needed to decide are gone; an edit keeps its diff (collapsed).
 */
export function renderDecidedCard(part: ApprovalPart, s: UiStrings, call: CallView): string {
    const status = escapeHtml(statusText(part, s));
    let body = '';
    if (part.approvalKind === 'edit' || part.approvalKind === 'memory') {
        // A memory write keeps its sources with its diff (collapsed): what the user decided on.
        const memory = part.approvalKind === 'memory' ? memoryCardParts(part.detail, part.sources) : undefined;
        const diff = memory?.diff ?? part.detail;
        const sources = memory ? renderMemorySources(memory, s, true) : '';
        body =
            `<div class="approval-file"><code>${escapeHtml(part.path ?? part.title)}</code> ${statsHtml(diff, s)}</div>` +
            (diff
                ? `<details class="approval-diff"><summary>${escapeHtml(s.diffInline)}</summary>${sources}${renderDiff(diff, s)}</details>`
                : '');
    }
    // What was refused can still be looked at side by side; an approved change has nothing left to compare.
    const diff =
        part.canDiff && part.status !== 'approved'
            ? `<div class="approval-actions">${button('openDiff', part, s.openDiff, s.openDiffAria, 'secondary')}</div>`
            : '';
    const state = call.stateText ? ` <span class="status">${escapeHtml(call.stateText)}</span>` : '';
    return (
        `${cardOpen(part, heading(part, s), ` decided is-${call.state}`)} data-state="${call.state}">` +
        `<div class="approval-head"><span class="approval-title tool-summary">${call.summary}</span>` +
        `<span class="approval-meta">${call.elapsed}${state} <span class="approval-status" role="status">${status}</span></span></div>` +
        `${body}${diff}${call.outcome}</div>`
    );
}

/** One card. While pending it offers Approve, Deny and (for a file change) Open Diff; then it shows the outcome. */
export function renderApproval(part: ApprovalPart, s: UiStrings): string {
    const status = escapeHtml(statusText(part, s));
    if (part.reportOnly) {
        return (
            `<div class="approval report ${part.status}" role="status">` +
            `<span class="approval-kind">${escapeHtml(kindLabel(part, s))}</span> ` +
            `<span class="approval-status">${status}</span></div>`
        );
    }
    const head = heading(part, s);
    let body = '';
    let memory: MemoryCardParts | undefined;
    switch (part.approvalKind) {
        case 'command':
            body =
                `<pre class="command">${escapeHtml(part.detail)}</pre>` +
                (part.cwd ? `<div class="approval-cwd">${escapeHtml(fmt(s.approvalIn, part.cwd))}</div>` : '');
            break;
        case 'memory':
            memory = memoryCardParts(part.detail, part.sources);
            body =
                renderMemorySources(memory, s) +
                `<div class="approval-file"><code>${escapeHtml(part.path ?? '')}</code> ${statsHtml(memory.diff, s)}</div>${renderDiff(memory.diff, s)}`;
            break;
        default:
            body =
                `<div class="approval-file"><code>${escapeHtml(part.path ?? part.title)}</code> ${statsHtml(part.detail, s)}</div>` +
                (part.detail ? `<details class="approval-diff"><summary>${escapeHtml(s.diffInline)}</summary>${renderDiff(part.detail, s)}</details>` : '');
    }
    // After an approval both sides of the diff would be the same.
    const diffButton = part.canDiff && part.status !== 'approved' ? ' ' + button('openDiff', part, s.openDiff, s.openDiffAria, 'secondary') : '';
    const actions =
        part.status === 'pending'
            ? `<div class="approval-actions">${button('approve', part, s.approve, fmt(s.approveAria, head))} ` +
              `${button('deny', part, s.deny, fmt(s.denyAria, head), 'secondary')}${diffButton}</div>`
            : diffButton
              ? `<div class="approval-actions">${diffButton.trim()}</div>`
              : '';
    // The server's title ("Run `pytest -q`", "Edit src/app.py") repeats what the card shows; a memory
    // write's says which edit it is (and where its text may come from, which the sources list shows).
    const shownTitle = memory && (memory.sources || memory.lines) ? part.title.split(' · ')[0] : part.title;
    const title =
        shownTitle && shownTitle !== head && shownTitle !== part.path && part.approvalKind !== 'command' && part.approvalKind !== 'edit'
            ? `<div class="approval-sub">${inlineCode(shownTitle)}</div>`
            : '';
    return (
        `${cardOpen(part, head)}>` +
        `<div class="approval-head"><span class="approval-title">${inlineCode(head)}</span> ` +
        `<span class="approval-status" role="status">${status}</span></div>${title}${body}${actions}</div>`
    );
}
