import * as vscode from 'vscode';
import { isBusy } from './chatModel';
import { ChatController, ChatSurface } from './chat/controller';
import { chatHtml } from './chat/html';
import { uiStrings } from './chat/strings';
import { HostMessage, parseWebviewMessage, WebviewMessage } from './webview/messages';

/**
 * The Chat view (a WebviewView): posts the controller's state to the webview and turns the webview's
 * (validated) messages into controller calls. The webview only renders; the draft in its message box is
 * kept in workspaceState so a reload or a failed restore never loses it.
 */

export const CHAT_VIEW_ID = 'myAgent.chat';

/** workspaceState key of the message box's text. */
export const DRAFT_KEY = 'myAgent.chat.draft';

export class ChatViewProvider implements vscode.WebviewViewProvider, ChatSurface, vscode.Disposable {
    private view: vscode.WebviewView | undefined;
    private readonly subs: vscode.Disposable[] = [];
    private viewSubs: vscode.Disposable[] = [];
    /** The view was shown at least once in this window (the restore of the last session waits for it). */
    shown = false;

    constructor(
        private readonly extensionUri: vscode.Uri,
        private readonly chat: ChatController,
        private readonly memento: vscode.Memento,
    ) {
        chat.attachSurface(this);
        this.subs.push(chat.store.onDidChange(() => this.postState()));
    }

    resolveWebviewView(view: vscode.WebviewView): void {
        this.viewSubs.forEach((s) => s.dispose());
        this.view = view;
        this.shown = true;
        const media = vscode.Uri.joinPath(this.extensionUri, 'client', 'media');
        const dist = vscode.Uri.joinPath(this.extensionUri, 'client', 'dist');
        view.webview.options = { enableScripts: true, enableCommandUris: false, localResourceRoots: [media, dist] };
        view.webview.html = chatHtml(view.webview, this.extensionUri, uiStrings());
        this.viewSubs = [
            view.webview.onDidReceiveMessage((raw) => this.onMessage(raw)),
            view.onDidDispose(() => {
                this.view = undefined;
                this.chat.setFocused(false);
            }),
        ];
        void this.chat.restoreLast();
    }

    private post(message: HostMessage): void {
        void this.view?.webview.postMessage(message);
    }

    private postState(): void {
        const state = this.chat.store.state;
        this.post({ type: 'state', state, busy: isBusy(state) });
    }

    /** Routes one message from the webview; anything that fails validation is dropped. */
    async onMessage(raw: unknown): Promise<void> {
        const msg = parseWebviewMessage(raw);
        if (msg) {
            await this.handle(msg);
        }
    }

    private async handle(msg: WebviewMessage): Promise<void> {
        switch (msg.type) {
            case 'ready':
                this.post({ type: 'init', strings: uiStrings(), draft: this.memento.get<string>(DRAFT_KEY) ?? '' });
                this.postState();
                return;
            case 'draft':
                await this.memento.update(DRAFT_KEY, msg.text || undefined);
                return;
            case 'send':
                await this.memento.update(DRAFT_KEY, undefined);
                await this.chat.send(msg.text);
                return;
            case 'stop':
                this.chat.stop();
                return;
            case 'newChat':
                await vscode.commands.executeCommand('myAgent.newChat');
                return;
            case 'showSnapshot':
                await vscode.commands.executeCommand('myAgent.showSnapshot');
                return;
            case 'undo':
                await this.chat.undo(msg.journalId);
                return;
            case 'approve':
                this.chat.decide(msg.callId, msg.approved);
                return;
            case 'openDiff':
                await this.chat.openDiff(msg.callId);
                return;
            case 'attach':
                this.chat.attachActiveEditor();
                return;
            case 'detach':
                this.chat.detach(msg.id);
                return;
            case 'compact':
                await this.chat.compact();
                return;
            case 'showHistory':
                await this.chat.openHistory();
                return;
            case 'closeHistory':
                this.chat.closeHistory();
                return;
            case 'resume':
                if (await this.chat.resume(msg.sessionId)) {
                    this.chat.closeHistory();
                }
                return;
            case 'deleteSession':
                await this.chat.deleteSession(msg.sessionId);
                return;
            case 'retry':
                await this.chat.retry(msg.turnId);
                return;
            case 'action':
                await this.chat.runAction(msg.action);
                return;
            case 'openChange':
                await this.chat.openChange(msg.callId);
                return;
            case 'openPath':
                await this.chat.openPath({ path: msg.path, line: msg.line, endLine: msg.endLine });
                return;
            case 'focus':
                this.chat.setFocused(msg.focused);
                return;
        }
    }

    /** Reveals the view (used by New Chat, Attach, History); `focusInput` puts the cursor in the message box. */
    async reveal(focusInput: boolean): Promise<void> {
        if (this.view) {
            this.view.show(!focusInput);
        } else {
            await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
        }
        if (focusInput) {
            this.post({ type: 'focusInput' });
        }
    }

    showQuietly(): void {
        if (this.view) {
            if (!this.view.visible) {
                this.view.show(true);
            }
        } else {
            // Never shown in this window: opening it is the only way the user can see the card.
            void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
        }
    }

    restoreDraft(text: string): void {
        this.post({ type: 'restoreDraft', text });
    }

    dispose(): void {
        this.chat.attachSurface(undefined);
        this.viewSubs.forEach((s) => s.dispose());
        this.subs.forEach((s) => s.dispose());
    }
}
