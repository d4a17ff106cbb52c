import * as path from 'path';
import * as vscode from 'vscode';
import type { RequestClient } from './chat/seams';
import { ShownFigure, shownFigure } from './common/budget';
import { parseContextFiles } from './contextFiles';
import { sameFolder } from './common/folders';
import { getLog } from './common/log';
import { ChatSnapshotResult, MemoryBufferResult, MemoryChangedParams, MemoryStateResult, Methods, StoreState } from './protocol';

/**
 * The memory state of every workspace folder, as the server reports it. Filled by myAgent/memory/state and
 * kept current by myAgent/memory/changed notifications (never by polling). The tree and the status bar read it.
 *
 * One figure: a memory file open with unsaved edits shows its buffer's figure (`myAgent/memory/buffer`, the
 * one its diagnostics and code lens show), labelled unsaved; every other file shows the disk's.
 */

/** A memory file as the document selector knows it. */
const MEMORY_FILE = /[\\/]\.my_agent_core[\\/]memory[\\/](MEMORY|USER)\.md$/;

/** How long typing must pause before the buffer's figure is asked for. */
export const BUFFER_FIGURE_MS = 150;
/** How often to ask again while the server has not seen the editor's latest version yet. */
const BUFFER_RETRIES = 8;

interface BufferFigure {
    version: number;
    used: number;
    limit: number;
}

const pathKey = (p: string): string => path.normalize(p);

function isMemoryDocument(doc: vscode.TextDocument): boolean {
    return doc.uri.scheme === 'file' && MEMORY_FILE.test(doc.uri.fsPath);
}

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
        ...(change.origins ? { origins: change.origins } : {}),
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
    private client: RequestClient | undefined;
    private sessionId: string | undefined;
    private snapshotResult: ChatSnapshotResult | undefined;
    /** Figures of memory files open with unsaved edits, by file path. */
    private readonly buffers = new Map<string, BufferFigure>();
    private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
    private readonly subs: vscode.Disposable[] = [];

    constructor() {
        this.subs.push(
            vscode.workspace.onDidChangeTextDocument((e) => this.onDocument(e.document)),
            vscode.workspace.onDidOpenTextDocument((d) => this.onDocument(d)),
            vscode.workspace.onDidSaveTextDocument((d) => this.onDocument(d)),
            vscode.workspace.onDidCloseTextDocument((d) => this.forgetBuffer(d.uri.fsPath)),
        );
    }

    /** The figure a store shows: its unsaved buffer's while the file has unsaved edits, else the disk's. */
    figure(store: StoreState): ShownFigure {
        const key = pathKey(store.path);
        const buffer = this.buffers.get(key);
        const doc = buffer && vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && pathKey(d.uri.fsPath) === key);
        return shownFigure(store, doc?.isDirty ? buffer : undefined);
    }

    private onDocument(doc: vscode.TextDocument): void {
        if (!isMemoryDocument(doc)) {
            return;
        }
        if (!doc.isDirty) {
            this.forgetBuffer(doc.uri.fsPath); // saved or reverted: the disk's figure is the one
            return;
        }
        const key = pathKey(doc.uri.fsPath);
        const pending = this.timers.get(key);
        if (pending) {
            clearTimeout(pending);
        }
        this.timers.set(
            key,
            setTimeout(() => {
                this.timers.delete(key);
                void this.fetchBuffer(doc, BUFFER_RETRIES);
            }, BUFFER_FIGURE_MS),
        );
    }

    private forgetBuffer(fsPath: string): void {
        const key = pathKey(fsPath);
        const pending = this.timers.get(key);
        if (pending) {
            clearTimeout(pending);
            this.timers.delete(key);
        }
        if (this.buffers.delete(key)) {
            this.emitter.fire();
        }
    }

    /** Asks the server for the buffer's figure; again shortly when it has not seen the editor's version yet. */
    async fetchBuffer(doc: vscode.TextDocument, retries = 0): Promise<void> {
        const client = this.client;
        if (!client || doc.isClosed || !doc.isDirty) {
            return;
        }
        const key = pathKey(doc.uri.fsPath);
        let r: MemoryBufferResult | null;
        try {
            r = await client.sendRequest<MemoryBufferResult | null>(Methods.memoryBuffer, { uri: doc.uri.toString() });
        } catch (e) {
            // An older server without memory/buffer: the disk's figure stays the only one.
            getLog().debug(`memory/buffer: ${e instanceof Error ? e.message : String(e)}`);
            return;
        }
        if (doc.isClosed || !doc.isDirty) {
            return; // saved, reverted or closed while the answer was on its way
        }
        if (!r || typeof r.used !== 'number' || typeof r.limit !== 'number') {
            this.forgetBuffer(doc.uri.fsPath);
            return;
        }
        const version = typeof r.version === 'number' ? r.version : doc.version;
        if (version < doc.version && retries > 0) {
            setTimeout(() => void this.fetchBuffer(doc, retries - 1), BUFFER_FIGURE_MS);
        }
        const held = this.buffers.get(key);
        if (held && held.version > version) {
            return; // an answer about an older version arrived late
        }
        this.buffers.set(key, { version, used: r.used, limit: r.limit });
        this.emitter.fire();
    }

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

    setClient(client: RequestClient | undefined): void {
        this.client = client;
        if (!client) {
            this.sessionId = undefined;
            this.snapshotResult = undefined;
            this.buffers.clear();
            for (const f of this.folders.values()) {
                f.loaded = false;
            }
            this.emitter.fire();
            return;
        }
        // Files already open with unsaved edits (a restart, a reload with hot exit) get their figure now.
        for (const doc of vscode.workspace.textDocuments) {
            if (isMemoryDocument(doc) && doc.isDirty) {
                void this.fetchBuffer(doc, BUFFER_RETRIES);
            }
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
        this.timers.forEach((t) => clearTimeout(t));
        this.subs.forEach((s) => s.dispose());
        this.emitter.dispose();
    }
}
