import * as vscode from 'vscode';
import { budgetLevel, BudgetLevel, entryLabel, fileName, percent } from './common/budget';
import { FolderMemory, MemoryModel } from './memoryModel';
import { StoreState, Target } from './protocol';

/** The Memory view: folder -> MEMORY.md / USER.md (usage, budget icon) -> entries. */

export const VIEW_ID = 'myAgent.memory';

export interface FolderNode {
    kind: 'folder';
    folder: vscode.WorkspaceFolder;
}

export interface StoreNode {
    kind: 'store';
    folderUri: string;
    store: StoreState;
}

export interface EntryNode {
    kind: 'entry';
    folderUri: string;
    target: Target;
    path: string;
    index: number;
    text: string;
    entries: readonly string[];
}

export interface MessageNode {
    kind: 'message';
    text: string;
    error: boolean;
}

export type MemoryNode = FolderNode | StoreNode | EntryNode | MessageNode;

const ICONS: Record<BudgetLevel, [string, string | undefined]> = {
    ok: ['notebook', undefined],
    near: ['warning', 'list.warningForeground'],
    over: ['error', 'list.errorForeground'],
};

export function levelIcon(level: BudgetLevel): vscode.ThemeIcon {
    const [id, color] = ICONS[level];
    return new vscode.ThemeIcon(id, color ? new vscode.ThemeColor(color) : undefined);
}

export function storeTreeItem(node: StoreNode, nearShare: number): vscode.TreeItem {
    const s = node.store;
    const item = new vscode.TreeItem(
        fileName(s.target),
        s.entries.length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
    );
    item.id = `${node.folderUri}|${s.target}`;
    item.resourceUri = vscode.Uri.file(s.path);
    if (s.available === false) {
        item.description = vscode.l10n.t('unavailable');
        item.iconPath = levelIcon('over');
        item.tooltip = vscode.l10n.t('{0} is unavailable: {1}', s.path, s.error ?? '');
        item.contextValue = 'myAgent.store.unavailable';
        return item;
    }
    const level = budgetLevel(s.used, s.limit, nearShare);
    item.description = `${s.used}/${s.limit} (${percent(s.used, s.limit)}%)`;
    item.iconPath = levelIcon(level);
    const status =
        level === 'over'
            ? vscode.l10n.t('Over budget')
            : level === 'near'
              ? vscode.l10n.t('Near budget')
              : vscode.l10n.t('Within budget');
    item.tooltip = `${s.path}\n${vscode.l10n.t('{0}/{1} characters, {2} entries. {3}', s.used, s.limit, s.entries.length, status)}`;
    item.contextValue = 'myAgent.store';
    item.command = {
        command: 'myAgent.memory.openEntry',
        title: vscode.l10n.t('Open'),
        arguments: [node],
    };
    return item;
}

export function entryTreeItem(node: EntryNode): vscode.TreeItem {
    const item = new vscode.TreeItem(entryLabel(node.text) || vscode.l10n.t('(empty entry)'));
    item.id = `${node.folderUri}|${node.target}|${node.index}`;
    item.tooltip = node.text;
    item.description = node.text.includes('\n') ? vscode.l10n.t('{0} lines', node.text.split('\n').length) : undefined;
    item.contextValue = 'myAgent.entry';
    item.iconPath = new vscode.ThemeIcon('symbol-string');
    item.accessibilityInformation = { label: node.text.slice(0, 500) };
    item.command = {
        command: 'myAgent.memory.openEntry',
        title: vscode.l10n.t('Open at Entry'),
        arguments: [node],
    };
    return item;
}

export function storeNodes(fm: FolderMemory): MemoryNode[] {
    if (fm.error) {
        return [{ kind: 'message', text: fm.error, error: true }];
    }
    if (!fm.loaded) {
        return [{ kind: 'message', text: vscode.l10n.t('Waiting for the server…'), error: false }];
    }
    const folderUri = fm.folder.uri.toString();
    return fm.stores.map((store) => ({ kind: 'store', folderUri, store }));
}

export function entryNodes(node: StoreNode): EntryNode[] {
    const s = node.store;
    return s.entries.map((text, index) => ({
        kind: 'entry',
        folderUri: node.folderUri,
        target: s.target,
        path: s.path,
        index,
        text,
        entries: s.entries,
    }));
}

export class MemoryTreeProvider implements vscode.TreeDataProvider<MemoryNode>, vscode.Disposable {
    private readonly emitter = new vscode.EventEmitter<MemoryNode | undefined | void>();
    readonly onDidChangeTreeData = this.emitter.event;
    private readonly sub: vscode.Disposable;

    constructor(
        private readonly model: MemoryModel,
        private readonly nearShare: () => number,
    ) {
        this.sub = model.onDidChange(() => this.emitter.fire());
    }

    refreshView(): void {
        this.emitter.fire();
    }

    getTreeItem(node: MemoryNode): vscode.TreeItem {
        switch (node.kind) {
            case 'folder': {
                const item = new vscode.TreeItem(node.folder.name, vscode.TreeItemCollapsibleState.Expanded);
                item.id = node.folder.uri.toString();
                item.iconPath = vscode.ThemeIcon.Folder;
                item.resourceUri = node.folder.uri;
                item.contextValue = 'myAgent.folder';
                return item;
            }
            case 'store':
                return storeTreeItem(node, this.nearShare());
            case 'entry':
                return entryTreeItem(node);
            case 'message': {
                const item = new vscode.TreeItem(node.text);
                item.iconPath = new vscode.ThemeIcon(node.error ? 'error' : 'loading~spin');
                item.tooltip = node.text;
                return item;
            }
        }
    }

    getChildren(node?: MemoryNode): MemoryNode[] {
        if (!node) {
            const folders = this.model.list();
            if (folders.length === 1) {
                return storeNodes(folders[0]);
            }
            return folders.map((fm) => ({ kind: 'folder', folder: fm.folder }));
        }
        if (node.kind === 'folder') {
            const fm = this.model.list().find((f) => f.folder.uri.toString() === node.folder.uri.toString());
            return fm ? storeNodes(fm) : [];
        }
        if (node.kind === 'store') {
            return entryNodes(node);
        }
        return [];
    }

    dispose(): void {
        this.sub.dispose();
        this.emitter.dispose();
    }
}
