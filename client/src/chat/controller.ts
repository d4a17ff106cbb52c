import * as path from 'path';
import * as vscode from 'vscode';
import { parseChatEvent, parseCompactResult, parseResume, parseSessionUsage } from '../chatEvents';
import { turnsFromHistory } from '../chatHistory';
import { ContextChip, isBusy, pendingApprovals, SetupInfo } from '../chatModel';
import { toContextRefs } from '../contextChips';
import { errorMessage, isCancelled, isInvalidParams, isMethodNotFound } from '../common/errors';
import { activeFolder, folderForUri } from '../common/folders';
import { getLog, showErrorWithOutput } from '../common/log';
import {
    ApproveParams,
    ChatSendParams,
    ChatStartResult,
    JournalEntry,
    MemoryEditResult,
    MemoryLogResult,
    MemoryStateResult,
    Methods,
} from '../protocol';
import { agentNotice, fetchJournalRecord, parseLog, undoNote } from '../memoryChange';
import { changedLines } from '../webview/toolView';
import type { HostAction } from '../webview/messages';
import { ApprovalBroker } from './approvals';
import type { ChatServer, RequestClient } from './seams';
import { activeEditorContext } from './editorContext';
import { openWorkspacePath, OpenTarget, showAt } from './openPath';
import { PROPOSED_SCHEME, ProposedTextProvider } from './proposed';
import { SessionHistory } from './history';
import { SETUP_SETTINGS_QUERY } from './setup';
import { ChatStore } from './store';
import { mementoFiles, mergeRestored, TranscriptFiles, TranscriptStore } from './transcripts';

/**
 * The chat's behaviour, apart from its webview: sessions (start, send, stop, resume, compact, delete, the
 * last one restored after a reload), approvals, editor context and undo. It talks to the server through a
 * narrow request seam and keeps all state in the ChatStore, which the view renders.
 */

/** workspaceState key: the session the chat showed last, reopened after a window reload. */
export type { ChatServer, RequestClient } from './seams';

export const LAST_SESSION_KEY = 'myAgent.chat.lastSession';

/** Context keys: an approval waits (the keybindings), and the proposal documents of the waiting cards
 * (the diff editor's Approve / Deny show only for those: `resourcePath in myAgent.chat.pendingProposals`). */
export const HAS_PENDING_KEY = 'myAgent.chat.hasPending';
/** The chat webview has the keyboard focus (its keybindings apply; VS Code's focusedView does not see
 * inside a webview). */
export const FOCUSED_KEY = 'myAgent.chat.focused';
export const PENDING_PROPOSALS_KEY = 'myAgent.chat.pendingProposals';

function errorCode(e: unknown): number | undefined {
    const code = (e as { code?: unknown } | undefined)?.code;
    return typeof code === 'number' ? code : undefined;
}

function isUri(v: unknown): v is vscode.Uri {
    return !!v && typeof v === 'object' && typeof (v as vscode.Uri).scheme === 'string' && typeof (v as vscode.Uri).path === 'string';
}

/** What the controller asks of the view. */
export interface ChatSurface {
    /** Shows the chat view; `focusInput` also puts the cursor in the message box. */
    reveal(focusInput: boolean): Promise<void>;
    /** Makes the view visible without taking the focus (an approval is waiting). */
    showQuietly(): void;
    /** Puts text back into an empty message box (a send that did not go through). */
    restoreDraft(text: string): void;
}

export interface MemorySink {
    setState(state: MemoryStateResult): void;
}

export class ChatController implements vscode.Disposable {
    readonly store = new ChatStore();
    readonly approvals: ApprovalBroker;
    private sessionFolder: string | undefined;
    private pending: vscode.CancellationTokenSource | undefined;
    /** Reopen the remembered session when the chat is first shown (after a reload or a server restart). */
    private restoreWanted = true;
    private restoring: Promise<void> | undefined;
    private surface: ChatSurface | undefined;
    private readonly subs: vscode.Disposable[] = [];
    private readonly history: SessionHistory;
    private readonly transcripts: TranscriptStore;
    private saveTimer: ReturnType<typeof setTimeout> | undefined;
    private contextKeys = '';

