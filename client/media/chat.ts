/**
 * The chat webview's script (bundled by esbuild into client/dist/chat.js). It renders the state the
 * extension host posts and reports clicks and keys back; it never talks to the server itself.
 */
import DOMPurify from 'dompurify';
import type { ChatState } from '../src/chatModel';
import { createMarkdown, PURIFY_CONFIG, renderHeader, renderTurn, UiStrings } from '../src/webview/render';

interface VsCodeApi {
    postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const md = createMarkdown();
const sanitize = (html: string): string => DOMPurify.sanitize(html, PURIFY_CONFIG) as unknown as string;

// Links open through VS Code (which asks before leaving), never inside the webview.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
        node.setAttribute('rel', 'noopener noreferrer');
    }
});

const byId = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const session = byId<HTMLDivElement>('session');
const transcript = byId<HTMLElement>('transcript');
const form = byId<HTMLFormElement>('composer');
const input = byId<HTMLTextAreaElement>('input');
const send = byId<HTMLButtonElement>('send');
const stop = byId<HTMLButtonElement>('stop');
const newChat = byId<HTMLButtonElement>('new-chat');
const snapshot = byId<HTMLButtonElement>('snapshot');

let strings: UiStrings | undefined;
let last: { state: ChatState; busy: boolean } | undefined;
/** The HTML each turn element shows, so an update re-renders only the turns that changed (focus survives). */
const rendered = new Map<number, string>();

function submit(): void {
    const text = input.value;
    if (text.trim() === '' || send.disabled) {
        return;
    }
    vscode.postMessage({ type: 'send', text });
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
        vscode.postMessage({ type: 'stop' });
    }
});

stop.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
newChat.addEventListener('click', () => vscode.postMessage({ type: 'newChat' }));
snapshot.addEventListener('click', () => vscode.postMessage({ type: 'showSnapshot' }));

transcript.addEventListener('click', (e) => {
    const target = e.target as HTMLElement | null;
    const button = target?.closest('button[data-action="undo"]') as HTMLButtonElement | null;
    if (button) {
        button.disabled = true;
        vscode.postMessage({ type: 'undo', journalId: button.dataset.journalId });
    }
});

function render(): void {
    if (!strings || !last) {
        return;
    }
    const { state, busy } = last;
    session.innerHTML = renderHeader(state, strings);
    send.disabled = busy;
    stop.disabled = !busy;
    const nearBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;

    if (state.turns.length === 0) {
        rendered.clear();
        transcript.replaceChildren();
        const empty = document.createElement('p');
        empty.className = 'empty';
        empty.textContent = strings.emptyTranscript;
        transcript.append(empty);
        return;
    }
    transcript.querySelector(':scope > p.empty')?.remove();
    const ids = new Set(state.turns.map((t) => t.id));
    for (const el of Array.from(transcript.querySelectorAll<HTMLElement>(':scope > .turn'))) {
        if (!ids.has(Number(el.dataset.turn))) {
            el.remove();
            rendered.delete(Number(el.dataset.turn));
        }
    }
    for (const turn of state.turns) {
        const html = renderTurn(turn, strings, md, sanitize);
        let el = transcript.querySelector<HTMLElement>(`:scope > .turn[data-turn="${turn.id}"]`);
        if (!el) {
            el = document.createElement('section');
            el.className = 'turn';
            el.dataset.turn = String(turn.id);
            transcript.append(el);
        }
        if (rendered.get(turn.id) !== html) {
            // Keep open <details> open across streaming updates.
            const open = new Set(
                Array.from(el.querySelectorAll('details[open]')).map((d) => Array.from(el!.querySelectorAll('details')).indexOf(d as HTMLDetailsElement)),
            );
            el.innerHTML = html;
            Array.from(el.querySelectorAll('details')).forEach((d, i) => {
                if (open.has(i)) {
                    d.open = true;
                }
            });
            rendered.set(turn.id, html);
        }
    }
    if (nearBottom) {
        transcript.scrollTop = transcript.scrollHeight;
    }
}

window.addEventListener('message', (event: MessageEvent) => {
    const msg = event.data as { type?: string; strings?: UiStrings; state?: ChatState; busy?: boolean };
    if (msg?.type === 'init' && msg.strings) {
        strings = msg.strings;
        render();
    } else if (msg?.type === 'state' && msg.state) {
        last = { state: msg.state, busy: msg.busy === true };
        render();
    } else if (msg?.type === 'focusInput') {
        input.focus();
    }
});

vscode.postMessage({ type: 'ready' });
