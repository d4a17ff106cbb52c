/**
 * The chat webview's script (bundled by esbuild into client/dist/chat.js). It renders the state the
 * extension host posts and reports clicks and keys back; it never talks to the server itself.
 */
import DOMPurify from 'dompurify';
import type { ChatState } from '../src/chatModel';
import type { HostMessage, WebviewMessage } from '../src/webview/messages';
import type MarkdownIt from 'markdown-it';
import { renderAttachments, renderBanner, renderHeader, renderHistory, renderNotice, renderPendingBar, renderWelcome } from '../src/webview/panels';
import { pathFromHref } from '../src/webview/pathLinks';
import { createMarkdown, PURIFY_CONFIG, renderTurn } from '../src/webview/render';
import { fmt, UiStrings } from '../src/webview/strings';
import { TurnRenderCache } from '../src/webview/turnCache';

interface VsCodeApi {
    postMessage(message: WebviewMessage): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
let md: MarkdownIt | undefined;
const sanitize = (html: string): string => DOMPurify.sanitize(html, PURIFY_CONFIG) as unknown as string;

// Links open through VS Code (which asks before leaving), never inside the webview.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
        node.setAttribute('rel', 'noopener noreferrer');
    }
});

const byId = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const session = byId<HTMLDivElement>('session');
const noticeLine = byId<HTMLDivElement>('notice');
const banner = byId<HTMLDivElement>('banner');
const transcript = byId<HTMLElement>('transcript');
const historyPanel = byId<HTMLElement>('history-panel');
const pendingBar = byId<HTMLDivElement>('pending');
const chips = byId<HTMLDivElement>('chips');
const form = byId<HTMLFormElement>('composer');
const input = byId<HTMLTextAreaElement>('input');
const send = byId<HTMLButtonElement>('send');
const stop = byId<HTMLButtonElement>('stop');
const attach = byId<HTMLButtonElement>('attach');
const newChat = byId<HTMLButtonElement>('new-chat');
const snapshot = byId<HTMLButtonElement>('snapshot');
const compact = byId<HTMLButtonElement>('compact');
const history = byId<HTMLButtonElement>('history');

let strings: UiStrings | undefined;
let last: { state: ChatState; busy: boolean } | undefined;
/** Each turn rendered once per distinct content, so an update touches only the turns that changed (focus survives). */
let turns: TurnRenderCache | undefined;
const shown = new Map<HTMLElement, string>();
/** Approval cards already seen waiting: a new one is scrolled into view (and focused when the chat has focus). */
const seenPending = new Set<string>();

const post = (message: WebviewMessage): void => vscode.postMessage(message);

// ---- the draft: kept by the host so a reload never loses it --------------------------------------------------

let draftTimer: ReturnType<typeof setTimeout> | undefined;
function saveDraft(): void {
    clearTimeout(draftTimer);
    draftTimer = setTimeout(() => post({ type: 'draft', text: input.value }), 300);
}
input.addEventListener('input', saveDraft);

function submit(): void {
    const text = input.value;
    if (text.trim() === '' || send.disabled) {
        return;
    }
    clearTimeout(draftTimer);
    post({ type: 'send', text });
    input.value = '';
}

form.addEventListener('submit', (e) => {
    e.preventDefault();
    submit();
});

input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        submit();
    } else if (e.key === 'Escape' && !stop.disabled) {
        e.preventDefault();
        post({ type: 'stop' });
    }
});

stop.addEventListener('click', () => post({ type: 'stop' }));
newChat.addEventListener('click', () => post({ type: 'newChat' }));
snapshot.addEventListener('click', () => post({ type: 'showSnapshot' }));
attach.addEventListener('click', () => post({ type: 'attach' }));
compact.addEventListener('click', () => post({ type: 'compact' }));
history.addEventListener('click', () => post({ type: last?.state.history.open ? 'closeHistory' : 'showHistory' }));
historyPanel.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
        e.preventDefault();
        post({ type: 'closeHistory' });
        history.focus();
    }
});

/**
 * A link in the agent's text: a workspace path (a relative href) opens the file in the editor through the
 * host; web links are left to VS Code, which asks before it opens a browser.
 */
function openPathLink(e: MouseEvent): boolean {
    const link = (e.target as HTMLElement | null)?.closest<HTMLAnchorElement>('a[href]');
    const ref = link ? pathFromHref(link.getAttribute('href') ?? '') : undefined;
    if (!ref) {
        return false;
    }
    e.preventDefault();
    e.stopPropagation(); // VS Code's own link handler would resolve it against the webview's origin
    post({ type: 'openPath', path: ref.path, ...(ref.line ? { line: ref.line } : {}), ...(ref.endLine ? { endLine: ref.endLine } : {}) });
    return true;
}