    constructor(
        private readonly server: ChatServer,
        private readonly memento: vscode.Memento,
        private readonly memory: MemorySink,
        private readonly proposals: ProposedTextProvider,
        /** Where transcripts are kept for a reload (the workspace storage folder); else workspaceState. */
        transcriptFiles?: TranscriptFiles,
    ) {
        this.approvals = new ApprovalBroker(
            {
                currentSession: () => this.store.state.sessionId,
                show: (request) => this.showApproval(request),
                settle: (callId, status) => {
                    this.store.dispatch({ type: 'approvalDecided', callId, status, at: Date.now() });
                    // Decided (or gone): its diff would now show two equal sides.
                    void this.proposals.closeDiff(callId);
                },
            },
            getLog(),
        );
        this.history = new SessionHistory(this.store, server, (uri) => this.folderName(uri));
        this.transcripts = new TranscriptStore(transcriptFiles ?? mementoFiles(memento));
        this.subs.push(
            server.onDidStop(() => this.onServerStopped()),
            this.store.onDidChange(() => this.afterChange()),
            this.store,
        );
    }

    private afterChange(): void {
        this.updateContextKeys();
        this.scheduleSave();
    }

    private updateContextKeys(): void {
        const pending = pendingApprovals(this.store.state);
        const paths = pending.map((p) => this.proposals.proposedPath(p.callId)).filter((p): p is string => !!p);
        const key = JSON.stringify([pending.length > 0, paths]);
        if (key === this.contextKeys) {
            return;
        }
        this.contextKeys = key;
        void vscode.commands.executeCommand('setContext', HAS_PENDING_KEY, pending.length > 0);
        void vscode.commands.executeCommand('setContext', PENDING_PROPOSALS_KEY, paths);
    }

    /** Keeps the transcript (cards, notices, outcomes) for a reload; while a reply streams, once it settles. */
    private scheduleSave(): void {
        const state = this.store.state;
        if (!state.sessionId || !state.turns.length) {
            return;
        }
        clearTimeout(this.saveTimer);
        this.saveTimer = setTimeout(() => void this.saveTranscript(), isBusy(state) ? 2000 : 300);
    }

    private saveTranscript(): Promise<void> {
        clearTimeout(this.saveTimer);
        this.saveTimer = undefined;
        const { sessionId, turns } = this.store.state;
        return sessionId && turns.length ? this.transcripts.save(sessionId, turns) : Promise.resolve();
    }

    /** Writes a transcript change still waiting for its timer, and waits for the writes under way (the
     * window is closing or reloading). */
    flush(): Promise<void> {
        return this.saveTimer !== undefined ? this.saveTranscript() : this.transcripts.idle();
    }

    private focused = false;

    /** The webview gained or lost the keyboard focus. */
    setFocused(focused: boolean): void {
        if (focused !== this.focused) {
            this.focused = focused;
            void vscode.commands.executeCommand('setContext', FOCUSED_KEY, focused);
        }
    }

    /** What is configured (model, endpoint, key, trust): the setup state and the Restricted Mode banner. */
    setSetup(setup: SetupInfo): void {
        this.store.dispatch({ type: 'setup', setup });
    }

    get sessionId(): string | undefined {
        return this.store.state.sessionId;
    }

    get folderUri(): string | undefined {
        return this.sessionFolder;
    }

    readonly onDidChangeSession = (listener: (id: string | undefined) => void): vscode.Disposable =>
        this.store.onDidChangeSession(listener);

    attachSurface(surface: ChatSurface | undefined): void {
        this.surface = surface;
    }

    async reveal(focusInput = true): Promise<void> {
        await this.surface?.reveal(focusInput);
    }

    /** Handles a myAgent/chat/event notification (validated; other sessions' events are ignored). */
    onEvent(raw: unknown): void {
        const event = parseChatEvent(raw);
        if (!event) {
            getLog().warn(`chat/event: ignored a malformed event ${JSON.stringify(raw)?.slice(0, 200)}`);
            return;
        }
        if (event.sessionId !== this.store.state.sessionId) {
            return;
        }
        this.store.dispatch({ type: 'event', event, at: Date.now() });
        if (event.kind === 'memory_changed' && event.journalId) {
            void this.describeMemoryChange(event.journalId);
        }
    }

