import * as vscode from 'vscode';
import { parseSessions } from '../chatEvents';
import { historyRows } from '../chatHistory';
import { errorMessage } from '../common/errors';
import { Methods, SessionInfo } from '../protocol';
import type { ChatServer, RequestClient } from './seams';
import type { ChatStore } from './store';

/**
 * The past-sessions panel: lists the saved sessions of every workspace folder (merged, newest first) and
 * deletes one after the user confirms. Reopening a row is the controller's `resume`.
 */
export class SessionHistory {
    constructor(
        private readonly store: ChatStore,
        private readonly server: ChatServer,
        private readonly folderName: (uri: string) => string,
    ) {}

    private async list(client: RequestClient): Promise<SessionInfo[]> {
        const folders = vscode.workspace.workspaceFolders ?? [];
        const params = folders.length ? folders.map((f) => ({ folder: f.uri.toString() })) : [{}];
        const lists = await Promise.all(params.map((p) => client.sendRequest<unknown>(Methods.chatSessions, p)));
        const byId = new Map<string, SessionInfo>();
        for (const s of lists.flatMap(parseSessions)) {
            if (!byId.has(s.sessionId)) {
                byId.set(s.sessionId, s);
            }
        }
        return [...byId.values()];
    }

    async open(): Promise<void> {
        this.store.dispatch({ type: 'historyOpened' });
        const client = await this.server.ready();
        if (!client) {
            this.store.dispatch({ type: 'historyFailed', error: vscode.l10n.t('The My Agent server is not running: see the output.') });
            return;
        }
        try {
            const sessions = await this.list(client);
            const language = vscode.env.language || 'en';
            const rows = historyRows(sessions, {
                currentId: this.store.state.sessionId,
                folderName: this.folderName,
                formatWhen: (sec) => new Date(sec * 1000).toLocaleString(language, { dateStyle: 'medium', timeStyle: 'short' }),
                untitled: vscode.l10n.t('(untitled chat)'),
            });
            this.store.dispatch({ type: 'historyLoaded', rows });
        } catch (e) {
            this.store.dispatch({ type: 'historyFailed', error: errorMessage(e) });
        }
    }

    close(): void {
        this.store.dispatch({ type: 'historyClosed' });
    }

    /** Asks first (the transcript is gone for good; memory is not touched); true once the server deleted it. */
    async delete(sessionId: string): Promise<boolean> {
        const row = this.store.state.history.rows.find((r) => r.sessionId === sessionId);
        const yes = vscode.l10n.t('Delete');
        const answer = await vscode.window.showWarningMessage(
            vscode.l10n.t('Delete the saved chat "{0}"?', row?.title ?? sessionId),
            { modal: true, detail: vscode.l10n.t('Its transcript is removed for good. Memory files are not touched.') },
            yes,
        );
        if (answer !== yes) {
            return false;
        }
        const client = await this.server.ready();
        if (!client) {
            return false;
        }
        try {
            await client.sendRequest(Methods.chatDelete, { sessionId });
        } catch (e) {
            void vscode.window.showErrorMessage(vscode.l10n.t('Could not delete the chat: {0}', errorMessage(e)));
            return false;
        }
        this.store.dispatch({ type: 'historyRemoved', sessionId });
        return true;
    }
}