/** Every button inside rendered HTML carries data-action; one listener serves them all. */
document.addEventListener('click', (e) => {
    if (openPathLink(e)) {
        return;
    }
    const button = (e.target as HTMLElement | null)?.closest<HTMLButtonElement>('button[data-action]');
    if (!button || button.disabled) {
        return;
    }
    const d = button.dataset;
    switch (d.action) {
        case 'approve':
        case 'deny':
            if (d.callId) {
                button.closest('.approval')?.querySelectorAll<HTMLButtonElement>('button[data-action="approve"], button[data-action="deny"]')
                    .forEach((b) => (b.disabled = true));
                post({ type: 'approve', callId: d.callId, approved: d.action === 'approve' });
            }
            return;
        case 'openDiff':
            if (d.callId) {
                post({ type: 'openDiff', callId: d.callId });
            }
            return;
        case 'undo':
            button.disabled = true;
            post({ type: 'undo', journalId: d.journalId });
            return;
        case 'detach':
            if (d.chipId) {
                post({ type: 'detach', id: d.chipId });
                input.focus();
            }
            return;
        case 'resume':
            if (d.sessionId) {
                post({ type: 'resume', sessionId: d.sessionId });
            }
            return;
        case 'deleteSession':
            if (d.sessionId) {
                post({ type: 'deleteSession', sessionId: d.sessionId });
            }
            return;
        case 'closeHistory':
            post({ type: 'closeHistory' });
            history.focus();
            return;
        case 'showPending': {
            const card = Array.from(transcript.querySelectorAll<HTMLElement>('.approval.pending')).find(
                (c) => c.dataset.callId === d.callId,
            );
            card?.scrollIntoView({ block: 'center' });
            card?.querySelector<HTMLButtonElement>('button[data-action="approve"]')?.focus();
            return;
        }
        case 'openChange':
            if (d.callId) {
                post({ type: 'openChange', callId: d.callId });
            }
            return;
        case 'retry':
            if (d.turn) {
                post({ type: 'retry', turnId: Number(d.turn) });
            }
            return;
        case 'setApiKey':
        case 'openSettings':
        case 'showOutput':
        case 'manageTrust':
            post({ type: 'action', action: d.action });
            return;
    }
});

// ---- a running command's clock -----------------------------------------------------------------------------

function tick(): void {
    if (!strings) {
        return;
    }
    const now = Date.now();
    for (const el of Array.from(document.querySelectorAll<HTMLElement>('.elapsed[data-started]'))) {
        const seconds = Math.max(0, Math.floor((now - Number(el.dataset.started)) / 1000));
        const text = fmt(strings.seconds, String(seconds));
        if (el.textContent !== text) {
            el.textContent = text;
        }
    }
}
setInterval(tick, 1000);

// ---- a card that arrives is seen (and, when the chat has the focus, focused) --------------------------------

/** The user is typing a message: a card must not take the keys they type. */
function typing(): boolean {
    return document.activeElement === input && input.value.trim() !== '';
}

function focusCard(card: HTMLElement): void {
    if (document.hasFocus() && !typing()) {
        card.focus({ preventScroll: true });
    }
}

function showNewCards(): void {
    const pending = Array.from(transcript.querySelectorAll<HTMLElement>('.approval.pending[data-call-id]'));
    const fresh = pending.filter((c) => !seenPending.has(c.dataset.callId ?? ''));
    for (const card of fresh) {
        seenPending.add(card.dataset.callId ?? '');
    }
    if (fresh.length) {
        fresh[0].scrollIntoView({ block: 'nearest' });
        focusCard(fresh[0]);
    }
}

// Focus Chat (the keybinding, the palette) while a card waits: the card gets the focus. A click keeps the
// focus where the user clicked (the pointer comes down just before the window gets the focus).
let lastPointerDown = 0;
window.addEventListener('pointerdown', () => (lastPointerDown = Date.now()), true);
window.addEventListener('focus', () => {
    post({ type: 'focus', focused: true });
    if (Date.now() - lastPointerDown < 500) {
        return;
    }
    const card = transcript.querySelector<HTMLElement>('.approval.pending');
    if (card && !card.contains(document.activeElement)) {
        focusCard(card);
    }
});
window.addEventListener('blur', () => post({ type: 'focus', focused: false }));

// ---- rendering ------------------------------------------------------------------------------------------------

