import * as path from 'path';
import * as vscode from 'vscode';
import { ChatController } from './chat/controller';
import { errorMessage } from './common/errors';
import { fileName, fromSingleLine, locateEntry, toSingleLine } from './common/budget';
import { activeFolder, folderForUri, pickFolder } from './common/folders';
import { getLog } from './common/log';
import { ReadOnlyDocuments } from './common/readonlyDocs';
import { promptForApiKey } from './common/secrets';
import { ServerManager } from './common/server';
import { evaluateMemory, extensionEvalDeps } from './evalCommand';
import { runGitSetup } from './gitSetup';
import { addMemoryServerToWorkspace } from './lm/mcpCommand';
import { describeChange, isPlainChange, parseLog, undoNote } from './memoryChange';
import { importIntoMemory } from './memoryImport';
import { MemoryModel } from './memoryModel';
import { EntryNode, MemoryNode, StoreNode } from './memoryTree';
import { MemoryEditParams, MemoryEditResult, MemoryLogResult, Methods, Target } from './protocol';
import { isRecallNode, RecallController } from './recall/recallView';
import { showSnapshot, SnapshotContentProvider } from './snapshotView';

/** Every command of the extension; each handler is small and talks to the server through ServerManager. */

export interface CommandDeps {
    context: vscode.ExtensionContext;
    server: ServerManager;
    memory: MemoryModel;
    chat: ChatController;
    snapshots: SnapshotContentProvider;
    recall: RecallController;
    docs: ReadOnlyDocuments;
}

export function memoryFilePath(folder: vscode.WorkspaceFolder, target: Target): string {
    return path.join(folder.uri.fsPath, '.my_agent_core', 'memory', fileName(target));
}

async function pickTarget(): Promise<Target | undefined> {
    const items: (vscode.QuickPickItem & { target: Target })[] = [
        { label: 'MEMORY.md', description: vscode.l10n.t('agent notes'), target: 'memory' },
        { label: 'USER.md', description: vscode.l10n.t('user profile'), target: 'user' },
    ];
    return (await vscode.window.showQuickPick(items, { placeHolder: vscode.l10n.t('Which memory file?') }))?.target;
}

async function edit(deps: CommandDeps, params: MemoryEditParams): Promise<void> {
    const client = await deps.server.ready();
    if (!client) {
        return;
    }
    try {
        const r = await client.sendRequest<MemoryEditResult>(Methods.memoryEdit, params);
        if (r.state) {
            deps.memory.setState(r.state);
        }
        vscode.window.setStatusBarMessage(`$(check) ${r.message ?? ''}`, 5000);
    } catch (e) {
        void vscode.window.showErrorMessage(errorMessage(e), { modal: false });
    }
}

/** Opens a memory file (creating an untitled buffer for a missing one) and selects the entry's first line. */
async function openAt(filePath: string, entries?: readonly string[], index?: number): Promise<void> {
    const uri = vscode.Uri.file(filePath);
    let doc: vscode.TextDocument;
    try {
        doc = await vscode.workspace.openTextDocument(uri);
    } catch {
        doc = await vscode.workspace.openTextDocument(uri.with({ scheme: 'untitled' }));
    }
    const line = entries && index !== undefined ? locateEntry(doc.getText(), entries, index) : 0;
    const range = doc.lineAt(Math.min(line, Math.max(doc.lineCount - 1, 0))).range;
    await vscode.window.showTextDocument(doc, { selection: range, preview: false });
}

function isEntry(node: unknown): node is EntryNode {
    return !!node && typeof node === 'object' && (node as MemoryNode).kind === 'entry';
}

function isStore(node: unknown): node is StoreNode {
    return !!node && typeof node === 'object' && (node as MemoryNode).kind === 'store';
}

