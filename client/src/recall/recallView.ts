import * as vscode from 'vscode';
import type { RequestClient } from '../chat/seams';
import { errorMessage, isInvalidParams, isMethodNotFound } from '../common/errors';
import { folderForUri, pickFolder } from '../common/folders';
import { getLog } from '../common/log';
import { ReadOnlyDocuments } from '../common/readonlyDocs';
import { Methods, RecallItem, RecallItemParams, RecallKind, RecallSearchParams } from '../protocol';
import { plural } from '../common/plural';
import {
    firstLine,
    isoDay,
    parseRecallItem,
    parseRecallSearch,
    RECALL_LIMIT,
    recallDate,
    recallDocument,
    recallTitle,
} from './recallItems';

/**
 * The Recall view: searches a folder's recall archive (`myAgent/recall/search`), opens an item as a
 * read-only document (`recall/get`) and deletes one after a confirmation (`recall/delete`). It says so
 * when the memory provider is off (`provider: null`) or the server has no recall. Item text is shown as text, never as
 * Markdown or HTML: the archive holds what past chats said, which anyone may have written.
 */

export const RECALL_VIEW_ID = 'myAgent.recall';

export interface RecallServer {
    ready(): Promise<RequestClient | undefined>;
}

/** The part of a TreeView the controller sets (its message line above the rows). */
export interface MessageSurface {
    message?: string;
}

export interface RecallNode {
    kind: 'recall';
    folderUri: string;
    item: RecallItem;
}

interface RecallResults {
    folderUri: string;
    folderName: string;
    query: string;
    provider: string | null;
    items: RecallItem[];
}

export function kindLabel(kind: RecallKind): string {
    switch (kind) {
        case 'removed':
            return vscode.l10n.t('removed from memory');
        case 'replaced':
            return vscode.l10n.t('replaced in memory');
    }
    return vscode.l10n.t('past chat turn');
}

const ICONS: Record<RecallKind, string> = { turn: 'comment-discussion', removed: 'trash', replaced: 'history' };

export function whenText(item: RecallItem): string {
    return recallDate(item.time)?.toLocaleString() ?? '';
}

export function recallTreeItem(node: RecallNode): vscode.TreeItem {
    const { item } = node;
    const item0 = new vscode.TreeItem(firstLine(item.text) || vscode.l10n.t('(empty)'));
    item0.id = `${node.folderUri}|recall|${item.id}`;
    const when = whenText(item);
    item0.description = when ? `${kindLabel(item.kind)} · ${when}` : kindLabel(item.kind);
    // A plain string: shown as text, so archived Markdown or links cannot act in the hover.
    item0.tooltip = `${item.text.slice(0, 1500)}${item.text.length > 1500 ? '…' : ''}${item.source ? `\n\n${item.source}` : ''}`;
    item0.iconPath = new vscode.ThemeIcon(ICONS[item.kind]);
    item0.contextValue = 'myAgent.recallItem';
    item0.accessibilityInformation = { label: `${kindLabel(item.kind)}: ${item.text.slice(0, 300)}` };
    item0.command = { command: 'myAgent.recall.open', title: vscode.l10n.t('Open'), arguments: [node] };
    return item0;
}

export function isRecallNode(node: unknown): node is RecallNode {
    return !!node && typeof node === 'object' && (node as RecallNode).kind === 'recall' && !!(node as RecallNode).item;
}

export class RecallController implements vscode.TreeDataProvider<RecallNode>, vscode.Disposable {
    private readonly emitter = new vscode.EventEmitter<RecallNode | undefined | void>();
    readonly onDidChangeTreeData = this.emitter.event;
    private results: RecallResults | undefined;
    private surface: MessageSurface | undefined;
    private lastQuery = '';

    constructor(
        private readonly server: RecallServer,
        private readonly docs: ReadOnlyDocuments,
    ) {}

    attach(surface: MessageSurface): void {
        this.surface = surface;
    }

    private say(message: string | undefined): void {
        if (this.surface) {
            this.surface.message = message;
        }
    }

    get current(): Readonly<RecallResults> | undefined {
        return this.results;
    }

    getTreeItem(node: RecallNode): vscode.TreeItem {
        return recallTreeItem(node);
    }

    getChildren(node?: RecallNode): RecallNode[] {
        if (node || !this.results) {
            return [];
        }
        const folderUri = this.results.folderUri;
        return this.results.items.map((item) => ({ kind: 'recall', folderUri, item }));
    }

    /** Asks for a query (and a folder when there are several), then searches. */
    async searchInteractive(): Promise<void> {
        const folder = await pickFolder(vscode.l10n.t('Search the archive of which folder?'));
        if (!folder) {
            void vscode.window.showInformationMessage(vscode.l10n.t('Open a folder first: recall searches a folder\'s archive.'));
            return;
        }
        const query = await vscode.window.showInputBox({
            title: vscode.l10n.t('Search Recall in {0}', folder.name),
            prompt: vscode.l10n.t('Words to look for in past chats and in entries memory let go of.'),
            value: this.lastQuery,
            ignoreFocusOut: true,
            validateInput: (v) => (v.trim() === '' ? vscode.l10n.t('Type something to search for.') : undefined),
        });
        if (query === undefined) {
            return;
        }
        await this.search(folder, query.trim());
    }

