import * as path from 'path';
import * as vscode from 'vscode';
import { errorMessage } from '../common/errors';
import { pickFolder } from '../common/folders';
import { currentSettings } from '../common/settings';
import { mcpEntry, MCP_SERVER_NAME } from './mcpConfig';
import { addMcpServer, mcpPaths, McpFileError } from './mcpFile';

/**
 * "Add Memory Server to This Workspace's MCP Configuration": writes `my-agent mcp` into the folder's
 * `.vscode/mcp.json`, run by the interpreter the extension already resolved for the language server, so
 * Copilot agent mode and any other MCP client of this workspace curate the same memory.
 */

/** The part of ServerManager the command needs: a started server and the interpreter it runs on. */
export interface InterpreterSource {
    ready(): Promise<unknown>;
    readonly python: string | undefined;
}

function describe(existing: unknown): string {
    try {
        return JSON.stringify(existing, null, 2).slice(0, 1500);
    } catch {
        return String(existing);
    }
}

export async function addMemoryServerToWorkspace(server: InterpreterSource): Promise<void> {
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
    await server.ready();
    const python = server.python;
    if (!python) {
        void vscode.window.showErrorMessage(
            vscode.l10n.t('The interpreter that runs the memory server is not known yet: the My Agent server did not start (see its output).'),
        );
        return;
    }
    const root = folder.uri.fsPath;
    const { file } = mcpPaths(root);
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === file);
    if (open?.isDirty) {
        void vscode.window.showWarningMessage(
            vscode.l10n.t('.vscode/mcp.json has unsaved changes: save or revert them first, so none of them is lost.'),
        );
        return;
    }
    const limits = currentSettings().memory;
    const entry = mcpEntry(python, path.join(root, '.my_agent_core', 'memory'), {
        memory: limits.memoryCharLimit,
        user: limits.userCharLimit,
    });
    const replace = vscode.l10n.t('Replace');
    const openFile = vscode.l10n.t('Open mcp.json');
    try {
        const outcome = await addMcpServer(root, entry, async (existing) => {
            const answer = await vscode.window.showWarningMessage(
                vscode.l10n.t('.vscode/mcp.json already has a server named "{0}" with another command. Replace it?', MCP_SERVER_NAME),
                {
                    modal: true,
                    detail: vscode.l10n.t('Now:\n{0}\n\nNew:\n{1}', describe(existing), describe(entry)),
                },
                replace,
            );
            return answer === replace;
        });
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
