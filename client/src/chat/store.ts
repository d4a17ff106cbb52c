import * as vscode from 'vscode';
import { ChatAction, ChatState, initialState, reduce } from '../chatModel';

/** The chat's one state object: every change goes through the pure reducer, and listeners hear of it. */
export class ChatStore implements vscode.Disposable {
    private current: ChatState = initialState();
    private readonly changed = new vscode.EventEmitter<ChatState>();
    private readonly sessionChanged = new vscode.EventEmitter<string | undefined>();
    readonly onDidChange = this.changed.event;
    /** Fires with the new session id (undefined when the session is lost) whenever the chat's session changes. */
    readonly onDidChangeSession = this.sessionChanged.event;

    get state(): ChatState {
        return this.current;
    }

    dispatch(action: ChatAction): void {
        const before = this.current.sessionId;
        this.current = reduce(this.current, action);
        this.changed.fire(this.current);
        if (this.current.sessionId !== before) {
            this.sessionChanged.fire(this.current.sessionId);
        }
    }

    dispose(): void {
        this.changed.dispose();
        this.sessionChanged.dispose();
    }
}
