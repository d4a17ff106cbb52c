import * as vscode from 'vscode';
import { budgetLevel, BudgetLevel, fileName, percent, worst } from './common/budget';
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

/** What the item shows for a folder's stores (pure; unit-tested). */
export function statusView(stores: readonly StoreState[], nearShare: number, folderName?: string): StatusView {
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
        const level = budgetLevel(s.used, s.limit, nearShare);
        levels.push(level);
        parts.push(shortName(s.target, `${percent(s.used, s.limit)}%`));
        lines.push(`${fileName(s.target)}: ${s.used}/${s.limit} (${percent(s.used, s.limit)}%)`);
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
        const view = statusView(fm?.stores ?? [], this.nearShare(), folder.name);
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
