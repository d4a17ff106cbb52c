import * as path from 'path';
import * as vscode from 'vscode';
import { plural } from './common/plural';
import type { RequestClient } from './chat/seams';
import { errorMessage } from './common/errors';
import { getLog } from './common/log';
import { ReadOnlyDocuments } from './common/readonlyDocs';
import { MemoryImportParams, MemoryImportResult, MemoryStateResult, Methods } from './protocol';

/**
 * "Import into Memory": turns the items of an AGENTS.md / CLAUDE.md / GEMINI.md / .cursorrules of a folder
 * into memory entries through the server (`myAgent/memory/import`: scanned, journaled, deduplicated, within
 * budget) and shows what was added, what did not fit and what was refused, so nothing vanishes silently.
 */

/** The files the command offers (explorer and editor menus use the same names). */
export const IMPORTABLE = ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md', '.cursorrules'] as const;

const FIND_GLOB = '{**/AGENTS.md,**/CLAUDE.md,**/GEMINI.md,**/.cursorrules}';
const FIND_EXCLUDE = '{**/node_modules/**,**/.git/**,**/.my_agent_core/**}';

export interface ImportServer {
    ready(): Promise<RequestClient | undefined>;
}

export interface ImportSink {
    setState(state: MemoryStateResult): void;
}

export function isImportable(fileName: string): boolean {
    return (IMPORTABLE as readonly string[]).includes(fileName);
}

/** Validates the server's answer; fields it lacks count as empty (nothing hidden, nothing invented). */
export function parseImportResult(raw: unknown): MemoryImportResult | undefined {
    if (!raw || typeof raw !== 'object') {
        return undefined;
    }
    const r = raw as Record<string, unknown>;
    const count = (v: unknown): number => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0);
    const notFitted = Array.isArray(r.notFitted) ? r.notFitted.filter((x): x is string => typeof x === 'string') : [];
    const refused = Array.isArray(r.refused)
        ? r.refused
              .filter((x): x is Record<string, unknown> => !!x && typeof x === 'object')
              .map((x) => ({ text: typeof x.text === 'string' ? x.text : '', reason: typeof x.reason === 'string' ? x.reason : '' }))
        : [];
    const state = r.state && typeof r.state === 'object' && Array.isArray((r.state as MemoryStateResult).stores)
        ? (r.state as MemoryStateResult)
        : undefined;
    return {
        message: typeof r.message === 'string' ? r.message : '',
        added: count(r.added),
        duplicates: count(r.duplicates),
        notFitted,
        refused,
        ...(state ? { state } : {}),
    };
}

/** A line for the notification: how many entries came in, and whether something is left to look at. */
export function importSummary(r: MemoryImportResult, file: string): string {
    const parts = [
        plural(r.added, {
            one: vscode.l10n.t('Imported {0} entry from {1}.', r.added, file),
            other: vscode.l10n.t('Imported {0} entries from {1}.', r.added, file),
        }),
    ];
    const n = { duplicates: r.duplicates, notFitted: r.notFitted.length, refused: r.refused.length };
    if (n.duplicates) {
        parts.push(
            plural(n.duplicates, {
                one: vscode.l10n.t('{0} was already in memory.', n.duplicates),
                other: vscode.l10n.t('{0} were already in memory.', n.duplicates),
            }),
        );
    }
    if (n.notFitted) {
        parts.push(vscode.l10n.t('{0} did not fit the budget.', n.notFitted));
    }
    if (n.refused) {
        parts.push(
            plural(n.refused, {
                one: vscode.l10n.t('{0} was refused.', n.refused),
                other: vscode.l10n.t('{0} were refused.', n.refused),
            }),
        );
    }
    return parts.join(' ');
}

/** A fence its content cannot close (a refused item may hold anything). */
function block(text: string): string {
    const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
    const fence = '`'.repeat(Math.max(3, longest + 1));
    return `${fence}text\n${text}\n${fence}`;
}

/** The report document: every item that did not fit, every refusal with its reason, quoted in full. */
export function importReport(r: MemoryImportResult, file: string): string {
    const out = [`# ${vscode.l10n.t('Import of {0}', file)}`, '', importSummary(r, file)];
    if (r.message) {
        out.push('', r.message);
    }
    if (r.notFitted.length) {
        out.push('', `## ${vscode.l10n.t('Did not fit (memory is full: make room, then import again)')}`);
        for (const t of r.notFitted) {
            out.push('', block(t));
        }
    }
    if (r.refused.length) {
        out.push('', `## ${vscode.l10n.t('Refused')}`);
        for (const x of r.refused) {
            out.push('', `- ${x.reason || vscode.l10n.t('(no reason given)')}`, '', block(x.text));
        }
    }
    return out.join('\n') + '\n';
}

