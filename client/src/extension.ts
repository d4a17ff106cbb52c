import * as vscode from 'vscode';
import { ChatController } from './chat/controller';
import { PROPOSED_SCHEME, ProposedTextProvider } from './chat/proposed';
import { readSetup } from './chat/setup';
import { storageFiles } from './chat/transcriptFiles';
import { CHAT_VIEW_ID, ChatViewProvider } from './chatView';
import { registerCommands } from './commands';
import { OpenBufferSync } from './common/bufferSync';
import { getLog } from './common/log';
import { READONLY_SCHEME, ReadOnlyDocuments } from './common/readonlyDocs';
import { onApiKeyChanged } from './common/secrets';
import { ServerManager } from './common/server';
import { currentSettings, needsRestart, SECTION } from './common/settings';
import { registerMemoryTool } from './lm/memoryTool';
import { MemoryModel } from './memoryModel';
import { MemoryTreeProvider, VIEW_ID } from './memoryTree';
import { MemoryChangedParams, Methods } from './protocol';
import { RECALL_VIEW_ID, RecallController } from './recall/recallView';
import { SNAPSHOT_SCHEME, SnapshotContentProvider } from './snapshotView';
import { MemoryStatusBar } from './statusBar';

/** Wiring only: builds the parts, connects their events, registers them with VS Code. */

let server: ServerManager | undefined;
let chatController: ChatController | undefined;

export function activate(context: vscode.ExtensionContext): void {
    const log = getLog();
    context.subscriptions.push(log);
    log.info(`My Agent ${String(context.extension.packageJSON.version)} activating`);

    server = new ServerManager(context);
    const memory = new MemoryModel();
    const nearShare = (): number => currentSettings().memory.nearBudgetShare;
    const tree = new MemoryTreeProvider(memory, nearShare);
    const treeView = vscode.window.createTreeView(VIEW_ID, { treeDataProvider: tree, showCollapseAll: true });
    const statusBar = new MemoryStatusBar(memory, nearShare);
    const proposals = new ProposedTextProvider();
    // Kept transcripts: files in the workspace storage folder (the extension host's own disk); no folder open: workspaceState.
    const transcripts = context.storageUri?.scheme === 'file' ? storageFiles(context.storageUri.fsPath) : undefined;
    const chat = new ChatController(server, context.workspaceState, memory, proposals, transcripts);
    chatController = chat;
    const chatView = new ChatViewProvider(context.extensionUri, chat, context.workspaceState);
    const snapshots = new SnapshotContentProvider(memory.onDidChange); // an open frozen ↔ live diff follows memory
    const docs = new ReadOnlyDocuments();
    const srv = server;
    const recall = new RecallController(srv, docs);
    const recallView = vscode.window.createTreeView(RECALL_VIEW_ID, { treeDataProvider: recall });
    recall.attach(recallView);
    let buffers: OpenBufferSync | undefined;
    // What the chat shows before the first message (model, endpoint, key, trust), kept current.
    const refreshSetup = (): void => {
        void readSetup(context.secrets).then((setup) => chat.setSetup(setup));
    };
    // Restricted Mode: the Memory view says its files stay out of prompts (the chat shows a banner).
    const trustNote = (): void => {
        treeView.message = vscode.workspace.isTrusted
            ? undefined
            : vscode.l10n.t('Restricted Mode: these files are checked, but not used in prompts nor written by the agent until you trust this folder.');
    };
    refreshSetup();
    trustNote();

    context.subscriptions.push(
        srv,
        memory,
        tree,
        treeView,
        statusBar,
        chat,
        chatView,
        proposals,
        snapshots,
        docs,
        recall,
        recallView,
        registerMemoryTool(srv, memory),
        vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chatView, { webviewOptions: { retainContextWhenHidden: true } }),
        vscode.workspace.registerTextDocumentContentProvider(SNAPSHOT_SCHEME, snapshots),
        vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, proposals),
        vscode.workspace.registerTextDocumentContentProvider(READONLY_SCHEME, docs),
        ...registerCommands({ context, server: srv, memory, chat, snapshots, recall, docs }),

        srv.onDidStart((client) => {
            client.onNotification(Methods.memoryChanged, (p: MemoryChangedParams) => memory.onChanged(p));
            client.onNotification(Methods.chatEvent, (e: unknown) => chat.onEvent(e));
            client.onRequest(Methods.chatApprove, (params: unknown, token) => chat.approvals.handle(params, token));
            memory.setClient(client);
            void memory.refresh();
            buffers?.dispose();
            buffers = new OpenBufferSync(client);
            buffers.start();
            chat.onServerStarted(chatView.shown);
        }),
        srv.onDidStop(() => {
            memory.setClient(undefined);
            buffers?.dispose();
            buffers = undefined;
        }),
        { dispose: () => buffers?.dispose() },
        chat.onDidChangeSession((sessionId) => void memory.setSession(sessionId)),

        vscode.workspace.onDidChangeConfiguration((e) => {
            if (e.affectsConfiguration(`${SECTION}.model`) || e.affectsConfiguration(`${SECTION}.baseUrl`)) {
                refreshSetup();
            }
            if (needsRestart(e)) {
                void srv.restart();
            } else if (e.affectsConfiguration(`${SECTION}.memory`)) {
                tree.refreshView();
                statusBar.update();
            }
        }),
        onApiKeyChanged(context.secrets, () => {
            log.info('API key changed: restarting the server');
            refreshSetup();
            void srv.restart();
        }),
        vscode.workspace.onDidGrantWorkspaceTrust(() => {
            log.info('workspace trusted: restarting the server with memory enabled');
            refreshSetup();
            trustNote();
            void srv.restart();
        }),
        vscode.workspace.onDidChangeWorkspaceFolders(() => {
            // untrustedFolders lists folders by URI, so a new folder in Restricted Mode needs a restart.
            if (!vscode.workspace.isTrusted) {
                void srv.restart();
            } else {
                void memory.refresh();
            }
        }),
    );

    // Not awaited: a first-run venv setup shows its own progress and must not hold up activation.
    void srv.start();
}

export async function deactivate(): Promise<void> {
    // The transcript change still waiting for its timer is written before the window goes (a reload).
    await chatController?.flush();
    chatController = undefined;
    await server?.stop();
    server = undefined;
}
