import * as vscode from 'vscode';

/** One output channel ("My Agent") shared by the extension and the language client, so a user has one place to look. */
let channel: vscode.LogOutputChannel | undefined;

export function getLog(): vscode.LogOutputChannel {
    if (!channel) {
        channel = vscode.window.createOutputChannel('My Agent', { log: true });
    }
    return channel;
}

/** Replace anything that looks like an API key before text reaches the log (keys must never be logged). */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
    let out = text;
    for (const s of secrets) {
        if (s && s.length >= 4) {
            out = out.split(s).join('***');
        }
    }
    return out.replace(/\bsk-[A-Za-z0-9_-]{8,}/g, 'sk-***');
}

/** Show an error with a "Show Output" button that reveals the log. */
export async function showErrorWithOutput(message: string): Promise<void> {
    const show = vscode.l10n.t('Show Output');
    const choice = await vscode.window.showErrorMessage(message, show);
    if (choice === show) {
        getLog().show(true);
    }
}
