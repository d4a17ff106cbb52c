import type * as vscode from 'vscode';

/** The chat's seam to the language server: the LanguageClient in the extension, a scripted client in tests. */

/** The part of the LanguageClient the chat needs (tests drive it with a scripted client). */
export interface RequestClient {
    sendRequest<R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R>;
}

export interface ChatServer {
    ready(): Promise<RequestClient | undefined>;
    readonly onDidStop: vscode.Event<void>;
}