/** Replaces a container's HTML only when it changed, keeping the focused button (by its data-key). */
function setHtml(el: HTMLElement, html: string): void {
    if (shown.get(el) === html) {
        return;
    }
    const active = document.activeElement as HTMLElement | null;
    const key = active && el.contains(active) ? active.dataset.key : undefined;
    // Keep open <details> open across streaming updates.
    const details = Array.from(el.querySelectorAll('details'));
    const open = new Set(details.filter((d) => d.open).map((d) => details.indexOf(d)));
    el.innerHTML = html;
    Array.from(el.querySelectorAll('details')).forEach((d, i) => {
        if (open.has(i)) {
            d.open = true;
        }
    });
    shown.set(el, html);
    if (key) {
        const again = Array.from(el.querySelectorAll<HTMLElement>('[data-key]')).find((x) => x.dataset.key === key);
        again?.focus();
    }
}

function renderTranscript(state: ChatState, s: UiStrings): void {
    const nearBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
    const markdown = (md ??= createMarkdown((path) => fmt(s.openPathTitle, path)));
    const cache = (turns ??= new TurnRenderCache((turn) => renderTurn(turn, s, markdown, sanitize)));
    if (state.turns.length === 0) {
        cache.retain(new Set());
        let welcome = transcript.querySelector<HTMLElement>(':scope > .welcome');
        if (!welcome) {
            transcript.replaceChildren();
            welcome = document.createElement('div');
            welcome.className = 'welcome';
            transcript.append(welcome);
        }
        setHtml(welcome, renderWelcome(state, s));
        return;
    }
    transcript.querySelector(':scope > .welcome')?.remove();
    transcript.querySelector(':scope > p.empty')?.remove();
    const ids = new Set(state.turns.map((t) => t.id));
    cache.retain(ids);
    const elements = new Map<number, HTMLElement>();
    for (const el of Array.from(transcript.querySelectorAll<HTMLElement>(':scope > .turn'))) {
        if (!ids.has(Number(el.dataset.turn))) {
            el.remove();
            shown.delete(el);
        } else {
            elements.set(Number(el.dataset.turn), el);
        }
    }
    let added = false;
    for (const turn of state.turns) {
        const { html, changed } = cache.render(turn);
        let el = elements.get(turn.id);
        if (!el) {
            el = document.createElement('section');
            el.className = turn.restored ? 'turn restored' : 'turn';
            el.dataset.turn = String(turn.id);
            transcript.append(el);
            added = true;
        }
        if (changed || shown.get(el) !== html) {
            setHtml(el, html);
        }
    }
    if (nearBottom || added) {
        transcript.scrollTop = transcript.scrollHeight;
    }
    showNewCards();
    tick();
}

function render(): void {
    if (!strings || !last) {
        return;
    }
    const { state, busy } = last;
    const s = strings;
    const turnRunning = state.turns[state.turns.length - 1]?.status === 'pending';
    setHtml(session, renderHeader(state, s));
    setHtml(noticeLine, renderNotice(state));
    noticeLine.hidden = !state.notice;
    setHtml(banner, renderBanner(state, s));
    banner.hidden = !state.setup || state.setup.trusted;
    send.disabled = busy;
    stop.disabled = !turnRunning;
    compact.disabled = busy || !state.sessionId || state.turns.length === 0;
    const wasOpen = !historyPanel.hidden;
    historyPanel.hidden = !state.history.open;
    history.setAttribute('aria-expanded', String(state.history.open));
    historyPanel.setAttribute('aria-busy', String(state.history.loading));
    setHtml(historyPanel, renderHistory(state.history, s));
    if (state.history.open && !wasOpen) {
        (
            historyPanel.querySelector<HTMLButtonElement>('button[data-action="resume"]') ??
            historyPanel.querySelector<HTMLButtonElement>('button[data-action="closeHistory"]')
        )?.focus();
    }
    setHtml(chips, renderAttachments(state.attachments, s));
    const bar = renderPendingBar(state, s);
    pendingBar.hidden = bar === '';
    setHtml(pendingBar, bar);
    renderTranscript(state, s);
}

window.addEventListener('message', (event: MessageEvent) => {
    const msg = event.data as HostMessage | undefined;
    switch (msg?.type) {
        case 'init':
            strings = msg.strings;
            if (input.value === '' && msg.draft) {
                input.value = msg.draft;
            }
            render();
            return;
        case 'state':
            last = { state: msg.state, busy: msg.busy === true };
            render();
            return;
        case 'focusInput':
            input.focus();
            return;
        case 'restoreDraft':
            if (input.value.trim() === '') {
                input.value = msg.text;
                saveDraft();
            }
            return;
    }
});

post({ type: 'ready' });
