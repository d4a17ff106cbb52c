import * as path from 'path';
import * as vscode from 'vscode';

/**
 * "Open Diff" on an approval card: VS Code's own diff editor with the file's current text on the left (the
 * open buffer when there is one, so unsaved edits show) and the agent's proposed text on the right, served
 * read-only by this content provider. Only the latest few proposals are kept (each can be a whole file).
 */

export const PROPOSED_SCHEME = 'my-agent-proposed';

/** How many proposals stay available for Open Diff. */
export const MAX_PROPOSALS = 16;

interface Proposal {
    file: vscode.Uri;
    proposed: vscode.Uri;
    empty: vscode.Uri;
}

export class ProposedTextProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
    private readonly proposals = new Map<string, Proposal>();
    private readonly texts = new Map<string, string>();
    private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.emitter.event;

    /** Keeps `newText` for `callId`; the oldest proposal is dropped beyond MAX_PROPOSALS. */
    remember(callId: string, file: vscode.Uri, newText: string): void {
        this.forget(callId);
        const base = `/${encodeURIComponent(callId)}`;
        const name = path.posix.basename(file.path) || 'proposed';
        const proposal: Proposal = {
            file,
            proposed: vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: `${base}/${name}` }),
            empty: vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: `${base}/new/${name}` }),
        };
        this.proposals.set(callId, proposal);
        this.texts.set(proposal.proposed.toString(), newText);
        this.texts.set(proposal.empty.toString(), '');
        this.emitter.fire(proposal.proposed);
        while (this.proposals.size > MAX_PROPOSALS) {
            this.forget(this.proposals.keys().next().value as string);
        }
    }

    has(callId: string): boolean {
        return this.proposals.has(callId);
    }

    forget(callId: string): void {
        const p = this.proposals.get(callId);
        if (p) {
            this.proposals.delete(callId);
            this.texts.delete(p.proposed.toString());
            this.texts.delete(p.empty.toString());
        }
    }

    provideTextDocumentContent(uri: vscode.Uri): string {
        return (
            this.texts.get(uri.toString()) ??
            vscode.l10n.t('(This proposal is no longer available: only the latest {0} are kept.)', String(MAX_PROPOSALS))
        );
    }

    /** Opens the diff; a file that does not exist yet is compared with an empty document. */
    async openDiff(callId: string): Promise<boolean> {
        const p = this.proposals.get(callId);
        if (!p) {
            void vscode.window.showInformationMessage(
                vscode.l10n.t('This proposal is no longer available: only the latest {0} are kept.', String(MAX_PROPOSALS)),
            );
            return false;
        }
        let left = p.file;
        try {
            await vscode.workspace.fs.stat(p.file);
        } catch {
            left = p.empty;
        }
        const name = path.posix.basename(p.file.path);
        await vscode.commands.executeCommand(
            'vscode.diff',
            left,
            p.proposed,
            vscode.l10n.t('{0}: current ↔ proposed by the agent', name),
            { preview: true },
        );
        return true;
    }

    dispose(): void {
        this.proposals.clear();
        this.texts.clear();
        this.emitter.dispose();
    }
}
