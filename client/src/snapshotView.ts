import * as vscode from 'vscode';
import { errorMessage } from './common/errors';
import { ServerManager } from './common/server';
import { ChatStartResult, Methods, SystemPromptResult } from './protocol';

/**
 * Show Frozen Snapshot: the session's exact system prompt as a read-only virtual document, and a diff
 * against what a new session would freeze from the live files right now (the server renders both).
 */

export const SNAPSHOT_SCHEME = 'my-agent';

export class SnapshotContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
    private readonly docs = new Map<string, string>();
    private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.emitter.event;

    set(uri: vscode.Uri, text: string): void {
        this.docs.set(uri.toString(), text);
        this.emitter.fire(uri);
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.docs.get(uri.toString()) ?? vscode.l10n.t('(This snapshot is no longer available: run "Show Frozen Snapshot" again.)');
    }

    dispose(): void {
        this.emitter.dispose();
    }
}

export function snapshotUri(sessionId: string, kind: 'frozen' | 'live'): vscode.Uri {
    const name = kind === 'frozen' ? 'frozen-system-prompt.md' : 'live-system-prompt.md';
    return vscode.Uri.from({ scheme: SNAPSHOT_SCHEME, path: `/${encodeURIComponent(sessionId)}/${name}` });
}

/** The chat session the snapshot is shown for. */
export interface SnapshotSession {
    readonly sessionId: string | undefined;
    readonly folderUri: string | undefined;
    startSession(): Promise<string | undefined>;
}

export async function showSnapshot(
    server: ServerManager,
    chat: SnapshotSession,
    provider: SnapshotContentProvider,
): Promise<void> {
    const client = await server.ready();
    if (!client) {
        return;
    }
    if (!chat.sessionId && (await chat.startSession())) {
        return;
    }
    const sessionId = chat.sessionId;
    if (!sessionId) {
        return;
    }
    try {
        const frozen = await client.sendRequest<SystemPromptResult>(Methods.chatSystemPrompt, { sessionId });
        const frozenUri = snapshotUri(sessionId, 'frozen');
        provider.set(frozenUri, frozen.text);
        const doc = await vscode.workspace.openTextDocument(frozenUri);
        await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
        await vscode.window.showTextDocument(doc, { preview: false });

        // What a new chat would freeze now: a throwaway session, rendered by the server the same way.
        const folder = chat.folderUri;
        const probe = await client.sendRequest<ChatStartResult>(Methods.chatStart, folder ? { folder } : {});
        let live: SystemPromptResult;
        try {
            live = await client.sendRequest<SystemPromptResult>(Methods.chatSystemPrompt, { sessionId: probe.sessionId });
        } finally {
            // A probe, not a chat: delete it so it is not listed among the saved sessions (an older server
            // without chat/delete only ends it).
            client
                .sendRequest(Methods.chatDelete, { sessionId: probe.sessionId })
                .catch(() => client.sendRequest(Methods.chatEnd, { sessionId: probe.sessionId }))
                .catch(() => undefined);
        }
        const liveUri = snapshotUri(sessionId, 'live');
        provider.set(liveUri, live.text);
        if (live.text === frozen.text) {
            void vscode.window.showInformationMessage(
                vscode.l10n.t('The frozen snapshot of this chat matches the live memory files.'),
            );
            return;
        }
        await vscode.commands.executeCommand(
            'vscode.diff',
            frozenUri,
            liveUri,
            vscode.l10n.t('Frozen snapshot ↔ live memory files'),
            { preview: false },
        );
    } catch (e) {
        void vscode.window.showErrorMessage(vscode.l10n.t('Could not show the snapshot: {0}', errorMessage(e)));
    }
}
