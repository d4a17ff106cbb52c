import * as vscode from 'vscode';

/** The progress UI of the first-run venv setup, behind a small seam so the setup logic runs without VS Code. */

export interface SetupProgress {
    report(message: string): void;
}

/** Runs `task` with a way to report its steps; resolves with what `task` resolves with. */
export type ProgressRunner = <T>(task: (progress: SetupProgress) => Promise<T>) => Promise<T>;

/** A notification "My Agent: setting up its Python environment (first run only)…" with the current step. */
export const notificationProgress: ProgressRunner = <T>(task: (progress: SetupProgress) => Promise<T>): Promise<T> =>
    Promise.resolve(
        vscode.window.withProgress(
            {
                location: vscode.ProgressLocation.Notification,
                title: vscode.l10n.t('My Agent: setting up its Python environment (first run only)…'),
            },
            (progress) => task({ report: (message) => progress.report({ message }) }),
        ),
    );