/** The file to import: the one the menu was opened on, or one picked from the workspace. */
async function chooseFile(arg: unknown): Promise<vscode.Uri | undefined> {
    if (arg instanceof vscode.Uri) {
        return arg;
    }
    const uri = vscode.window.activeTextEditor?.document.uri;
    const found = await vscode.workspace.findFiles(FIND_GLOB, FIND_EXCLUDE, 100);
    const items: (vscode.QuickPickItem & { uri?: vscode.Uri })[] = found
        .sort((a, b) => a.fsPath.localeCompare(b.fsPath))
        .map((u) => ({ label: path.basename(u.fsPath), description: vscode.workspace.asRelativePath(u), uri: u, picked: uri?.toString() === u.toString() }));
    const browse = vscode.l10n.t('Browse…');
    items.push({ label: browse });
    const pick = await vscode.window.showQuickPick(items, {
        placeHolder: vscode.l10n.t('Import which file into memory? (AGENTS.md, CLAUDE.md, GEMINI.md, .cursorrules)'),
    });
    if (!pick) {
        return undefined;
    }
    if (pick.uri) {
        return pick.uri;
    }
    const chosen = await vscode.window.showOpenDialog({
        canSelectMany: false,
        openLabel: vscode.l10n.t('Import'),
        defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    return chosen?.[0];
}

export async function importIntoMemory(server: ImportServer, memory: ImportSink, docs: ReadOnlyDocuments, arg?: unknown): Promise<void> {
    const file = await chooseFile(arg);
    if (!file) {
        return;
    }
    const folder = file.scheme === 'file' ? vscode.workspace.getWorkspaceFolder(file) : undefined;
    if (!folder) {
        void vscode.window.showErrorMessage(vscode.l10n.t('Only a file inside a workspace folder can be imported into that folder\'s memory.'));
        return;
    }
    const name = path.basename(file.fsPath);
    const relative = path.relative(folder.uri.fsPath, file.fsPath).split(path.sep).join('/');
    if (!relative || relative.startsWith('..') || path.isAbsolute(relative)) {
        void vscode.window.showErrorMessage(vscode.l10n.t('Only a file inside a workspace folder can be imported into that folder\'s memory.'));
        return;
    }
    if (!isImportable(name)) {
        const go = vscode.l10n.t('Import Anyway');
        const answer = await vscode.window.showWarningMessage(
            vscode.l10n.t('{0} is not a context file the import knows (AGENTS.md, CLAUDE.md, GEMINI.md, .cursorrules). Import its items anyway?', name),
            { modal: true },
            go,
        );
        if (answer !== go) {
            return;
        }
    }
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === file.toString());
    if (doc?.isDirty) {
        // The server reads the file on disk; say so rather than import something the user no longer sees.
        void vscode.window.showWarningMessage(vscode.l10n.t('{0} has unsaved changes: save it first, the import reads the file on disk.', name));
        return;
    }
    const client = await server.ready();
    if (!client) {
        return;
    }
    const params: MemoryImportParams = { folder: folder.uri.toString(), path: relative };
    let result: MemoryImportResult | undefined;
    try {
        result = parseImportResult(await client.sendRequest<unknown>(Methods.memoryImport, params));
    } catch (e) {
        getLog().warn(`memory/import ${relative}: ${errorMessage(e)}`);
        void vscode.window.showErrorMessage(vscode.l10n.t('Import of {0} failed: {1}', name, errorMessage(e)));
        return;
    }
    if (!result) {
        void vscode.window.showErrorMessage(vscode.l10n.t('Import of {0}: the server gave no usable answer. Check the Memory view.', name));
        return;
    }
    if (result.state) {
        memory.setState(result.state);
    }
    const summary = importSummary(result, name);
    const details = vscode.l10n.t('Show Details');
    const leftOver = result.notFitted.length + result.refused.length > 0;
    const choice = leftOver
        ? await vscode.window.showWarningMessage(summary, details)
        : await vscode.window.showInformationMessage(summary, details);
    if (choice === details) {
        await docs.show(`/import/${encodeURIComponent(folder.name)}/${encodeURIComponent(name)}-report.md`, importReport(result, relative));
    }
}