    /** Quotes the entry an agent's write added or changed in its notice (the journal record the event names). */
    private async describeMemoryChange(journalId: string): Promise<void> {
        try {
            const client = await this.server.ready();
            const record = client && (await fetchJournalRecord(client, this.sessionFolder, journalId));
            if (record) {
                this.store.dispatch({ type: 'memoryDescribed', journalId, summary: agentNotice(record) });
            }
        } catch (e) {
            getLog().warn(`memory/log for the notice of ${journalId}: ${errorMessage(e)}`);
        }
    }

    // ---- sessions ------------------------------------------------------------------------------------------

    private remember(sessionId: string | undefined): void {
        void this.memento.update(LAST_SESSION_KEY, sessionId);
    }

    private endQuietly(client: RequestClient, sessionId: string | undefined): void {
        if (sessionId) {
            client.sendRequest(Methods.chatEnd, { sessionId }).catch(() => undefined);
        }
    }

    private folderName(uri: string): string {
        return folderForUri(uri)?.name ?? (path.posix.basename(vscode.Uri.parse(uri).path) || uri);
    }

    /**
     * New chat: forgets the old session and starts one with a freshly frozen snapshot. Returns the error
     * message when it could not start; `quiet` keeps it in the chat instead of a notification.
     */
    async startSession(folder?: vscode.WorkspaceFolder, quiet = false): Promise<string | undefined> {
        this.restoreWanted = false;
        const client = await this.server.ready();
        if (!client) {
            return vscode.l10n.t('The My Agent server is not running: see the output.');
        }
        this.stop();
        this.endQuietly(client, this.store.state.sessionId);
        const target = folder ?? activeFolder();
        try {
            const r = await client.sendRequest<ChatStartResult>(Methods.chatStart, target ? { folder: target.uri.toString() } : {});
            this.sessionFolder = r.folder ?? target?.uri.toString();
            const name = (r.folder && folderForUri(r.folder)?.name) ?? target?.name ?? '';
            this.store.dispatch({ type: 'sessionStarted', sessionId: r.sessionId, folderName: name, memory: r.memory !== false });
            this.remember(r.sessionId);
            return undefined;
        } catch (e) {
            const message = vscode.l10n.t('Could not start a chat session: {0}', errorMessage(e));
            getLog().error(message);
            if (!quiet) {
                this.store.dispatch({ type: 'notice', notice: message });
                void showErrorWithOutput(message);
            }
            return message;
        }
    }

    /** Reopens the remembered session once (on the first show after a reload, or after a server restart). */
    restoreLast(): Promise<void> {
        if (this.restoring) {
            return this.restoring;
        }
        if (!this.restoreWanted || this.store.state.sessionId) {
            return Promise.resolve();
        }
        const sessionId = this.memento.get<string>(LAST_SESSION_KEY);
        if (!sessionId) {
            this.restoreWanted = false;
            return Promise.resolve();
        }
        const restoring = this.resume(sessionId, true)
            .then(() => undefined)
            .finally(() => {
                this.restoring = undefined;
            });
        this.restoring = restoring;
        return restoring;
    }

    /**
     * Reopens a persisted session with its transcript (`chat/resume`). On failure the chat says why and the
     * next message starts a new session; the message box is never touched.
     */
    async resume(sessionId: string, auto = false): Promise<boolean> {
        this.restoreWanted = false;
        if (isBusy(this.store.state) && !auto) {
            void vscode.window.showInformationMessage(vscode.l10n.t('Stop the running reply before opening another chat.'));
            return false;
        }
        const client = await this.server.ready();
        if (!client) {
            this.restoreWanted = auto; // try again once the server runs
            return false;
        }
        this.stop();
        const previous = this.store.state.sessionId;
        this.store.dispatch({
            type: 'restoring',
            on: true,
            notice: auto ? vscode.l10n.t('Reopening your last chat…') : vscode.l10n.t('Reopening the chat…'),
        });
        try {
            const r = parseResume(await client.sendRequest<unknown>(Methods.chatResume, { sessionId }));
            if (!r) {
                throw new Error(vscode.l10n.t('the server sent no transcript'));
            }
            const kept = await this.transcripts.get(r.sessionId);
            if (previous && previous !== r.sessionId) {
                this.endQuietly(client, previous);
            }
            this.sessionFolder = r.folder || undefined;
            this.store.dispatch({
                type: 'sessionResumed',
                sessionId: r.sessionId,
                folderName: r.folder ? this.folderName(r.folder) : '',
                memory: r.memory,
                // The transcript as the user saw it (cards, notes) where it matches the server's history.
                turns: mergeRestored(turnsFromHistory(r.messages), kept),
                notice: auto ? vscode.l10n.t('Reopened your last chat.') : undefined,
            });
            this.remember(r.sessionId);
            return true;
        } catch (e) {
            const why = isMethodNotFound(e) ? vscode.l10n.t('this server cannot reopen sessions') : errorMessage(e);
            getLog().warn(`chat/resume ${sessionId}: ${errorMessage(e)}`);
            if (isMethodNotFound(e) || isInvalidParams(e)) {
                if (this.memento.get<string>(LAST_SESSION_KEY) === sessionId) {
                    this.remember(undefined); // it cannot come back: do not try again at every reload
                }
            }
            this.store.dispatch({
                type: 'notice',
                notice: auto
                    ? vscode.l10n.t('Could not reopen your last chat ({0}): your next message starts a new one.', why)
                    : vscode.l10n.t('Could not reopen that chat: {0}', why),
            });
            return false;
        } finally {
            this.store.dispatch({ type: 'restoring', on: false, notice: this.store.state.notice });
        }
    }

