import * as vscode from 'vscode';
import { ChatAction, ChatState, initialState, isBusy, reduce } from './chatModel';
import { activeFolder, folderForUri } from './common/folders';
import { getLog, showErrorWithOutput } from './common/log';
import { ServerManager } from './common/server';
import { MemoryModel } from './memoryModel';
import {
    ChatEvent,
    ChatSendResult,
    ChatStartResult,
    MemoryEditResult,
    MemoryLogResult,
    Methods,
} from './protocol';
import { chatHtml } from './chat/html';
import { uiStrings } from './chat/strings';
import { errorMessage, isCancelled } from './common/errors';
import { parseWebviewMessage } from './webview/messages';

/** The Chat view (a WebviewView): session lifecycle, streaming, Stop, Undo; the webview only renders. */

export const CHAT_VIEW_ID = 'myAgent.chat';

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
        return chatHtml(webview, this.extensionUri, uiStrings());
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
