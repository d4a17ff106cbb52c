import * as vscode from 'vscode';
import type { RequestClient } from './chat/seams';
import { errorMessage } from './common/errors';
import { getLog } from './common/log';
import { ChatStartResult, Methods, SystemPromptResult } from './protocol';

/**
 * Show Frozen Snapshot: the session's exact system prompt as a read-only virtual document, and a diff
 * against what a new session would freeze from the live files right now (the server renders both). While
 * that diff is open, the live side follows memory (an undo, a write, a save) so it never shows a stale state.
 */

export const SNAPSHOT_SCHEME = 'my-agent';

/** The server the snapshot talks to (ServerManager in the extension, a scripted client in tests). */
export interface SnapshotServer {
    ready(): Promise<RequestClient | undefined>;
}

/** How long memory must stay quiet before an open frozen ↔ live diff is rendered again. */
export const LIVE_REFRESH_MS = 250;

interface LiveDoc {
    uri: vscode.Uri;
    folder: string | undefined;
    server: SnapshotServer;
}

export class SnapshotContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
    private readonly docs = new Map<string, string>();
    private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.emitter.event;
    private readonly subs: vscode.Disposable[] = [];
    private live: LiveDoc | undefined;
    private timer: ReturnType<typeof setTimeout> | undefined;
    private running: Promise<void> | undefined;
    private again = false;

    /** `memoryChanged`: fires when memory changes (an undo, an agent's write, a save): an open live side follows. */
    constructor(memoryChanged?: vscode.Event<unknown>) {
        if (memoryChanged) {
            this.subs.push(memoryChanged(() => this.schedule()));
        }
    }

    set(uri: vscode.Uri, text: string): void {
        if (this.docs.get(uri.toString()) === text) {
            return;
        }
        this.docs.set(uri.toString(), text);
        this.emitter.fire(uri);
    }

    get(uri: vscode.Uri): string | undefined {
        return this.docs.get(uri.toString());
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.docs.get(uri.toString()) ?? vscode.l10n.t('(This snapshot is no longer available: run "Show Frozen Snapshot" again.)');
    }

    /** The live side of the diff just shown: kept current while it stays open. */
    trackLive(uri: vscode.Uri, folder: string | undefined, server: SnapshotServer): void {
        this.live = { uri, folder, server };
    }

    private schedule(): void {
        if (!this.live) {
            return;
        }
        if (this.timer) {
            clearTimeout(this.timer);
        }
        this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.refreshLive();
        }, LIVE_REFRESH_MS);
    }

    /** Renders the live side again when it is still open (one render at a time; a change meanwhile reruns it). */
    async refreshLive(): Promise<void> {
        if (this.running) {
            this.again = true;
            return this.running;
        }
        const live = this.live;
        if (!live || !isOpen(live.uri)) {
            return;
        }
        this.running = (async () => {
            try {
                const client = await live.server.ready();
                if (client) {
                    this.set(live.uri, (await renderLive(client, live.folder)).text);
                }
            } catch (e) {
                getLog().warn(`refreshing the live memory side of the snapshot diff: ${errorMessage(e)}`);
            }
        })();
        try {
            await this.running;
        } finally {
            this.running = undefined;
        }
        if (this.again) {
            this.again = false;
            await this.refreshLive();
        }
    }

    dispose(): void {
        if (this.timer) {
            clearTimeout(this.timer);
        }
        this.subs.forEach((s) => s.dispose());
        this.emitter.dispose();
    }
}

/** Whether a document is still shown: in an editor tab (either side of a diff), else still open. */
function isOpen(uri: vscode.Uri): boolean {
    const key = uri.toString();
    const groups = vscode.window.tabGroups?.all;
    if (groups) {
        return groups.some((g) =>
            g.tabs.some((t) => {
                const input = t.input as { uri?: vscode.Uri; original?: vscode.Uri; modified?: vscode.Uri } | undefined;
                return [input?.uri, input?.original, input?.modified].some((u) => u?.toString() === key);
            }),
        );
    }
    return vscode.workspace.textDocuments.some((d) => d.uri.toString() === key);
}

/** What a new chat would freeze now: a throwaway session, rendered by the server the same way, then deleted. */
async function renderLive(client: RequestClient, folder: string | undefined): Promise<SystemPromptResult> {
    const probe = await client.sendRequest<ChatStartResult>(Methods.chatStart, folder ? { folder } : {});
    try {
        return await client.sendRequest<SystemPromptResult>(Methods.chatSystemPrompt, { sessionId: probe.sessionId });
    } finally {
        // A probe, not a chat: delete it so it is not listed among the saved sessions (an older server
        // without chat/delete only ends it).
        client
            .sendRequest(Methods.chatDelete, { sessionId: probe.sessionId })
            .catch(() => client.sendRequest(Methods.chatEnd, { sessionId: probe.sessionId }))
            .catch(() => undefined);
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
    server: SnapshotServer,
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

        // What a new chat would freeze now.
        const live = await renderLive(client, chat.folderUri);
        const liveUri = snapshotUri(sessionId, 'live');
        provider.set(liveUri, live.text);
        provider.trackLive(liveUri, chat.folderUri, server);
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
