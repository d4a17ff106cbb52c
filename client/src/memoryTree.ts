import * as vscode from 'vscode';
import { budgetLevel, BudgetLevel, entryLabel, fileName, percent, ShownFigure, shownFigure } from './common/budget';
import { plural } from './common/plural';
import { sameFolder } from './common/folders';
import { contextFilePath } from './contextFiles';
import { FolderMemory, MemoryModel } from './memoryModel';
import { ChatSnapshotResult, ContextFileInfo, EntryOrigin, StoreState, Target } from './protocol';
import { folderMarks, StoreMarks } from './snapshotDiff';

/**
 * The Memory view: folder -> MEMORY.md / USER.md (usage, budget icon) -> entries. For the folder of the current
 * chat session, entries are marked against that session's frozen snapshot (snapshotDiff.ts).
 */

export const VIEW_ID = 'myAgent.memory';

export interface FolderNode {
    kind: 'folder';
    folder: vscode.WorkspaceFolder;
}

export interface StoreNode {
    kind: 'store';
    folderUri: string;
    store: StoreState;
    /** Live vs the current chat session's snapshot; absent when there is nothing to mark. */
    marks?: StoreMarks;
    /** The figure shown: the unsaved buffer's while the file has unsaved edits, else the disk's (absent: disk). */
    figure?: ShownFigure;
}

export interface EntryNode {
    kind: 'entry';
    folderUri: string;
    target: Target;
    path: string;
    index: number;
    text: string;
    entries: readonly string[];
    /** Live but not in the current chat session's snapshot: that chat does not see it. */
    fresh?: boolean;
    /** Who made it and from what (the server derives it from the journal). */
    origin?: EntryOrigin;
}

/** In the current chat session's snapshot but no longer live: that chat still sees it. */
export interface RemovedNode {
    kind: 'removed';
    folderUri: string;
    target: Target;
    index: number;
    text: string;
}

export interface MessageNode {
    kind: 'message';
    text: string;
    error: boolean;
}

/** The context files the current chat's system prompt froze (chat/snapshot `contextFiles`). */
export interface ContextGroupNode {
    kind: 'contextGroup';
    folderUri: string;
    folderPath: string;
    files: ContextFileInfo[];
}

export interface ContextFileNode {
    kind: 'contextFile';
    folderUri: string;
    folderPath: string;
    file: ContextFileInfo;
}

export type MemoryNode = FolderNode | StoreNode | EntryNode | RemovedNode | MessageNode | ContextGroupNode | ContextFileNode;

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
        s.entries.length + (node.marks?.removed.length ?? 0) > 0
            ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
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
    const f = node.figure ?? shownFigure(s);
    const level = budgetLevel(f.used, f.limit, nearShare);
    const figure = `${f.used}/${f.limit} (${percent(f.used, f.limit)}%)`;
    // "unsaved" first: a narrow view clips the end of the description, never the label.
    item.description = f.unsaved ? vscode.l10n.t('unsaved · {0}', figure) : figure;
    item.iconPath = levelIcon(level);
    const status =
        level === 'over'
            ? vscode.l10n.t('Over budget')
            : level === 'near'
              ? vscode.l10n.t('Near budget')
              : vscode.l10n.t('Within budget');
    const n = s.entries.length;
    const lines = [
        s.path,
        plural(n, {
            one: vscode.l10n.t('{0}/{1} characters, {2} entry. {3}', f.used, f.limit, n, status),
            other: vscode.l10n.t('{0}/{1} characters, {2} entries. {3}', f.used, f.limit, n, status),
        }),
    ];
    if (f.unsaved && f.disk) {
        lines.push(
            vscode.l10n.t(
                'Unsaved edits: this is the editor\'s figure, the one its diagnostics show. On disk: {0}/{1} ({2}%).',
                f.disk.used,
                f.disk.limit,
                percent(f.disk.used, f.disk.limit),
            ),
        );
    }
    item.tooltip = lines.join('\n');
    item.contextValue = 'myAgent.store';
    item.command = {
        command: 'myAgent.memory.openEntry',
        title: vscode.l10n.t('Open'),
        arguments: [node],
    };
    return item;
}

/** The entry's origin line for its tooltip ("" when the server sent none). */
export function originLine(origin: EntryOrigin | undefined): string {
    const summary = typeof origin?.summary === 'string' ? origin.summary.replace(/\s+/g, ' ').trim().slice(0, 400) : '';
    return summary ? vscode.l10n.t('Origin: {0}', summary) : '';
}

