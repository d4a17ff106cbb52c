import * as path from 'path';
import * as vscode from 'vscode';

/**
 * Opens a file the agent named (a link in its text, an edit's "Open at the change") in the editor, only
 * inside a workspace folder: a relative path is tried in the session's folder first, then the others; a
 * bare name no folder holds at its root is looked up anywhere in the workspace; nothing outside a folder
 * (an absolute path elsewhere, `..` out of it) is opened.
 */

export interface OpenTarget {
    path: string;
    line?: number;
    endLine?: number;
}

async function exists(uri: vscode.Uri): Promise<boolean> {
    try {
        await vscode.workspace.fs.stat(uri);
        return true;
    } catch {
        return false;
    }
}

function inside(folder: vscode.WorkspaceFolder, fsPath: string): boolean {
    const rel = path.relative(folder.uri.fsPath, fsPath);
    return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** The workspace files `target` can mean, best first ([] when none). */
export async function findWorkspaceFiles(target: string, preferredFolder?: string): Promise<vscode.Uri[]> {
    const folders = [...(vscode.workspace.workspaceFolders ?? [])].sort(
        (a, b) => Number(b.uri.toString() === preferredFolder) - Number(a.uri.toString() === preferredFolder),
    );
    const clean = target.replace(/\\/g, '/').replace(/^\.\//, '');
    if (path.isAbsolute(clean)) {
        const uri = vscode.Uri.file(path.normalize(clean));
        return folders.some((f) => inside(f, uri.fsPath)) && (await exists(uri)) ? [uri] : [];
    }
    for (const folder of folders) {
        const fsPath = path.resolve(folder.uri.fsPath, clean);
        if (!inside(folder, fsPath)) {
            continue;
        }
        const uri = vscode.Uri.file(fsPath);
        if (await exists(uri)) {
            return [uri];
        }
    }
    if (!clean.includes('/') && /^[\w.@+-]+$/.test(clean)) {
        const found = await vscode.workspace.findFiles(`**/${clean}`, '**/{node_modules,.git}/**', 20);
        return found.filter((u) => folders.some((f) => inside(f, u.fsPath)));
    }
    return [];
}

/** Shows `uri` with lines `line`..`endLine` (1-based) selected and in view. */
export async function showAt(uri: vscode.Uri, line?: number, endLine?: number): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(uri);
    if (line === undefined) {
        await vscode.window.showTextDocument(doc, { preview: false });
        return;
    }
    const last = Math.max(0, doc.lineCount - 1);
    const start = Math.min(Math.max(0, line - 1), last);
    const end = Math.min(Math.max(start, (endLine ?? line) - 1), last);
    const range = new vscode.Range(start, 0, end, doc.lineAt(end).text.length);
    await vscode.window.showTextDocument(doc, { preview: false, selection: range });
}

/** Opens what the agent named; says so when the workspace has no such file. */
export async function openWorkspacePath(target: OpenTarget, preferredFolder?: string): Promise<boolean> {
    const found = await findWorkspaceFiles(target.path, preferredFolder);
    let uri = found[0];
    if (found.length > 1) {
        const picked = await vscode.window.showQuickPick(
            found.map((u) => ({ label: vscode.workspace.asRelativePath(u, true), uri: u })),
            { placeHolder: vscode.l10n.t('Several files are named {0}: which one?', target.path) },
        );
        uri = picked?.uri as vscode.Uri;
        if (!uri) {
            return false;
        }
    }
    if (!uri) {
        void vscode.window.showInformationMessage(vscode.l10n.t('{0} is not a file in this workspace.', target.path));
        return false;
    }
    await showAt(uri, target.line, target.endLine);
    return true;
}
