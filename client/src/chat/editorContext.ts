import * as vscode from 'vscode';
import type { ContextChip } from '../chatModel';
import { chipsFromSelections } from '../contextChips';

/**
 * The active editor (or its selections) as context chips. Only files inside a workspace folder qualify: the
 * server reads them itself (unsaved buffer first) and refuses anything outside the session's folder.
 */

export type EditorContext = { chips: ContextChip[] } | { error: string };

export function activeEditorContext(): EditorContext {
    const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors?.[0];
    if (!editor) {
        return { error: vscode.l10n.t('Open a file in the editor first: its text (or the selection) is what gets attached.') };
    }
    const uri = editor.document.uri;
    if (uri.scheme !== 'file') {
        return { error: vscode.l10n.t('Only files saved in the workspace can be attached (this editor is {0}).', uri.scheme) };
    }
    if (!vscode.workspace.getWorkspaceFolder(uri)) {
        return { error: vscode.l10n.t('{0} is outside the workspace folders, so the agent cannot read it.', uri.fsPath) };
    }
    const rel = vscode.workspace.asRelativePath(uri, (vscode.workspace.workspaceFolders ?? []).length > 1);
    return { chips: chipsFromSelections(uri.toString(), rel, editor.selections ?? []) };
}
