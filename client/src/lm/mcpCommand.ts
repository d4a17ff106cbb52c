import { execFile } from 'child_process';
import * as vscode from 'vscode';
import { errorMessage } from '../common/errors';
import { pickFolder } from '../common/folders';
import { currentSettings } from '../common/settings';
import { Budgets, MCP_SERVER_NAME, McpServerEntry, PORTABLE_COMMAND, portableEntry, userEntry } from './mcpConfig';
import { addMcpServer, mcpPaths, McpFileError } from './mcpFile';
import { addToUserMcpConfig } from './mcpUser';

/**
 * "Add Memory Server to This Workspace's MCP Configuration": `.vscode/mcp.json` is shared with whoever clones
 * the project, so it gets an entry with no path of this machine: `my-agent mcp --dir
 * ${workspaceFolder}/.my_agent_core/memory` (the console script of an installed my-agent-core, on PATH). When
 * `my-agent` does not run here, there is no command a teammate is sure to have (the extension's own venv lives
 * at a different path on every machine), so the user is offered their own MCP configuration instead (this
 * machine's interpreter, every folder's own memory), or the shared entry anyway. docs/mcp.md explains the choice.
 */

/** The part of ServerManager the command needs: a started server and the interpreter it runs on. */
export interface InterpreterSource {
    ready(): Promise<unknown>;
    readonly python: string | undefined;
}

/** Whether the portable command runs on this machine (its PATH, as VS Code starts MCP servers with it). */
export type PortableProbe = () => Promise<boolean>;

/** `my-agent mcp --help` answers with the `--dir` option: my-agent-core's memory server is on PATH. */
export const probePortableCommand: PortableProbe = () =>
    new Promise((resolve) => {
        execFile(PORTABLE_COMMAND, ['mcp', '--help'], { timeout: 20_000, maxBuffer: 256 * 1024, windowsHide: true }, (err, stdout) =>
            resolve(!err && String(stdout).includes('--dir')),
        );
    });

function describe(existing: unknown): string {
    try {
        return JSON.stringify(existing, null, 2).slice(0, 1500);
    } catch {
        return String(existing);
    }
}

function budgets(): Budgets {
    const limits = currentSettings().memory;
    return { memory: limits.memoryCharLimit, user: limits.userCharLimit };
}

async function confirmReplace(question: string, existing: unknown, entry: McpServerEntry): Promise<boolean> {
    const replace = vscode.l10n.t('Replace');
    const answer = await vscode.window.showWarningMessage(
        question,
        { modal: true, detail: vscode.l10n.t('Now:\n{0}\n\nNew:\n{1}', describe(existing), describe(entry)) },
        replace,
    );
    return answer === replace;
}

/** The user's own MCP configuration: this machine's interpreter, the memory of whichever folder is open. */
async function addToUserConfiguration(server: InterpreterSource): Promise<void> {
    await server.ready();
    const python = server.python;
    if (!python) {
        void vscode.window.showErrorMessage(
            vscode.l10n.t('The interpreter that runs the memory server is not known yet: the My Agent server did not start (see its output).'),
        );
        return;
    }
    const entry = userEntry(python, budgets());
    try {
        const outcome = await addToUserMcpConfig(entry, (existing) =>
            confirmReplace(
                vscode.l10n.t('Your MCP configuration already has a server named "{0}" with another command. Replace it?', MCP_SERVER_NAME),
                existing,
                entry,
            ),
        );
        switch (outcome.kind) {
            case 'added':
            case 'replaced':
                void vscode.window.showInformationMessage(
                    vscode.l10n.t(
                        'Added "{0}" to your MCP configuration: on this machine, MCP clients (e.g. Copilot agent mode) use the memory of the folder you open.',
                        MCP_SERVER_NAME,
                    ),
                );
                return;
            case 'unchanged':
                void vscode.window.showInformationMessage(vscode.l10n.t('Your MCP configuration already runs this memory server.'));
                return;
            case 'cancelled':
                return;
            case 'invalid':
                void vscode.window.showErrorMessage(
                    vscode.l10n.t('Your MCP configuration cannot be edited safely ({0}), so it was left as it is. Fix it, then try again.', outcome.reason),
                );
                return;
        }
    } catch (e) {
        const why = e instanceof McpFileError ? e.message : errorMessage(e);
        void vscode.window.showErrorMessage(vscode.l10n.t('Could not update your MCP configuration: {0}', why));
    }
}

