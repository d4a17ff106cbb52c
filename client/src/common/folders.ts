import * as vscode from 'vscode';

/** Which workspace folder a command means: the active editor's folder, else the first one. */

export function activeFolder(): vscode.WorkspaceFolder | undefined {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const uri = vscode.window.activeTextEditor?.document.uri;
    if (uri) {
        const f = vscode.workspace.getWorkspaceFolder(uri);
        if (f) {
            return f;
        }
    }
    return folders[0];
}

/** Compares folder URIs by file path, since the server may encode a URI differently from VS Code. */
export function sameFolder(a: string, b: string): boolean {
    try {
        return vscode.Uri.parse(a).fsPath === vscode.Uri.parse(b).fsPath;
    } catch {
        return a === b;
    }
}

export function folderForUri(uri: string): vscode.WorkspaceFolder | undefined {
    return (vscode.workspace.workspaceFolders ?? []).find((f) => sameFolder(f.uri.toString(), uri));
}

/** Lets the user pick a folder when there are several; resolves undefined when cancelled or none. */
export async function pickFolder(placeHolder: string): Promise<vscode.WorkspaceFolder | undefined> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length <= 1) {
        return folders[0];
    }
    const active = activeFolder();
    const items = folders.map((f) => ({ label: f.name, description: f.uri.fsPath, folder: f, picked: f === active }));
    const pick = await vscode.window.showQuickPick(items, { placeHolder });
    return pick?.folder;
}
