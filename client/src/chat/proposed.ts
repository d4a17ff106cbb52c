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

    /** The file a proposal changes. */
    fileOf(callId: string): vscode.Uri | undefined {
        return this.proposals.get(callId)?.file;
    }

    /** The path of the proposal's right-hand document (what the `resourcePath in ...` context key lists). */
    proposedPath(callId: string): string | undefined {
        return this.proposals.get(callId)?.proposed.path;
    }

    /** The call a proposal document belongs to (`my-agent-proposed:/<callId>/...`), if it is one. */
    callIdOf(uri: vscode.Uri | undefined): string | undefined {
        if (!uri || uri.scheme !== PROPOSED_SCHEME) {
            return undefined;
        }
        const first = uri.path.split('/')[1];
        if (!first) {
            return undefined;
        }
        try {
            const callId = decodeURIComponent(first);
            return this.proposals.has(callId) ? callId : undefined;
        } catch {
            return undefined;
        }
    }

    /** Closes the diff editors showing this proposal (after a decision both sides would be the same). */
    async closeDiff(callId: string): Promise<void> {
        const p = this.proposals.get(callId);
        const groups = vscode.window.tabGroups?.all ?? [];
        if (!p || !groups.length) {
            return;
        }
        const target = p.proposed.toString();
        const tabs = groups
            .flatMap((g) => g.tabs)
            .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === target);
        if (tabs.length) {
            try {
                await vscode.window.tabGroups.close(tabs, true);
            } catch {
                // already closed by the user
            }
        }
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