export async function addMemoryServerToWorkspace(server: InterpreterSource, probe: PortableProbe = probePortableCommand): Promise<void> {
    const folder = await pickFolder(vscode.l10n.t('Add the memory server to the MCP configuration of which folder?'));
    if (!folder) {
        void vscode.window.showInformationMessage(vscode.l10n.t('Open a folder first: the MCP configuration lives in <folder>/.vscode/mcp.json.'));
        return;
    }
    if (!vscode.workspace.isTrusted) {
        void vscode.window.showWarningMessage(
            vscode.l10n.t('Trust this workspace first: in Restricted Mode its memory is not offered to agents.'),
        );
        return;
    }
    if (folder.uri.scheme !== 'file') {
        void vscode.window.showErrorMessage(vscode.l10n.t('Only a folder on disk can have an MCP configuration written for it.'));
        return;
    }
    const root = folder.uri.fsPath;
    const { file } = mcpPaths(root);
    if (!(await probe())) {
        const mine = vscode.l10n.t('Add to My MCP Configuration');
        const anyway = vscode.l10n.t('Write the Shared File Anyway');
        const choice = await vscode.window.showWarningMessage(
            vscode.l10n.t('"{0}" is not on your PATH, so no command a teammate is sure to have can run the memory server.', PORTABLE_COMMAND),
            {
                modal: true,
                detail: vscode.l10n.t(
                    '.vscode/mcp.json is shared with everyone who clones {0}, so it names no path of this machine: it runs "my-agent mcp", which needs my-agent-core installed (the "my-agent" command on PATH) on each machine, yours included.\n\nYour own MCP configuration can run the interpreter this extension uses instead, on this machine only, for the memory of whichever folder you open.',
                    folder.name,
                ),
            },
            mine,
            anyway,
        );
        if (choice === mine) {
            await addToUserConfiguration(server);
            return;
        }
        if (choice !== anyway) {
            return;
        }
    }
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === file);
    if (open?.isDirty) {
        void vscode.window.showWarningMessage(
            vscode.l10n.t('.vscode/mcp.json has unsaved changes: save or revert them first, so none of them is lost.'),
        );
        return;
    }
    const entry = portableEntry(budgets());
    const openFile = vscode.l10n.t('Open mcp.json');
    try {
        const outcome = await addMcpServer(root, entry, (existing) =>
            confirmReplace(
                vscode.l10n.t('.vscode/mcp.json already has a server named "{0}" with another command. Replace it?', MCP_SERVER_NAME),
                existing,
                entry,
            ),
        );
        let message: string | undefined;
        switch (outcome.kind) {
            case 'added':
                message = vscode.l10n.t(
                    'Added "{0}" to .vscode/mcp.json of {1}: MCP clients of this workspace (e.g. Copilot agent mode) can now use its memory.',
                    MCP_SERVER_NAME,
                    folder.name,
                );
                break;
            case 'replaced':
                message = vscode.l10n.t('Replaced "{0}" in .vscode/mcp.json of {1}.', MCP_SERVER_NAME, folder.name);
                break;
            case 'unchanged':
                message = vscode.l10n.t('.vscode/mcp.json of {0} already runs this memory server.', folder.name);
                break;
            case 'cancelled':
                return;
            case 'invalid': {
                const choice = await vscode.window.showErrorMessage(
                    vscode.l10n.t('.vscode/mcp.json cannot be edited safely ({0}), so it was left as it is. Fix it, then try again.', outcome.reason),
                    openFile,
                );
                if (choice === openFile) {
                    await vscode.window.showTextDocument(vscode.Uri.file(outcome.file));
                }
                return;
            }
        }
        const choice = await vscode.window.showInformationMessage(message, openFile);
        if (choice === openFile) {
            await vscode.window.showTextDocument(vscode.Uri.file(outcome.file));
        }
    } catch (e) {
        const why = e instanceof McpFileError ? e.message : errorMessage(e);
        void vscode.window.showErrorMessage(vscode.l10n.t('Could not update .vscode/mcp.json: {0}', why));
    }
}
