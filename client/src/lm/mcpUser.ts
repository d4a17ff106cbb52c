import * as path from 'path';
import * as vscode from 'vscode';
import { McpServerEntry, planMcpConfig, planMcpSetting } from './mcpConfig';
import { McpFileError } from './mcpFile';

/**
 * Our server in the user's own MCP configuration (this machine only, every workspace): VS Code 1.102+ keeps it
 * in the profile's `mcp.json`, which its command "MCP: Open User Configuration" opens (VS Code knows the
 * profile's path; we never guess it), and we edit that document like the workspace file (jsonc-parser, one
 * undo step, then save). VS Code 1.100-1.101 kept it in the `mcp` user setting, written through the
 * configuration API.
 */

export const OPEN_USER_MCP_JSON = 'workbench.mcp.openUserMcpJson';

export type UserMcpOutcome =
    | { kind: 'added' | 'replaced' | 'unchanged' | 'cancelled'; where: 'file' | 'settings'; uri?: vscode.Uri }
    | { kind: 'invalid'; where: 'file' | 'settings'; reason: string; uri?: vscode.Uri };

type Confirm = (existing: unknown) => Promise<boolean>;

async function intoUserMcpJson(entry: McpServerEntry, confirmReplace: Confirm): Promise<UserMcpOutcome> {
    await vscode.commands.executeCommand(OPEN_USER_MCP_JSON);
    const doc = vscode.window.activeTextEditor?.document;
    if (!doc || path.posix.basename(doc.uri.path) !== 'mcp.json') {
        throw new McpFileError(vscode.l10n.t('VS Code did not open your MCP configuration (mcp.json).'));
    }
    if (doc.isDirty) {
        throw new McpFileError(vscode.l10n.t('your mcp.json has unsaved changes: save or revert them first, so none of them is lost'));
    }
    const text = doc.getText();
    const plan = planMcpConfig(text, entry);
    switch (plan.kind) {
        case 'unchanged':
            return { kind: 'unchanged', where: 'file', uri: doc.uri };
        case 'invalid':
            return { kind: 'invalid', where: 'file', reason: plan.reason, uri: doc.uri };
        case 'conflict':
            if (!(await confirmReplace(plan.existing))) {
                return { kind: 'cancelled', where: 'file', uri: doc.uri };
            }
    }
    const edit = new vscode.WorkspaceEdit();
    edit.replace(doc.uri, new vscode.Range(doc.positionAt(0), doc.positionAt(text.length)), plan.text);
    if (!(await vscode.workspace.applyEdit(edit)) || !(await doc.save())) {
        throw new McpFileError(vscode.l10n.t('VS Code did not save your mcp.json.'));
    }
    return { kind: plan.kind === 'add' ? 'added' : 'replaced', where: 'file', uri: doc.uri };
}

async function intoUserSetting(entry: McpServerEntry, confirmReplace: Confirm): Promise<UserMcpOutcome> {
    const config = vscode.workspace.getConfiguration();
    const plan = planMcpSetting(config.inspect('mcp')?.globalValue, entry);
    switch (plan.kind) {
        case 'unchanged':
            return { kind: 'unchanged', where: 'settings' };
        case 'invalid':
            return { kind: 'invalid', where: 'settings', reason: plan.reason };
        case 'conflict':
            if (!(await confirmReplace(plan.existing))) {
                return { kind: 'cancelled', where: 'settings' };
            }
    }
    await config.update('mcp', plan.value, vscode.ConfigurationTarget.Global);
    return { kind: plan.kind === 'add' ? 'added' : 'replaced', where: 'settings' };
}

/** Adds our server to the user's MCP configuration, wherever this VS Code keeps it. */
export async function addToUserMcpConfig(entry: McpServerEntry, confirmReplace: Confirm): Promise<UserMcpOutcome> {
    const commands = await vscode.commands.getCommands(true);
    return commands.includes(OPEN_USER_MCP_JSON) ? intoUserMcpJson(entry, confirmReplace) : intoUserSetting(entry, confirmReplace);
}