    private onServerStopped(): void {
        this.pending?.cancel();
        this.approvals.cancelAll();
        if (this.store.state.sessionId) {
            this.sessionFolder = undefined;
            this.restoreWanted = true; // persisted: the restarted server can reopen it
            this.store.dispatch({
                type: 'sessionLost',
                notice: vscode.l10n.t('The server restarted: the next message starts a new session.'),
            });
        }
    }

    /** The server (re)started: reopen the remembered session if the chat was shown and has none. */
    onServerStarted(viewShown: boolean): void {
        if (viewShown) {
            void this.restoreLast();
        }
    }

    // ---- turns -------------------------------------------------------------------------------------------

    /** Sends a message; `context` replaces the waiting chips (a Retry resends its own). */
    async send(text: string, context?: ContextChip[]): Promise<void> {
        if (this.restoring) {
            await this.restoring;
        }
        if (isBusy(this.store.state)) {
            this.surface?.restoreDraft(text);
            return;
        }
        if (!this.store.state.sessionId && this.restoreWanted) {
            await this.restoreLast();
        }
        if (!this.store.state.sessionId) {
            const failure = await this.startSession(undefined, true);
            if (failure) {
                // The error shows in place, under the message the user typed; the text goes back to the box.
                this.store.dispatch({ type: 'userSent', text });
                this.store.dispatch({ type: 'failed', message: failure });
                this.surface?.restoreDraft(text);
                return;
            }
        }
        const client = await this.server.ready();
        const sessionId = this.store.state.sessionId;
        if (!client || !sessionId) {
            this.surface?.restoreDraft(text);
            return;
        }
        const chips = context ?? this.store.state.attachments;
        const params: ChatSendParams = { sessionId, message: text };
        if (chips.length) {
            params.context = toContextRefs(chips);
        }
        this.store.dispatch({ type: 'userSent', text, context: chips, retry: context !== undefined });
        const cts = new vscode.CancellationTokenSource();
        this.pending = cts;
        try {
            const r = await client.sendRequest<{ reply?: unknown; usage?: unknown }>(Methods.chatSend, params, cts.token);
            if (this.store.state.sessionId === sessionId) {
                this.store.dispatch({
                    type: 'replied',
                    reply: typeof r?.reply === 'string' ? r.reply : '',
                    usage: parseSessionUsage(r?.usage),
                });
            }
        } catch (e) {
            if (this.store.state.sessionId !== sessionId) {
                return;
            }
            if (cts.token.isCancellationRequested || isCancelled(e)) {
                this.store.dispatch({ type: 'stopped' });
            } else {
                getLog().warn(`chat/send: ${errorMessage(e)}`);
                this.store.dispatch({ type: 'failed', message: errorMessage(e), code: errorCode(e) });
            }
        } finally {
            if (this.pending === cts) {
                this.pending = undefined;
            }
            cts.dispose();
            // The turn is over: a card still waiting can no longer be answered.
            this.approvals.cancelAll();
        }
    }

