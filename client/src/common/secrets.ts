import * as vscode from 'vscode';

/** The API key lives in SecretStorage only; it reaches the server as OPENAI_API_KEY in its environment. */

export const API_KEY_SECRET = 'myAgent.apiKey';

export async function getApiKey(secrets: vscode.SecretStorage): Promise<string | undefined> {
    const key = await secrets.get(API_KEY_SECRET);
    return key ? key : undefined;
}

/** Asks for the key (password box). Empty input removes it. Returns false when the user cancelled. */
export async function promptForApiKey(secrets: vscode.SecretStorage): Promise<boolean> {
    const value = await vscode.window.showInputBox({
        title: vscode.l10n.t('My Agent: API key'),
        prompt: vscode.l10n.t('The key is kept in VS Code secret storage and given to the server as OPENAI_API_KEY. Leave empty to remove it.'),
        password: true,
        ignoreFocusOut: true,
        placeHolder: 'sk-…',
    });
    if (value === undefined) {
        return false;
    }
    const key = value.trim();
    if (key) {
        await secrets.store(API_KEY_SECRET, key);
        void vscode.window.showInformationMessage(vscode.l10n.t('API key saved. The server restarts to use it.'));
    } else {
        await secrets.delete(API_KEY_SECRET);
        void vscode.window.showInformationMessage(vscode.l10n.t('API key removed.'));
    }
    return true;
}

/** Fires when our key changed (set, replaced or deleted), e.g. from another window. */
export function onApiKeyChanged(secrets: vscode.SecretStorage, listener: () => void): vscode.Disposable {
    return secrets.onDidChange((e) => {
        if (e.key === API_KEY_SECRET) {
            listener();
        }
    });
}
