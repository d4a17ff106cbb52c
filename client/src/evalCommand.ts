import { spawn as nodeSpawn, SpawnOptions } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { getLog, redact } from './common/log';
import { getApiKey } from './common/secrets';
import { currentSettings } from './common/settings';

/**
 * "Evaluate Memory with This Model": runs `my-agent eval --json --report <tmp>.html` with the editor's model
 * settings on the interpreter the language server runs on, shows the progress line it prints in a notification,
 * and opens the report in a webview with scripts disabled. The API key from SecretStorage reaches the process in
 * its environment (OPENAI_API_KEY), never on its command line. The endpoint is the user's own (a workspace's
 * `myAgent.baseUrl` is not used here: the key would go with it).
 */

/** What the command needs from the extension; the tests pass their own. */
export interface EvalDeps {
    /** The interpreter that runs the language server (undefined: it did not start). */
    python(): Promise<string | undefined>;
    apiKey(): Promise<string | undefined>;
    settings(): { model: string; baseUrl: string };
    spawn?: (command: string, args: readonly string[], options: SpawnOptions) => EvalProcess;
}

/** The part of a ChildProcess the command uses. */
export interface EvalProcess {
    stdout: NodeJS.ReadableStream | null;
    stderr: NodeJS.ReadableStream | null;
    kill(signal?: NodeJS.Signals): boolean;
    on(event: 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
    on(event: 'error', listener: (error: Error) => void): this;
}

export interface EvalSummary {
    model: string;
    categories: Record<string, { passed: number; total: number }>;
    cases: { id: string; category: string; passed: boolean; why: string }[];
}

export type EvalOutcome =
    | { kind: 'done'; summary: EvalSummary; report: string }
    | { kind: 'failed'; message: string }
    | { kind: 'cancelled' };

/** The deps of the real extension: the server's interpreter, SecretStorage and the `myAgent.*` settings. */
export function extensionEvalDeps(
    secrets: vscode.SecretStorage,
    server: { ready(): Promise<unknown>; readonly python: string | undefined },
): EvalDeps {
    return {
        python: async () => {
            await server.ready();
            return server.python;
        },
        apiKey: () => getApiKey(secrets),
        settings: () => {
            const s = currentSettings();
            return { model: s.model, baseUrl: s.baseUrl };
        },
    };
}

/** The command line (no key: that goes in the environment). */
export function evalArguments(report: string, model: string, baseUrl: string): string[] {
    const args = ['-m', 'my_agent_core', 'eval', '--json', '--report', report];
    if (model) {
        args.push('--model', model);
    }
    if (baseUrl) {
        args.push('--base-url', baseUrl);
    }
    return args;
}

/** The last `my-agent: ...` line of stderr (the CLI's one-line errors), else its last line. */
export function lastError(stderr: string): string {
    const lines = stderr.split(/\r?\n/).filter((l) => l.trim());
    const ours = lines.filter((l) => l.startsWith('my-agent: '));
    const line = ours.length ? ours[ours.length - 1].slice('my-agent: '.length) : lines[lines.length - 1];
    return (line ?? '').slice(0, 500);
}

/** Runs the eval and opens its report; resolves with what happened (also shown to the user). */
export async function evaluateMemory(deps: EvalDeps): Promise<EvalOutcome> {
    const python = await deps.python();
    if (!python) {
        const message = vscode.l10n.t('The memory eval needs the Python of the My Agent server, which did not start (see its output).');
        void vscode.window.showErrorMessage(message);
        return { kind: 'failed', message };
    }
    const { model, baseUrl } = deps.settings();
    const key = await deps.apiKey();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'my-agent-eval-'));
    const report = path.join(dir, 'report.html');
    const env: NodeJS.ProcessEnv = { ...process.env, PYTHONUTF8: '1' };
    if (key) {
        env.OPENAI_API_KEY = key;
    }
    const title = model
        ? vscode.l10n.t('Evaluating memory with {0}', model)
        : vscode.l10n.t('Evaluating memory with the default model');
    const outcome = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title, cancellable: true },
        (progress, token) =>
            run(deps, python, evalArguments(report, model, baseUrl), { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] }, key, {
                report: (line) => progress.report({ message: line }),
                token,
            }),
    );
    if (outcome.kind === 'done') {
        const summary = outcome.summary;
        const passed = summary.cases.filter((c) => c.passed).length;
        openReport(report, summary.model, dir);
        void vscode.window.showInformationMessage(
            vscode.l10n.t('Memory eval of {0}: {1} of {2} scenarios passed.', summary.model, passed, summary.cases.length),
        );
        return { ...outcome, report };
    }
    fs.rmSync(dir, { recursive: true, force: true });
    if (outcome.kind === 'failed') {
        void vscode.window.showErrorMessage(vscode.l10n.t('The memory eval did not run: {0}', outcome.message));
    }
    return outcome;
}

interface Watch {
    report(line: string): void;
    token: vscode.CancellationToken;
}

function run(
    deps: EvalDeps,
    python: string,
    args: string[],
    options: SpawnOptions,
    key: string | undefined,
    watch: Watch,
): Promise<EvalOutcome> {
    const spawn = deps.spawn ?? ((c: string, a: readonly string[], o: SpawnOptions) => nodeSpawn(c, a, o) as EvalProcess);
    getLog().info(`running ${python} ${args.join(' ')} (API key ${key ? 'from SecretStorage, in the environment' : 'not set'})`);
    return new Promise((resolve) => {
        let stdout = '';
        let stderr = '';
        let partial = '';
        let cancelled = false;
        const child = spawn(python, args, options);
        child.stdout?.on('data', (chunk: Buffer | string) => (stdout += chunk.toString()));
        child.stderr?.on('data', (chunk: Buffer | string) => {
            const text = partial + chunk.toString();
            stderr += chunk.toString();
            const lines = text.split(/\r?\n/);
            partial = lines.pop() ?? '';
            const last = lines.filter((l) => l.trim()).pop();
            if (last) {
                watch.report(last.slice(0, 200));
            }
        });
        const stop = watch.token.onCancellationRequested?.(() => {
            cancelled = true;
            child.kill('SIGINT'); // Python's KeyboardInterrupt: the temporary workspaces are removed
        });
        child.on('error', (error) => {
            stop?.dispose();
            resolve({ kind: 'failed', message: redact(error.message, [key]) });
        });
        child.on('close', (code) => {
            stop?.dispose();
            if (cancelled) {
                resolve({ kind: 'cancelled' });
                return;
            }
            if (code !== 0) {
                const why = lastError(stderr) || vscode.l10n.t('it exited with code {0}', String(code));
                resolve({ kind: 'failed', message: redact(why, [key]) });
                return;
            }
            try {
                resolve({ kind: 'done', summary: JSON.parse(stdout) as EvalSummary, report: '' });
            } catch {
                resolve({ kind: 'failed', message: vscode.l10n.t('its output was not the expected JSON') });
            }
        });
    });
}

/** The report in a webview that runs no script and loads nothing; its folder goes when the panel closes. */
function openReport(report: string, model: string, dir: string): void {
    const panel = vscode.window.createWebviewPanel(
        'myAgent.evalReport',
        vscode.l10n.t('Memory Eval: {0}', model),
        vscode.ViewColumn.Active,
        { enableScripts: false, localResourceRoots: [] },
    );
    panel.webview.html = fs.readFileSync(report, 'utf8');
    panel.onDidDispose(() => fs.rmSync(dir, { recursive: true, force: true }));
}