    /** Retry on a failed turn: it leaves the transcript and its message (with its context) is sent again. */
    async retry(turnId: number): Promise<void> {
        const state = this.store.state;
        const turn = state.turns.find((t) => t.id === turnId);
        if (!turn || turn.status !== 'error' || !turn.user || isBusy(state)) {
            return;
        }
        this.store.dispatch({ type: 'dropTurn', id: turnId });
        await this.send(turn.user, turn.context ?? []);
    }

    /** Stop: cancels the pending chat/send ($/cancelRequest) and every waiting approval; the session stays usable. */
    stop(): void {
        this.approvals.cancelAll();
        if (this.pending) {
            this.pending.cancel();
            this.store.dispatch({ type: 'stopped' });
        }
    }

    /** Compact now: the server summarizes the older turns (`chat/compact`); a marker shows where. */
    async compact(): Promise<void> {
        const sessionId = this.store.state.sessionId;
        if (!sessionId || isBusy(this.store.state)) {
            return;
        }
        const client = await this.server.ready();
        if (!client) {
            return;
        }
        this.store.dispatch({ type: 'compactStarted' });
        try {
            const r = parseCompactResult(await client.sendRequest<unknown>(Methods.chatCompact, { sessionId }));
            this.store.dispatch({
                type: 'compactFinished',
                ...r,
                notice: r.compacted ? undefined : vscode.l10n.t('Nothing to compact yet: the session is short.'),
            });
        } catch (e) {
            this.store.dispatch({
                type: 'compactFinished',
                compacted: false,
                before: 0,
                after: 0,
                notice: isMethodNotFound(e)
                    ? vscode.l10n.t('This server cannot compact sessions.')
                    : vscode.l10n.t('Compact failed: {0}', errorMessage(e)),
            });
        }
    }

    // ---- history ---------------------------------------------------------------------------------------------

    openHistory(): Promise<void> {
        return this.history.open();
    }

    closeHistory(): void {
        this.history.close();
    }

    /** Deletes a saved session after asking; the chat that showed it starts over. */
    async deleteSession(sessionId: string): Promise<void> {
        const isCurrent = sessionId === this.store.state.sessionId;
        if (isCurrent && isBusy(this.store.state)) {
            void vscode.window.showInformationMessage(vscode.l10n.t('Stop the running reply before deleting this chat.'));
            return;
        }
        if (!(await this.history.delete(sessionId))) {
            return;
        }
        if (this.memento.get<string>(LAST_SESSION_KEY) === sessionId) {
            this.remember(undefined);
        }
        void this.transcripts.forget(sessionId);
        if (isCurrent) {
            this.sessionFolder = undefined;
            this.store.dispatch({ type: 'sessionLost', notice: vscode.l10n.t('This chat was deleted: the next message starts a new one.') });
        }
    }

    // ---- approvals, context, undo --------------------------------------------------------------------------

    private showApproval(request: ApproveParams): void {
        let file: vscode.Uri | undefined;
        if (request.uri) {
            try {
                const parsed = vscode.Uri.parse(request.uri);
                file = parsed.scheme === 'file' ? parsed : undefined;
            } catch {
                file = undefined;
            }
        }
        const canDiff = !!file && request.newText !== undefined;
        if (file && request.newText !== undefined) {
            this.proposals.remember(request.callId, file, request.newText);
        }
        this.store.dispatch({
            type: 'approvalRequested',
            request: {
                callId: request.callId,
                approvalKind: request.kind,
                title: request.title,
                detail: request.detail,
                path: file ? vscode.workspace.asRelativePath(file) : undefined,
                cwd: request.cwd ? this.folderLabel(request.cwd) : undefined,
                canDiff,
                ...(request.sources ? { sources: request.sources } : {}),
            },
        });
        this.surface?.showQuietly();
    }

    /** A command's folder as the user knows it: a workspace folder by its name, else relative, else as is. */
    private folderLabel(fsPath: string): string {
        const uri = vscode.Uri.file(fsPath);
        const root = (vscode.workspace.workspaceFolders ?? []).find((f) => f.uri.fsPath === uri.fsPath);
        if (root) {
            return root.name;
        }
        const rel = vscode.workspace.asRelativePath(uri);
        return rel && rel !== uri.fsPath ? rel : fsPath;
    }

    decide(callId: string, approved: boolean): void {
        this.approvals.decide(callId, approved);
    }

