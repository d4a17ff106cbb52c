import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { parseContextFiles } from './contextFiles';
import { sameFolder } from './common/folders';
import { getLog } from './common/log';
import { ChatSnapshotResult, MemoryChangedParams, MemoryStateResult, Methods, StoreState } from './protocol';

/**
 * The memory state of every workspace folder, as the server reports it. Filled by myAgent/memory/state and
 * kept current by myAgent/memory/changed notifications (never by polling). The tree and the status bar read it.
 */

export interface FolderMemory {
    folder: vscode.WorkspaceFolder;
    stores: StoreState[];
    error?: string;
    loaded: boolean;
}

/** Applies a memory/changed notification to a folder's stores (pure; unit-tested). */
export function applyChange(stores: readonly StoreState[], change: MemoryChangedParams): StoreState[] {
    const next: StoreState = {
        target: change.target,
        path: change.path,
        used: change.used,
        limit: change.limit,
        entries: [...change.entries],
        available: true,
    };
    const out = stores.map((s) => (s.target === change.target ? next : s));
    if (!stores.some((s) => s.target === change.target)) {
        out.push(next);
        out.sort((a, b) => (a.target === 'memory' ? -1 : b.target === 'memory' ? 1 : 0));
    }
    return out;
}

export class MemoryModel implements vscode.Disposable {
    private readonly folders = new Map<string, FolderMemory>();
    private readonly emitter = new vscode.EventEmitter<void>();
    readonly onDidChange = this.emitter.event;
    private client: LanguageClient | undefined;
    private sessionId: string | undefined;
    private snapshotResult: ChatSnapshotResult | undefined;

    /** The frozen snapshot of the current chat session (the one the Chat view holds), if any. */
    get snapshot(): ChatSnapshotResult | undefined {
        return this.snapshotResult;
    }

    /** Follows the Chat view's session: fetches its frozen snapshot (myAgent/chat/snapshot), or forgets it. */
    async setSession(sessionId: string | undefined): Promise<void> {
        if (sessionId === this.sessionId) {
            return;
        }
        this.sessionId = sessionId;
        this.snapshotResult = undefined;
        const client = this.client;
        if (sessionId && client) {
            try {
                const r = await client.sendRequest<ChatSnapshotResult>(Methods.chatSnapshot, { sessionId });
                if (this.sessionId !== sessionId) {
                    return; // another session started meanwhile
                }
                // The context files, validated here, so the tree only ever sees a clean list.
                this.snapshotResult = r ? { ...r, contextFiles: parseContextFiles(r.contextFiles) } : r;
            } catch (e) {
                getLog().warn(`chat/snapshot: ${e instanceof Error ? e.message : String(e)}`);
            }
        }
        this.emitter.fire();
    }

    setClient(client: LanguageClient | undefined): void {
        this.client = client;
        if (!client) {
            this.sessionId = undefined;
            this.snapshotResult = undefined;
            for (const f of this.folders.values()) {
                f.loaded = false;
            }
            this.emitter.fire();
        }
    }

    list(): FolderMemory[] {
        return (vscode.workspace.workspaceFolders ?? []).map(
            (folder) => this.folders.get(folder.uri.toString()) ?? { folder, stores: [], loaded: false },
        );
    }

    get(folder: vscode.WorkspaceFolder): FolderMemory | undefined {
        return this.folders.get(folder.uri.toString());
    }

    /** Asks the server for the state of every folder (on start, on Refresh, on folder changes). */
    async refresh(): Promise<void> {
        const client = this.client;
        const folders = vscode.workspace.workspaceFolders ?? [];
        for (const key of [...this.folders.keys()]) {
            if (!folders.some((f) => f.uri.toString() === key)) {
                this.folders.delete(key);
            }
        }
        if (!client) {
            this.emitter.fire();
            return;
        }
        await Promise.all(
            folders.map(async (folder) => {
                try {
                    const state = await client.sendRequest<MemoryStateResult>(Methods.memoryState, {
                        folder: folder.uri.toString(),
                    });
                    this.folders.set(folder.uri.toString(), { folder, stores: state.stores ?? [], loaded: true });
                } catch (e) {
                    const message = e instanceof Error ? e.message : String(e);
                    getLog().warn(`memory/state for ${folder.uri.toString()}: ${message}`);
                    this.folders.set(folder.uri.toString(), { folder, stores: [], error: message, loaded: true });
                }
            }),
        );
        this.emitter.fire();
    }

    /** Replaces a folder's state with a result of memory/edit or memory/undo. */
    setState(state: MemoryStateResult): void {
        const folder = (vscode.workspace.workspaceFolders ?? []).find((f) => sameFolder(f.uri.toString(), state.folder));
        if (folder) {
            this.folders.set(folder.uri.toString(), { folder, stores: state.stores ?? [], loaded: true });
            this.emitter.fire();
        }
    }

    onChanged(change: MemoryChangedParams): void {
        const folder = (vscode.workspace.workspaceFolders ?? []).find((f) => sameFolder(f.uri.toString(), change.folder));
        if (!folder) {
            return;
        }
        const current = this.folders.get(folder.uri.toString());
        this.folders.set(folder.uri.toString(), {
            folder,
            stores: applyChange(current?.stores ?? [], change),
            loaded: true,
        });
        this.emitter.fire();
    }

    dispose(): void {
        this.emitter.dispose();
    }
}