export function entryTreeItem(node: EntryNode): vscode.TreeItem {
    const item = new vscode.TreeItem(entryLabel(node.text) || vscode.l10n.t('(empty entry)'));
    item.id = `${node.folderUri}|${node.target}|${node.index}`;
    const origin = originLine(node.origin);
    item.tooltip = origin ? `${node.text}\n\n${origin}` : node.text;
    const count = node.text.split('\n').length;
    const lines = count > 1 ? vscode.l10n.t('{0} lines', count) : undefined; // never 1: a one-line entry says nothing
    item.description = lines;
    item.contextValue = 'myAgent.entry';
    item.iconPath = new vscode.ThemeIcon('symbol-string');
    item.accessibilityInformation = { label: node.text.slice(0, 500) };
    if (node.fresh) {
        // The mark leads the label (highlighted), so a narrow view that clips the description still shows it.
        const mark = vscode.l10n.t('new');
        const why = vscode.l10n.t('not in this chat');
        item.label = markedLabel(mark, entryLabel(node.text) || vscode.l10n.t('(empty entry)'));
        item.description = lines ? `${why} · ${lines}` : why;
        item.tooltip = `${node.text}\n\n${vscode.l10n.t(
            'Added after the current chat started: that chat does not see it. The agent sees it after New Chat.',
        )}${origin ? `\n${origin}` : ''}`;
        item.accessibilityInformation = { label: `${mark}, ${why}: ${node.text.slice(0, 500)}` };
        item.iconPath = new vscode.ThemeIcon('diff-added', new vscode.ThemeColor('gitDecoration.addedResourceForeground'));
    }
    item.command = {
        command: 'myAgent.memory.openEntry',
        title: vscode.l10n.t('Open at Entry'),
        arguments: [node],
    };
    return item;
}

/** An entry the current chat still sees although it is gone from the file: muted, no edit actions. */
export function removedTreeItem(node: RemovedNode): vscode.TreeItem {
    const mark = vscode.l10n.t('removed');
    const why = vscode.l10n.t('still in this chat');
    const item = new vscode.TreeItem(markedLabel(mark, entryLabel(node.text) || vscode.l10n.t('(empty entry)')));
    item.id = `${node.folderUri}|${node.target}|removed|${node.index}`;
    item.description = why;
    item.tooltip = `${node.text}\n\n${vscode.l10n.t(
        'Removed from the file, but the agent in the current chat still sees it until New Chat.',
    )}`;
    item.contextValue = 'myAgent.entry.removed';
    item.iconPath = new vscode.ThemeIcon('history', new vscode.ThemeColor('disabledForeground'));
    item.accessibilityInformation = { label: `${mark}, ${why}: ${node.text.slice(0, 500)}` };
    return item;
}

/** `new · <first line>` with the mark highlighted: short and first, where no view width can clip it. */
export function markedLabel(mark: string, text: string): vscode.TreeItemLabel {
    return { label: `${mark} · ${text}`, highlights: [[0, mark.length]] };
}

export function contextGroupItem(node: ContextGroupNode): vscode.TreeItem {
    const item = new vscode.TreeItem(vscode.l10n.t('Context files in this chat'), vscode.TreeItemCollapsibleState.Expanded);
    item.id = `${node.folderUri}|contextFiles`;
    item.description = String(node.files.length);
    item.tooltip = vscode.l10n.t(
        'Files frozen into the current chat\'s system prompt with the memory snapshot. An edit shows up in the next chat.',
    );
    item.iconPath = new vscode.ThemeIcon('book');
    item.contextValue = 'myAgent.contextFiles';
    return item;
}

