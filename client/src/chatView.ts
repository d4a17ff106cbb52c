import * as crypto from 'crypto';
import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import { ChatAction, ChatState, initialState, isBusy, reduce } from './chatModel';
import { activeFolder, folderForUri } from './common/folders';
import { getLog, showErrorWithOutput } from './common/log';
import { ServerManager } from './common/server';
import { MemoryModel } from './memoryModel';
import {
    ChatEvent,
    ChatSendResult,
    ChatStartResult,
    ErrorCodes,
    MemoryEditResult,
    MemoryLogResult,
    Methods,
} from './protocol';
import { UiStrings } from './webview/render';

/** The Chat view (a WebviewView): session lifecycle, streaming, Stop, Undo; the webview only renders. */

export const CHAT_VIEW_ID = 'myAgent.chat';

export function uiStrings(): UiStrings {
    const t = vscode.l10n.t;
    return {
        newChat: t('New chat'),
        newChatAria: t('Start a new chat with a fresh memory snapshot'),
        send: t('Send'),
        sendAria: t('Send message (Enter)'),
        stop: t('Stop'),
        stopAria: t('Stop the running reply'),
        inputPlaceholder: t('Ask the agent… (Enter to send, Shift+Enter for a new line)'),
        inputAria: t('Message to the agent'),
        transcriptAria: t('Chat transcript'),
        you: t('You'),
        assistant: t('Agent'),
        toolCall: t('Tool: {0}', '{0}'),
        toolArguments: t('Arguments'),
        toolResult: t('Result'),
        toolOk: t('done'),
        toolFailed: t('failed'),
        toolRunning: t('running…'),
        memoryChanged: t('The agent changed memory: {0} in {1}.', '{0}', '{1}'),
        undo: t('Undo'),
        undoAria: t('Undo this memory change'),
        undone: t('Undone: {0}', '{0}'),
        stopped: t('Stopped.'),
        thinking: t('Thinking…'),
        errorPrefix: t('Error: {0}', '{0}'),
        cacheHitRate: t('Prompt cache hits: {0}', '{0}'),
        memoryOn: t('memory on'),
        memoryOff: t('memory off'),
        noSession: t('No chat session yet: send a message or press New chat.'),
        emptyTranscript: t('Ask the agent anything about this workspace. It remembers what matters in MEMORY.md and USER.md.'),
        showSnapshot: t('Snapshot'),
        showSnapshotAria: t('Show the frozen memory snapshot of this session'),
    };
}

function nonce(): string {
    return crypto.randomBytes(16).toString('base64');
}

/** Validates a message from the webview (its content renders untrusted text, so trust nothing it sends). */
export type WebviewMessage =
    | { type: 'ready' }
    | { type: 'send'; text: string }
    | { type: 'stop' }
    | { type: 'newChat' }
    | { type: 'showSnapshot' }
    | { type: 'undo'; journalId?: string };

export function parseWebviewMessage(raw: unknown): WebviewMessage | undefined {
    if (!raw || typeof raw !== 'object') {
        return undefined;
    }
    const m = raw as Record<string, unknown>;
    switch (m.type) {
        case 'ready':
        case 'stop':
        case 'newChat':
        case 'showSnapshot':
            return { type: m.type };
        case 'send':
            return typeof m.text === 'string' && m.text.trim() !== '' ? { type: 'send', text: m.text } : undefined;
        case 'undo':
            return { type: 'undo', journalId: typeof m.journalId === 'string' ? m.journalId : undefined };
    }
    return undefined;
}