    /**
     * Approve / Deny from the keyboard or the diff editor's title bar: the proposal that editor shows (`arg`,
     * else the active editor's), else the oldest waiting card. A proposal that no longer waits is never
     * swapped for another card. Returns whether a card was decided.
     */
    decidePending(approved: boolean, arg?: unknown): boolean {
        const waiting = pendingApprovals(this.store.state).map((p) => p.callId);
        const shown = isUri(arg) ? arg : vscode.window.activeTextEditor?.document.uri;
        const named = shown?.scheme === PROPOSED_SCHEME ? (this.proposals.callIdOf(shown) ?? '') : undefined;
        const callId = named ?? waiting[0];
        if (!callId || !waiting.includes(callId)) {
            void vscode.window.showInformationMessage(
                named !== undefined
                    ? vscode.l10n.t('This proposal no longer waits for your answer.')
                    : vscode.l10n.t('Nothing waits for your approval.'),
            );
            return false;
        }
        return this.approvals.decide(callId, approved);
    }

    /** "Open at the change" under an approved edit: the file, with the lines it changed selected. */
    async openChange(callId: string): Promise<void> {
        const part = this.store.state.turns
            .flatMap((t) => t.parts)
            .find((p) => p.kind === 'approval' && p.callId === callId && !p.reportOnly);
        if (!part || part.kind !== 'approval') {
            return;
        }
        const lines = changedLines(part.detail);
        const file = this.proposals.fileOf(callId);
        if (file) {
            await showAt(file, lines?.start, lines?.end);
        } else if (part.path) {
            await openWorkspacePath({ path: part.path, line: lines?.start, endLine: lines?.end }, this.sessionFolder);
        }
    }

    /** A workspace path in the agent's text (a link): opened in the editor, only inside a workspace folder. */
    openPath(target: OpenTarget): Promise<boolean> {
        return openWorkspacePath(target, this.sessionFolder);
    }

    /** The buttons of errors, the setup state and the Restricted Mode banner. */
    async runAction(action: HostAction): Promise<void> {
        switch (action) {
            case 'setApiKey':
                await vscode.commands.executeCommand('myAgent.setApiKey');
                return;
            case 'openSettings':
                await vscode.commands.executeCommand('workbench.action.openSettings', SETUP_SETTINGS_QUERY);
                return;
            case 'showOutput':
                await vscode.commands.executeCommand('myAgent.showOutput');
                return;
            case 'manageTrust':
                await vscode.commands.executeCommand('workbench.trust.manage');
                return;
        }
    }

    async openDiff(callId: string): Promise<void> {
        await this.proposals.openDiff(callId);
    }

    /** Attaches the active editor (or its selections) to the next message, as chips the user can remove. */
    attachActiveEditor(): boolean {
        const ctx = activeEditorContext();
        if ('error' in ctx) {
            void vscode.window.showInformationMessage(ctx.error);
            return false;
        }
        this.store.dispatch({ type: 'attach', chips: ctx.chips });
        return true;
    }

    detach(id: string): void {
        this.store.dispatch({ type: 'detach', id });
    }

    /** Undo for a memory_changed notice: exactly that change (by its journal id), even when memory changed
     * again since; the server reverts it on top of the file as it is, or says why it cannot. */
    async undo(journalId?: string): Promise<void> {
        const client = await this.server.ready();
        if (!client) {
            return;
        }
        const folder = this.sessionFolder ?? activeFolder()?.uri.toString();
        let undone: JournalEntry | undefined;
        try {
            if (journalId) {
                const log = await client.sendRequest<MemoryLogResult>(Methods.memoryLog, { folder });
                undone = parseLog(log).find((e) => e.id === journalId);
            }
            const r = await client.sendRequest<MemoryEditResult>(Methods.memoryUndo, { folder, ...(journalId ? { id: journalId } : {}) });
            if (r.state) {
                this.memory.setState(r.state);
            }
            this.store.dispatch({ type: 'undone', journalId, message: undone ? undoNote(undone) : (r.message ?? '') });
        } catch (e) {
            void vscode.window.showErrorMessage(vscode.l10n.t('Undo failed: {0}', errorMessage(e)));
        }
    }

    dispose(): void {
        this.pending?.cancel();
        this.approvals.cancelAll();
        this.subs.forEach((s) => s.dispose());
        void this.flush(); // a window that closes keeps what it showed
    }
}