export function contextFileItem(node: ContextFileNode): vscode.TreeItem {
    const f = node.file;
    const item = new vscode.TreeItem(f.name);
    item.id = `${node.folderUri}|contextFile|${f.path || f.name}`;
    const marks = [vscode.l10n.t('{0} chars', f.chars.toLocaleString('en-US'))];
    const lines = [vscode.l10n.t('{0}: frozen into the current chat\'s system prompt.', f.name)];
    if (f.cut) {
        marks.push(vscode.l10n.t('cut'));
        lines.push(vscode.l10n.t('Longer than myAgent.context.maxChars: the chat sees its beginning and a note.'));
    }
    if (f.blocked) {
        marks.push(vscode.l10n.t('blocked'));
        lines.push(vscode.l10n.t('The safety scanner refused it: the chat sees a [BLOCKED] line instead of its text.'));
    }
    item.description = marks.join(' · ');
    item.iconPath = f.blocked
        ? new vscode.ThemeIcon('error', new vscode.ThemeColor('list.errorForeground'))
        : f.cut
          ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('list.warningForeground'))
          : new vscode.ThemeIcon('file-text');
    item.contextValue = 'myAgent.contextFile';
    const full = contextFilePath(f, node.folderPath);
    if (full) {
        const uri = vscode.Uri.file(full);
        item.resourceUri = uri;
        item.command = { command: 'vscode.open', title: vscode.l10n.t('Open'), arguments: [uri] };
    } else {
        lines.push(vscode.l10n.t('Its path is outside the folder, so it is not opened from here.'));
    }
    item.tooltip = lines.join('\n');
    return item;
}

/** The context-files group of a folder, when the current chat belongs to it and froze any. */
export function contextGroupNode(fm: FolderMemory, snapshot?: ChatSnapshotResult): ContextGroupNode | undefined {
    const folderUri = fm.folder.uri.toString();
    const files = snapshot?.contextFiles ?? [];
    if (!snapshot || !snapshot.memory || files.length === 0 || !sameFolder(snapshot.folder, folderUri)) {
        return undefined;
    }
    return { kind: 'contextGroup', folderUri, folderPath: fm.folder.uri.fsPath, files };
}

export function storeNodes(
    fm: FolderMemory,
    snapshot?: ChatSnapshotResult,
    figureOf?: (s: StoreState) => ShownFigure,
): MemoryNode[] {
    if (fm.error) {
        return [{ kind: 'message', text: fm.error, error: true }];
    }
    if (!fm.loaded) {
        return [{ kind: 'message', text: vscode.l10n.t('Waiting for the server…'), error: false }];
    }
    const folderUri = fm.folder.uri.toString();
    const marks = folderMarks(folderUri, fm.stores, snapshot);
    const nodes: MemoryNode[] = fm.stores.map((store) => ({
        kind: 'store',
        folderUri,
        store,
        marks: marks.get(store.target),
        figure: figureOf?.(store),
    }));
    const group = contextGroupNode(fm, snapshot);
    return group ? [...nodes, group] : nodes;
}

export function entryNodes(node: StoreNode): (EntryNode | RemovedNode)[] {
    const s = node.store;
    // Origins are parallel to the entries; a list of another length (a mismatched or older server) is ignored.
    const origins = Array.isArray(s.origins) && s.origins.length === s.entries.length ? s.origins : undefined;
    const live: (EntryNode | RemovedNode)[] = s.entries.map((text, index) => ({
        kind: 'entry',
        folderUri: node.folderUri,
        target: s.target,
        path: s.path,
        index,
        text,
        entries: s.entries,
        fresh: node.marks?.fresh[index] === true ? true : undefined,
        ...(origins?.[index] ? { origin: origins[index] } : {}),
    }));
    const removed: RemovedNode[] = (node.marks?.removed ?? []).map((text, index) => ({
        kind: 'removed',
        folderUri: node.folderUri,
        target: s.target,
        index,
        text,
    }));
    return [...live, ...removed];
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
            case 'removed':
                return removedTreeItem(node);
            case 'contextGroup':
                return contextGroupItem(node);
            case 'contextFile':
                return contextFileItem(node);
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
                return storeNodes(folders[0], this.model.snapshot, (s) => this.model.figure(s));
            }
            return folders.map((fm) => ({ kind: 'folder', folder: fm.folder }));
        }
        if (node.kind === 'folder') {
            const fm = this.model.list().find((f) => f.folder.uri.toString() === node.folder.uri.toString());
            return fm ? storeNodes(fm, this.model.snapshot, (s) => this.model.figure(s)) : [];
        }
        if (node.kind === 'store') {
            return entryNodes(node);
        }
        if (node.kind === 'contextGroup') {
            return node.files.map((file) => ({ kind: 'contextFile', folderUri: node.folderUri, folderPath: node.folderPath, file }));
        }
        return [];
    }

    dispose(): void {
        this.sub.dispose();
        this.emitter.dispose();
    }
}