export function isCancelled(e: unknown): boolean {
    return e instanceof ResponseError
        ? e.code === ErrorCodes.requestCancelled
        : e instanceof vscode.CancellationError || (e instanceof Error && e.name === 'Canceled');
}

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
    private view: vscode.WebviewView | undefined;
    private state: ChatState = initialState();
    private sessionFolder: string | undefined;
    private pending: vscode.CancellationTokenSource | undefined;
    private readonly subs: vscode.Disposable[] = [];
    private readonly sessionEmitter = new vscode.EventEmitter<string | undefined>();
    /** Fires with the new session id (undefined when the session is lost) whenever the chat's session changes. */
    readonly onDidChangeSession = this.sessionEmitter.event;

    constructor(
        private readonly extensionUri: vscode.Uri,
        private readonly server: ServerManager,
        private readonly memory: MemoryModel,
    ) {
        this.subs.push(
            server.onDidStop(() => {
                this.pending?.cancel();
                if (this.state.sessionId) {
                    this.sessionFolder = undefined;
                    this.dispatch({
                        type: 'sessionLost',
                        notice: vscode.l10n.t('The server restarted: the next message starts a new session.'),
                    });
                }
            }),
        );
    }

    get sessionId(): string | undefined {
        return this.state.sessionId;
    }

    get folderUri(): string | undefined {
        return this.sessionFolder;
    }

    resolveWebviewView(view: vscode.WebviewView): void {
        this.view = view;
        const media = vscode.Uri.joinPath(this.extensionUri, 'client', 'media');
        const dist = vscode.Uri.joinPath(this.extensionUri, 'client', 'dist');
        view.webview.options = { enableScripts: true, enableCommandUris: false, localResourceRoots: [media, dist] };
        view.webview.html = this.html(view.webview);
        this.subs.push(
            view.webview.onDidReceiveMessage((raw) => this.onMessage(raw)),
            view.onDidDispose(() => {
                this.view = undefined;
            }),
        );
    }

    html(webview: vscode.Webview): string {
        const n = nonce();
        const s = uiStrings();
        const esc = (t: string): string => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
        const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'client', 'dist', 'chat.js'));
        const css = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'client', 'media', 'chat.css'));
        const csp = `default-src 'none'; script-src 'nonce-${n}'; style-src ${webview.cspSource};`;
        return `<!DOCTYPE html>
<html lang="${esc(vscode.env.language)}">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${css.toString()}">
<title>${esc(vscode.l10n.t('My Agent Chat'))}</title>
</head>
<body>
<header class="header">
  <div id="session" class="session" aria-live="polite"></div>
  <div class="actions">
    <button id="snapshot" type="button" class="secondary" aria-label="${esc(s.showSnapshotAria)}" title="${esc(s.showSnapshotAria)}">${esc(s.showSnapshot)}</button>
    <button id="new-chat" type="button" class="secondary" aria-label="${esc(s.newChatAria)}" title="${esc(s.newChatAria)}">${esc(s.newChat)}</button>
  </div>
</header>
<main id="transcript" class="transcript" role="log" aria-live="polite" aria-label="${esc(s.transcriptAria)}" tabindex="0">
  <p class="empty">${esc(s.emptyTranscript)}</p>
</main>
<form id="composer" class="composer">
  <textarea id="input" rows="3" aria-label="${esc(s.inputAria)}" placeholder="${esc(s.inputPlaceholder)}"></textarea>
  <div class="buttons">
    <button id="stop" type="button" class="secondary" aria-label="${esc(s.stopAria)}" title="${esc(s.stopAria)}" disabled>${esc(s.stop)}</button>
    <button id="send" type="submit" aria-label="${esc(s.sendAria)}" title="${esc(s.sendAria)}">${esc(s.send)}</button>
  </div>
</form>
<script nonce="${n}" src="${script.toString()}"></script>
</body>
</html>`;
    }

    private post(): void {
        void this.view?.webview.postMessage({ type: 'state', state: this.state, busy: isBusy(this.state) });
    }

    private dispatch(action: ChatAction): void {
        const before = this.state.sessionId;
        this.state = reduce(this.state, action);
        this.post();
        if (this.state.sessionId !== before) {
            this.sessionEmitter.fire(this.state.sessionId);
        }
    }

    private async onMessage(raw: unknown): Promise<void> {
        const msg = parseWebviewMessage(raw);
        if (!msg) {
            return;
        }
        switch (msg.type) {
            case 'ready':
                void this.view?.webview.postMessage({ type: 'init', strings: uiStrings() });
                this.post();
                return;
            case 'send':
                await this.send(msg.text);
                return;
            case 'stop':
                this.stop();
                return;
            case 'newChat':
                await vscode.commands.executeCommand('myAgent.newChat');
                return;
            case 'showSnapshot':
                await vscode.commands.executeCommand('myAgent.showSnapshot');
                return;
            case 'undo':
                await this.undo(msg.journalId);
                return;
        }
    }

    /** Handles a myAgent/chat/event notification. */
    onEvent(event: ChatEvent): void {
        if (!event || typeof event !== 'object' || event.sessionId !== this.state.sessionId) {
            return;
        }
        this.dispatch({ type: 'event', event });
    }

    /**
     * New chat: forgets the old session and starts one with a freshly frozen snapshot. Returns the error
     * message when it could not start; `quiet` keeps it in the chat instead of a notification.
     */
    async startSession(folder?: vscode.WorkspaceFolder, quiet = false): Promise<string | undefined> {
        const client = await this.server.ready();
        if (!client) {
            return vscode.l10n.t('The My Agent server is not running: see the output.');
        }
        this.stop();
        const old = this.state.sessionId;
        if (old) {
            client.sendRequest(Methods.chatEnd, { sessionId: old }).catch(() => undefined);
        }
        const target = folder ?? activeFolder();
        try {
            const r = await client.sendRequest<ChatStartResult>(
                Methods.chatStart,
                target ? { folder: target.uri.toString() } : {},
            );
            this.sessionFolder = r.folder ?? target?.uri.toString();
            const name = (r.folder && folderForUri(r.folder)?.name) ?? target?.name ?? '';
            this.dispatch({ type: 'sessionStarted', sessionId: r.sessionId, folderName: name, memory: r.memory !== false });
            return undefined;
        } catch (e) {
            const message = vscode.l10n.t('Could not start a chat session: {0}', errorMessage(e));
            getLog().error(message);
            if (!quiet) {
                this.dispatch({ type: 'notice', notice: message });
                void showErrorWithOutput(message);
            }
            return message;
        }
    }

    async send(text: string): Promise<void> {
        if (isBusy(this.state)) {
            return;
        }
        if (!this.state.sessionId) {
            const failure = await this.startSession(undefined, true);
            if (failure) {
                // The error shows in place, under the message the user typed.
                this.dispatch({ type: 'userSent', text });
                this.dispatch({ type: 'failed', message: failure });
                return;
            }
        }
        const client = await this.server.ready();
        const sessionId = this.state.sessionId;
        if (!client || !sessionId) {
            return;
        }
        this.dispatch({ type: 'userSent', text });
        const cts = new vscode.CancellationTokenSource();
        this.pending = cts;
        try {
            const r = await client.sendRequest<ChatSendResult>(Methods.chatSend, { sessionId, message: text }, cts.token);
            if (this.state.sessionId === sessionId) {
                this.dispatch({ type: 'replied', reply: r?.reply ?? '', usage: r?.usage });
            }
        } catch (e) {
            if (this.state.sessionId !== sessionId) {
                return;
            }
            if (cts.token.isCancellationRequested || isCancelled(e)) {
                this.dispatch({ type: 'stopped' });
            } else {
                getLog().warn(`chat/send: ${errorMessage(e)}`);
                this.dispatch({ type: 'failed', message: errorMessage(e) });
            }
        } finally {
            if (this.pending === cts) {
                this.pending = undefined;
            }
            cts.dispose();
        }
    }

    /** Stop: cancels the pending chat/send ($/cancelRequest); the session stays usable. */
    stop(): void {
        if (this.pending) {
            this.pending.cancel();
            this.dispatch({ type: 'stopped' });
        }
    }

    /** Undo for a memory_changed notice: only when that change is still the folder's latest one. */
    async undo(journalId?: string): Promise<void> {
        const client = await this.server.ready();
        if (!client) {
            return;
        }
        const folder = this.sessionFolder ?? activeFolder()?.uri.toString();
        try {
            if (journalId) {
                const log = await client.sendRequest<MemoryLogResult>(Methods.memoryLog, { folder, limit: 1 });
                const latest = log.entries?.[log.entries.length - 1]; // newest last (limit 1: the one record)
                if (latest && latest.id !== journalId) {
                    void vscode.window.showWarningMessage(
                        vscode.l10n.t(
                            'Memory changed again after this edit, so Undo would revert a different change. Use "Undo Last Memory Change" or edit the file.',
                        ),
                    );
                    return;
                }
            }
            const r = await client.sendRequest<MemoryEditResult>(Methods.memoryUndo, { folder });
            if (r.state) {
                this.memory.setState(r.state);
            }
            this.dispatch({ type: 'undone', journalId, message: r.message ?? '' });
        } catch (e) {
            const message = vscode.l10n.t('Undo failed: {0}', errorMessage(e));
            void vscode.window.showErrorMessage(message);
        }
    }

    /** Reveals the view and focuses the input (used by New Chat). */
    async reveal(): Promise<void> {
        await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
        void this.view?.webview.postMessage({ type: 'focusInput' });
    }

    dispose(): void {
        this.pending?.cancel();
        this.subs.forEach((s) => s.dispose());
        this.sessionEmitter.dispose();
    }
}

export function errorMessage(e: unknown): string {
    if (e instanceof ResponseError) {
        return e.message;
    }
    return e instanceof Error ? e.message : String(e);
}