    async search(folder: vscode.WorkspaceFolder, query: string): Promise<void> {
        this.lastQuery = query;
        const client = await this.server.ready();
        if (!client) {
            this.say(vscode.l10n.t('The My Agent server is not running: see its output.'));
            return;
        }
        const params: RecallSearchParams = { folder: folder.uri.toString(), query, limit: RECALL_LIMIT };
        this.say(vscode.l10n.t('Searching…'));
        try {
            const r = parseRecallSearch(await client.sendRequest<unknown>(Methods.recallSearch, params));
            if (!r) {
                throw new Error(vscode.l10n.t('the server sent no results'));
            }
            this.results = { folderUri: folder.uri.toString(), folderName: folder.name, query, provider: r.provider, items: r.items };
            if (r.provider === null) {
                this.say(
                    vscode.l10n.t(
                        'Recall is off for {0}: no memory provider is on (see the setting myAgent.memory.provider).',
                        folder.name,
                    ),
                );
            } else if (r.items.length === 0) {
                this.say(vscode.l10n.t('Nothing in the archive of {0} matches "{1}".', folder.name, query));
            } else {
                const n = r.items.length;
                this.say(
                    plural(n, {
                        one: vscode.l10n.t('{0} result for "{1}" in {2} ({3}).', n, query, folder.name, r.provider),
                        other: vscode.l10n.t('{0} results for "{1}" in {2} ({3}).', n, query, folder.name, r.provider),
                    }),
                );
            }
        } catch (e) {
            this.results = undefined;
            getLog().warn(`recall/search: ${errorMessage(e)}`);
            this.say(
                isMethodNotFound(e)
                    ? vscode.l10n.t('This version of the My Agent server has no recall.')
                    : vscode.l10n.t('Search failed: {0}', errorMessage(e)),
            );
        }
        this.emitter.fire();
    }

    clear(): void {
        this.results = undefined;
        this.say(undefined);
        this.emitter.fire();
    }

    /** Opens an item as a read-only document, with its full text from `recall/get`. */
    async open(node: RecallNode): Promise<void> {
        const client = await this.server.ready();
        if (!client) {
            return;
        }
        const params: RecallItemParams = { folder: node.folderUri, id: node.item.id };
        let item = node.item;
        try {
            const r = await client.sendRequest<unknown>(Methods.recallGet, params);
            const got = parseRecallItem(r && typeof r === 'object' ? (r as { item?: unknown }).item : undefined);
            if (got) {
                item = got;
            }
        } catch (e) {
            if (isInvalidParams(e)) {
                void vscode.window.showWarningMessage(vscode.l10n.t('This item is no longer in the archive: {0}', errorMessage(e)));
                this.drop(node.item.id);
                return;
            }
            getLog().warn(`recall/get: ${errorMessage(e)}`);
            void vscode.window.showWarningMessage(vscode.l10n.t('Could not fetch the whole item ({0}); showing what the search returned.', errorMessage(e)));
        }
        const folderName = folderForUri(node.folderUri)?.name ?? 'folder';
        const text = recallDocument(item, { heading: vscode.l10n.t('Recalled from the archive of {0}', folderName), kind: kindLabel(item.kind) }, whenText(item));
        const safeId = encodeURIComponent(item.id).slice(0, 80);
        // The tab is titled by the item's first line (the document's name, not encoded: no separators in it);
        // its folder and id keep it unique.
        // No extension: the archived text is plain text, never rendered as Markdown.
        const title = recallTitle(item, vscode.l10n.t('Recall: {0} {1}', isoDay(item.time), kindLabel(item.kind)));
        await this.docs.show(`/recall/${encodeURIComponent(folderName)}/${safeId}/${title}`, text, 'plaintext');
    }

    /** Deletes an item from the archive after a modal confirmation. */
    async delete(node: RecallNode): Promise<void> {
        const yes = vscode.l10n.t('Delete');
        const answer = await vscode.window.showWarningMessage(
            vscode.l10n.t('Delete this item from the archive? It cannot be recalled afterwards.'),
            { modal: true, detail: node.item.text.slice(0, 1000) },
            yes,
        );
        if (answer !== yes) {
            return;
        }
        const client = await this.server.ready();
        if (!client) {
            return;
        }
        const params: RecallItemParams = { folder: node.folderUri, id: node.item.id };
        try {
            await client.sendRequest<unknown>(Methods.recallDelete, params);
            this.drop(node.item.id);
            vscode.window.setStatusBarMessage(vscode.l10n.t('$(check) Deleted from the archive'), 4000);
        } catch (e) {
            void vscode.window.showErrorMessage(vscode.l10n.t('Delete failed: {0}', errorMessage(e)));
        }
    }

    private drop(id: string): void {
        if (this.results) {
            this.results = { ...this.results, items: this.results.items.filter((i) => i.id !== id) };
            this.emitter.fire();
        }
    }

    dispose(): void {
        this.emitter.dispose();
    }
}
