import * as path from 'path';
import * as vscode from 'vscode';

/**
 * Mirrors the open workspace files that are not memory files to the server with the standard LSP
 * didOpen / didChange / didClose notifications, so the server's buffers hold what the user sees: `read_file`
 * and editor context read the UNSAVED text. The language client keeps syncing memory files itself (its
 * document selector); features (lint, lens, formatting...) stay on memory files only.
 */

/** Documents larger than this are left to the server's disk read (the agent's reads are bounded anyway). */
export const MAX_MIRROR_CHARS = 5_000_000;

export interface NotifyClient {
    sendNotification(method: string, params: unknown): Promise<void> | void;
}

/** Same rule as the client's document selector `**\/.my_agent_core/memory/{MEMORY,USER}.md`. */
export function isMemoryFile(fsPath: string): boolean {
    const parts = fsPath.split(/[\\/]/);
    const n = parts.length;
    return n >= 3 && parts[n - 3] === '.my_agent_core' && parts[n - 2] === 'memory' && (parts[n - 1] === 'MEMORY.md' || parts[n - 1] === 'USER.md');
}

export interface DocLike {
    uri: vscode.Uri;
    languageId: string;
    version: number;
    getText(): string;
}

export class OpenBufferSync implements vscode.Disposable {
    private readonly mirrored = new Set<string>();
    private readonly subs: vscode.Disposable[] = [];

    constructor(
        private readonly client: NotifyClient,
        private readonly maxChars = MAX_MIRROR_CHARS,
    ) {}

    /** Announces every open document that qualifies and follows the editor from then on. */
    start(): void {
        for (const doc of vscode.workspace.textDocuments ?? []) {
            this.open(doc);
        }
        this.subs.push(
            vscode.workspace.onDidOpenTextDocument((doc) => this.open(doc)),
            vscode.workspace.onDidChangeTextDocument((e) => this.change(e)),
            vscode.workspace.onDidCloseTextDocument((doc) => this.close(doc)),
        );
    }

    /** A file of a workspace folder, not a memory file (those the language client syncs). */
    qualifies(doc: DocLike): boolean {
        return (
            doc.uri.scheme === 'file' &&
            !isMemoryFile(doc.uri.fsPath) &&
            !!vscode.workspace.getWorkspaceFolder(doc.uri) &&
            !doc.uri.fsPath.split(path.sep).includes('.git')
        );
    }

    get size(): number {
        return this.mirrored.size;
    }

    open(doc: DocLike): void {
        const key = doc.uri.toString();
        if (this.mirrored.has(key) || !this.qualifies(doc)) {
            return;
        }
        const text = doc.getText();
        if (text.length > this.maxChars) {
            return;
        }
        this.mirrored.add(key);
        this.notify('textDocument/didOpen', {
            textDocument: { uri: key, languageId: doc.languageId, version: doc.version, text },
        });
    }

    change(e: { document: DocLike; contentChanges: readonly vscode.TextDocumentContentChangeEvent[] }): void {
        const key = e.document.uri.toString();
        if (!this.mirrored.has(key) || e.contentChanges.length === 0) {
            return;
        }
        if (e.contentChanges.some((c) => c.text.length > this.maxChars)) {
            this.close(e.document); // grew too big to mirror: the server falls back to the file on disk
            return;
        }
        this.notify('textDocument/didChange', {
            textDocument: { uri: key, version: e.document.version },
            contentChanges: e.contentChanges.map((c) => ({
                range: {
                    start: { line: c.range.start.line, character: c.range.start.character },
                    end: { line: c.range.end.line, character: c.range.end.character },
                },
                rangeLength: c.rangeLength,
                text: c.text,
            })),
        });
    }

    close(doc: DocLike): void {
        const key = doc.uri.toString();
        if (this.mirrored.delete(key)) {
            this.notify('textDocument/didClose', { textDocument: { uri: key } });
        }
    }

    private notify(method: string, params: unknown): void {
        try {
            void Promise.resolve(this.client.sendNotification(method, params)).catch(() => undefined);
        } catch {
            // the client is stopping; the next start announces the documents again
        }
    }

    dispose(): void {
        this.subs.forEach((s) => s.dispose());
        this.mirrored.clear();
    }
}
