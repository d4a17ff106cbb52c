import * as vscode from 'vscode';
import type { RequestClient } from './chat/seams';
import { errorMessage } from './common/errors';
import { folderForUri, pickFolder } from './common/folders';
import { getLog } from './common/log';

/**
 * "Set Up Team Memory Merging (my-agent git-setup)": the button of the `driver-not-set-up` diagnostic on
 * MEMORY.md (a code action that passes `{folder}`) and a palette command. The server runs `my-agent
 * git-setup` on the folder (`myAgent/gitSetup`): `.gitattributes` routes MEMORY.md to the entry-wise merge
 * driver, this clone's `.git/config` gets the driver, the private files are kept out of git. Nothing changes
 * until the user runs it; what it did goes to the output channel, and the notice goes away.
 */

export const GIT_SETUP_METHOD = 'myAgent/gitSetup';

export interface GitSetupResult {
    ok: boolean;
    lines: string[];
}

export interface GitSetupServer {
    ready(): Promise<RequestClient | undefined>;
}

/** Validates the server's answer (a missing or odd field reads as a failure with no lines). */
export function parseGitSetupResult(raw: unknown): GitSetupResult {
    if (!raw || typeof raw !== 'object') {
        return { ok: false, lines: [] };
    }
    const r = raw as Record<string, unknown>;
    const lines = Array.isArray(r.lines) ? r.lines.filter((x): x is string => typeof x === 'string') : [];
    return { ok: r.ok === true, lines };
}

/** The folder URI the command was given (`{folder}` from the code action), if any. */
export function folderArgument(arg: unknown): string | undefined {
    if (arg && typeof arg === 'object' && typeof (arg as { folder?: unknown }).folder === 'string') {
        return (arg as { folder: string }).folder;
    }
    return undefined;
}

export async function runGitSetup(server: GitSetupServer, arg?: unknown): Promise<GitSetupResult | undefined> {
    const given = folderArgument(arg);
    const folder = given ? folderForUri(given) : await pickFolder(vscode.l10n.t('Set up team memory merging in which folder?'));
    if (!folder) {
        return undefined;
    }
    const client = await server.ready();
    if (!client) {
        return undefined;
    }
    let result: GitSetupResult;
    try {
        result = parseGitSetupResult(await client.sendRequest(GIT_SETUP_METHOD, { folder: folder.uri.toString() }));
    } catch (e) {
        void vscode.window.showErrorMessage(vscode.l10n.t('my-agent git-setup failed: {0}', errorMessage(e)));
        return undefined;
    }
    const log = getLog();
    for (const line of result.lines) {
        log.info(line);
    }
    const details = vscode.l10n.t('Show Details');
    const shown = result.ok
        ? vscode.window.showInformationMessage(
              vscode.l10n.t('Team memory merging is set up in {0}: git now merges MEMORY.md entry by entry. Commit .gitattributes and .my_agent_core/.gitignore.', folder.name),
              details,
          )
        : vscode.window.showErrorMessage(result.lines[0] ?? vscode.l10n.t('my-agent git-setup failed.'), details);
    void Promise.resolve(shown).then((choice) => {
        if (choice === details) {
            log.show(true);
        }
    });
    return result;
}
