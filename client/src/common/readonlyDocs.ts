import * as vscode from 'vscode';

/**
 * Read-only documents the extension shows but never saves (a recalled item, an import report), served by a
 * content provider so no temp file is written and nothing can be edited into the archive by mistake. Only
 * the latest few are kept: each may be long.
 */

export const READONLY_SCHEME = 'my-agent-doc';

export const MAX_DOCUMENTS = 32;

export class ReadOnlyDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
    private readonly texts = new Map<string, string>();
    private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.emitter.event;

    /** The uri of a document at `docPath` (e.g. `/recall/app/42.md`). */
    uri(docPath: string): vscode.Uri {
        return vscode.Uri.from({ scheme: READONLY_SCHEME, path: docPath.startsWith('/') ? docPath : `/${docPath}` });
    }

    /** Sets the text of `docPath` (the oldest document is dropped beyond MAX_DOCUMENTS). */
    set(docPath: string, text: string): vscode.Uri {
        const uri = this.uri(docPath);
        const key = uri.toString();
        this.texts.delete(key);
        this.texts.set(key, text);
        while (this.texts.size > MAX_DOCUMENTS) {
            this.texts.delete(this.texts.keys().next().value as string);
        }
        this.emitter.fire(uri);
        return uri;
    }

    get(uri: vscode.Uri): string | undefined {
        return this.texts.get(uri.toString());
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.texts.get(uri.toString()) ?? vscode.l10n.t('(This document is no longer available: open it again from where it came from.)');
    }

    /** Sets the text and opens it in an editor (a preview tab); `language` overrides the one its name implies. */
    async show(docPath: string, text: string, language?: string): Promise<vscode.Uri> {
        const uri = this.set(docPath, text);
        let doc = await vscode.workspace.openTextDocument(uri);
        if (language && doc.languageId !== language) {
            doc = await vscode.languages.setTextDocumentLanguage(doc, language);
        }
        await vscode.window.showTextDocument(doc, { preview: true });
        return uri;
    }

    dispose(): void {
        this.texts.clear();
        this.emitter.dispose();
    }
}
