import * as vscode from 'vscode';
import { budgetLevel, BudgetLevel, fileName, percent, ShownFigure, shownFigure, worst } from './common/budget';
import { activeFolder } from './common/folders';
import { MemoryModel } from './memoryModel';
import { StoreState } from './protocol';

/** A status bar item with the active folder's memory usage; clicking it reveals the Memory view. */

export interface StatusView {
    text: string;
    tooltip: string;
    level: BudgetLevel;
}

function shortName(target: string, figure: string): string {
    return target === 'memory' ? vscode.l10n.t('Memory {0}', figure) : vscode.l10n.t('User {0}', figure);
}

/** A store's figure line of the tooltip: `MEMORY.md: 2398/2200 (109%)`, and where it comes from when unsaved. */
export function figureLine(target: string, f: ShownFigure): string {
    const line = `${fileName(target)}: ${f.used}/${f.limit} (${percent(f.used, f.limit)}%)`;
    if (!f.unsaved || !f.disk) {
        return line;
    }
    return vscode.l10n.t(
        '{0}, unsaved edits in the editor (on disk: {1}/{2}, {3}%)',
        line,
        f.disk.used,
        f.disk.limit,
        percent(f.disk.used, f.disk.limit),
    );
}

/**
 * What the item shows for a folder's stores (pure; unit-tested). `figureOf` gives each store's one figure: the
 * unsaved buffer's while the file has unsaved edits (labelled), else the disk's.
 */
export function statusView(
    stores: readonly StoreState[],
    nearShare: number,
    folderName?: string,
    figureOf: (s: StoreState) => ShownFigure = (s) => shownFigure(s),
): StatusView {
    if (stores.length === 0) {
        return { text: '$(notebook) ' + vscode.l10n.t('Memory'), tooltip: vscode.l10n.t('My Agent memory'), level: 'ok' };
    }
    const parts: string[] = [];
    const lines: string[] = [];
    const levels: BudgetLevel[] = [];
    for (const s of stores) {
        if (s.available === false) {
            parts.push(shortName(s.target, '!'));
            lines.push(vscode.l10n.t('{0}: unavailable', fileName(s.target)));
            levels.push('over');
            continue;
        }
        const f = figureOf(s);
        const level = budgetLevel(f.used, f.limit, nearShare);
        levels.push(level);
        const pct = percent(f.used, f.limit);
        parts.push(shortName(s.target, f.unsaved ? vscode.l10n.t('{0}% unsaved', pct) : `${pct}%`));
        lines.push(figureLine(s.target, f));
    }
    const level = worst(levels);
    const icon = level === 'over' ? '$(error)' : level === 'near' ? '$(warning)' : '$(notebook)';
    const header = folderName ? vscode.l10n.t('My Agent memory of {0}', folderName) : vscode.l10n.t('My Agent memory');
    return {
        text: `${icon} ${parts.join(' · ')}`,
        tooltip: [header, ...lines, vscode.l10n.t('Click to open the Memory view')].join('\n'),
        level,
    };
}

export class MemoryStatusBar implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;
    private readonly subs: vscode.Disposable[] = [];

    constructor(
        private readonly model: MemoryModel,
        private readonly nearShare: () => number,
    ) {
        this.item = vscode.window.createStatusBarItem('myAgent.memoryUsage', vscode.StatusBarAlignment.Right, 100);
        this.item.name = vscode.l10n.t('My Agent Memory');
        this.item.command = 'myAgent.memory.focus';
        this.subs.push(
            model.onDidChange(() => this.update()),
            vscode.window.onDidChangeActiveTextEditor(() => this.update()),
            vscode.workspace.onDidChangeWorkspaceFolders(() => this.update()),
        );
        this.update();
    }

    update(): void {
        const folder = activeFolder();
        if (!folder) {
            this.item.hide();
            return;
        }
        const fm = this.model.get(folder);
        const view = statusView(fm?.stores ?? [], this.nearShare(), folder.name, (s) => this.model.figure(s));
        this.item.text = view.text;
        this.item.tooltip = view.tooltip;
        this.item.accessibilityInformation = { label: view.tooltip.replace(/\n/g, '. ') };
        this.item.backgroundColor =
            view.level === 'over'
                ? new vscode.ThemeColor('statusBarItem.errorBackground')
                : view.level === 'near'
                  ? new vscode.ThemeColor('statusBarItem.warningBackground')
                  : undefined;
        this.item.show();
    }

    dispose(): void {
        this.subs.forEach((s) => s.dispose());
        this.item.dispose();
    }
}