export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
    const { server, memory, chat } = deps;
    const reg = (id: string, fn: (...args: unknown[]) => unknown): vscode.Disposable =>
        vscode.commands.registerCommand(id, fn);

    return [
        reg('myAgent.newChat', async () => {
            const folder = await pickFolder(vscode.l10n.t('Start the chat in which folder?'));
            if (!folder && (vscode.workspace.workspaceFolders ?? []).length > 1) {
                return;
            }
            await chat.reveal();
            await chat.startSession(folder);
        }),

        reg('myAgent.chat.attachEditor', async () => {
            if (chat.attachActiveEditor()) {
                await chat.reveal(true);
            }
        }),

        reg('myAgent.chat.history', async () => {
            await chat.reveal(false);
            await chat.openHistory();
        }),

        reg('myAgent.chat.compact', async () => {
            if (!chat.sessionId) {
                void vscode.window.showInformationMessage(vscode.l10n.t('There is no chat session to compact yet.'));
                return;
            }
            await chat.reveal(false);
            await chat.compact();
        }),

        // The diff editor's title bar passes the proposal it shows; a keybinding passes nothing.
        reg('myAgent.chat.approvePending', (arg?: unknown) => chat.decidePending(true, arg)),

        reg('myAgent.chat.denyPending', (arg?: unknown) => chat.decidePending(false, arg)),

        reg('myAgent.openMemoryFile', async () => {
            const folder = await pickFolder(vscode.l10n.t('Open the memory of which folder?'));
            if (!folder) {
                void vscode.window.showInformationMessage(vscode.l10n.t('Open a folder first: memory lives in <folder>/.my_agent_core/memory.'));
                return;
            }
            const target = await pickTarget();
            if (target) {
                await openAt(memoryFilePath(folder, target));
            }
        }),

        reg('myAgent.showSnapshot', () => showSnapshot(server, chat, deps.snapshots)),

        reg('myAgent.undoMemoryChange', async () => {
            const folder = await pickFolder(vscode.l10n.t('Undo the last memory change of which folder?'));
            if (!folder) {
                return;
            }
            const client = await server.ready();
            if (!client) {
                return;
            }
            try {
                const log = await client.sendRequest<MemoryLogResult>(Methods.memoryLog, {
                    folder: folder.uri.toString(),
                    limit: 1,
                });
                const last = parseLog(log).at(-1); // newest last
                if (!last) {
                    void vscode.window.showInformationMessage(vscode.l10n.t('There is no memory change to undo.'));
                    return;
                }
                const yes = vscode.l10n.t('Undo');
                // The newest record is what undo reverts when it is a change (not an undo or a marker): named in
                // words, its entry quoted as plain text (never a blocked one).
                const target = isPlainChange(last) ? last : undefined;
                const answer = await vscode.window.showWarningMessage(
                    vscode.l10n.t('Undo the last memory change?'),
                    { modal: true, detail: target ? describeChange(target) : undefined },
                    yes,
                );
                if (answer !== yes) {
                    return;
                }
                // The change the dialog named, by its id: a change made meanwhile is never the one reverted.
                const r = await client.sendRequest<MemoryEditResult>(Methods.memoryUndo, {
                    folder: folder.uri.toString(),
                    ...(target ? { id: target.id } : {}),
                });
                if (r.state) {
                    memory.setState(r.state);
                }
                void vscode.window.showInformationMessage(target ? undoNote(target) : r.message || vscode.l10n.t('Undone.'));
            } catch (e) {
                void vscode.window.showErrorMessage(vscode.l10n.t('Undo failed: {0}', errorMessage(e)));
            }
        }),

        reg('myAgent.setApiKey', () => promptForApiKey(deps.context.secrets)),

        reg('myAgent.restartServer', async () => {
            const client = await server.restart();
            if (client) {
                vscode.window.setStatusBarMessage(vscode.l10n.t('$(check) My Agent server restarted'), 4000);
            }
        }),

        reg('myAgent.showOutput', () => getLog().show(true)),

        reg('myAgent.memory.refresh', async () => {
            await server.ready();
            await memory.refresh();
        }),

        reg('myAgent.memory.add', async (node?: unknown) => {
            let folder: vscode.WorkspaceFolder | undefined;
            let target: Target | undefined;
            if (isStore(node)) {
                folder = folderForUri(node.folderUri);
                target = node.store.target;
            } else {
                folder = await pickFolder(vscode.l10n.t('Add to the memory of which folder?'));
                target = folder ? await pickTarget() : undefined;
            }
            if (!folder || !target) {
                return;
            }
            const value = await vscode.window.showInputBox({
                title: vscode.l10n.t('Add an entry to {0}', fileName(target)),
                prompt: vscode.l10n.t('One fact per entry. Use ⏎ for a line break.'),
                ignoreFocusOut: true,
                validateInput: (v) => (v.trim() === '' ? vscode.l10n.t('An entry cannot be empty.') : undefined),
            });
            if (value === undefined) {
                return;
            }
            await edit(deps, { folder: folder.uri.toString(), target, action: 'add', content: fromSingleLine(value) });
        }),

        reg('myAgent.memory.edit', async (node?: unknown) => {
            if (!isEntry(node)) {
                return;
            }
            const value = await vscode.window.showInputBox({
                title: vscode.l10n.t('Edit entry of {0}', fileName(node.target)),
                prompt: vscode.l10n.t('The whole entry is replaced. Use ⏎ for a line break.'),
                value: toSingleLine(node.text),
                ignoreFocusOut: true,
                validateInput: (v) => (v.trim() === '' ? vscode.l10n.t('An entry cannot be empty: use Remove instead.') : undefined),
            });
            if (value === undefined) {
                return;
            }
            const newContent = fromSingleLine(value);
            if (newContent === node.text) {
                return;
            }
            await edit(deps, {
                folder: node.folderUri,
                target: node.target,
                action: 'replace',
                oldText: node.text,
                newContent,
            });
        }),

        reg('myAgent.memory.remove', async (node?: unknown) => {
            if (!isEntry(node)) {
                return;
            }
            const remove = vscode.l10n.t('Remove');
            const answer = await vscode.window.showWarningMessage(
                vscode.l10n.t('Remove this entry from {0}?', fileName(node.target)),
                { modal: true, detail: node.text.slice(0, 1000) },
                remove,
            );
            if (answer !== remove) {
                return;
            }
            await edit(deps, { folder: node.folderUri, target: node.target, action: 'remove', oldText: node.text });
        }),

        reg('myAgent.memory.copy', async (node?: unknown) => {
            if (isEntry(node)) {
                await vscode.env.clipboard.writeText(node.text);
                vscode.window.setStatusBarMessage(vscode.l10n.t('$(check) Entry copied'), 3000);
            }
        }),

        reg('myAgent.memory.import', (arg?: unknown) => importIntoMemory(server, memory, deps.docs, arg)),

        reg('myAgent.mcp.addToWorkspace', () => addMemoryServerToWorkspace(server)),

        reg('myAgent.evalMemory', () => evaluateMemory(extensionEvalDeps(deps.context.secrets, server))),

        reg('myAgent.gitSetup', (arg?: unknown) => runGitSetup(server, arg)),

        reg('myAgent.recall.search', () => deps.recall.searchInteractive()),

        reg('myAgent.recall.clear', () => deps.recall.clear()),

        reg('myAgent.recall.open', async (node?: unknown) => {
            if (isRecallNode(node)) {
                await deps.recall.open(node);
            }
        }),

        reg('myAgent.recall.delete', async (node?: unknown) => {
            if (isRecallNode(node)) {
                await deps.recall.delete(node);
            }
        }),

        reg('myAgent.memory.openEntry', async (node?: unknown) => {
            if (isEntry(node)) {
                await openAt(node.path, node.entries, node.index);
            } else if (isStore(node)) {
                await openAt(node.store.path);
            } else {
                const folder = activeFolder();
                if (folder) {
                    await openAt(memoryFilePath(folder, 'memory'));
                }
            }
        }),
    ];
}
