import * as path from 'path';
import * as vscode from 'vscode';
import {
    CancellationToken,
    ConfigurationParams,
    LanguageClient,
    LanguageClientOptions,
    RequestHandler,
    ServerOptions,
    State,
} from 'vscode-languageclient/node';
import { currentInitializationOptions, currentSettings, SECTION, toServerSettings } from './settings';
import { getLog, redact, showErrorWithOutput } from './log';
import { PythonSetupError, resolveServerPython } from './python';
import { getApiKey } from './secrets';

/** Starts, stops and restarts the LanguageClient that runs `python -m my_agent_core serve` over stdio. */

export const MEMORY_GLOB = '**/.my_agent_core/memory/{MEMORY,USER}.md';

export const DOCUMENT_SELECTOR = [{ scheme: 'file', pattern: MEMORY_GLOB }];

/** Answers the server's workspace/configuration pull for `myAgent` with the same shape as initializationOptions. */
export function shapeConfiguration(
    params: ConfigurationParams,
    results: unknown[],
    settings: () => unknown,
): unknown[] {
    return params.items.map((item, i) => (item.section === SECTION ? settings() : results[i]));
}

export class ServerManager implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private resolvedPython: string | undefined;
    private starting: Promise<LanguageClient | undefined> | undefined;
    private readonly watcher: vscode.FileSystemWatcher;
    private readonly onDidStartEmitter = new vscode.EventEmitter<LanguageClient>();
    private readonly onDidStopEmitter = new vscode.EventEmitter<void>();
    /** Fired with the running client after every (re)start: register notification handlers here. */
    readonly onDidStart = this.onDidStartEmitter.event;
    /** Fired when the client is stopped (sessions are gone with the process). */
    readonly onDidStop = this.onDidStopEmitter.event;

    constructor(private readonly context: vscode.ExtensionContext) {
        this.watcher = vscode.workspace.createFileSystemWatcher(MEMORY_GLOB);
    }

    /** The interpreter that runs the server (the configured one, or the private venv's), once resolved. */
    get python(): string | undefined {
        return this.resolvedPython;
    }

    get running(): LanguageClient | undefined {
        return this.client?.state === State.Running ? this.client : undefined;
    }

    /** The running client, starting it when needed; undefined when it cannot start (the error was shown). */
    async ready(): Promise<LanguageClient | undefined> {
        if (this.running) {
            return this.running;
        }
        return this.start();
    }

    start(): Promise<LanguageClient | undefined> {
        if (!this.starting) {
            this.starting = this.doStart().finally(() => {
                this.starting = undefined;
            });
        }
        return this.starting;
    }

    private async doStart(): Promise<LanguageClient | undefined> {
        const log = getLog();
        if (this.client) {
            return this.client;
        }
        let python: string;
        try {
            python = await resolveServerPython({
                setting: currentSettings().interpreter,
                extensionVersion: String(this.context.extension.packageJSON.version ?? '0.0.0'),
                storageDir: this.context.globalStorageUri.fsPath,
                wheelsDir: path.join(this.context.extensionPath, 'bundled', 'wheels'),
                log,
            });
        } catch (e) {
            const message = e instanceof PythonSetupError ? e.message : String(e);
            log.error(message);
            void showErrorWithOutput(message);
            return undefined;
        }
        this.resolvedPython = python;
        const apiKey = await getApiKey(this.context.secrets);
        const env: NodeJS.ProcessEnv = { ...process.env, PYTHONUTF8: '1' };
        if (apiKey) {
            env.OPENAI_API_KEY = apiKey;
        }
        const serverOptions: ServerOptions = {
            command: python,
            args: ['-m', 'my_agent_core', 'serve'],
            options: { env },
        };
        const clientOptions: LanguageClientOptions = {
            documentSelector: DOCUMENT_SELECTOR,
            outputChannel: log,
            traceOutputChannel: log,
            initializationOptions: currentInitializationOptions(),
            synchronize: {
                configurationSection: SECTION,
                fileEvents: this.watcher,
            },
            middleware: {
                workspace: {
                    configuration: async (
                        params: ConfigurationParams,
                        token: CancellationToken,
                        next: RequestHandler<ConfigurationParams, unknown[], void>,
                    ) => {
                        const results = await next(params, token);
                        if (!Array.isArray(results)) {
                            return results;
                        }
                        return shapeConfiguration(params, results, () => toServerSettings(currentSettings()));
                    },
                },
            },
        };
        const client = new LanguageClient('myAgent', 'My Agent', serverOptions, clientOptions);
        this.client = client;
        log.info(redact(`starting ${python} -m my_agent_core serve (API key ${apiKey ? 'from SecretStorage' : env.OPENAI_API_KEY ? 'from the environment' : 'not set'})`, [apiKey]));
        try {
            await client.start();
        } catch (e) {
            this.client = undefined;
            const message = vscode.l10n.t('The My Agent language server failed to start: {0}', redact(String(e), [apiKey]));
            log.error(message);
            void showErrorWithOutput(message);
            try {
                await client.dispose();
            } catch {
                // already gone
            }
            return undefined;
        }
        this.onDidStartEmitter.fire(client);
        return client;
    }

    async stop(): Promise<void> {
        await this.starting?.catch(() => undefined);
        const client = this.client;
        this.client = undefined;
        if (client) {
            try {
                await client.stop();
            } catch (e) {
                getLog().warn(`stopping the server: ${String(e)}`);
            }
            this.onDidStopEmitter.fire();
        }
    }

    async restart(): Promise<LanguageClient | undefined> {
        getLog().info('restarting the language server');
        await this.stop();
        return this.start();
    }

    dispose(): void {
        void this.stop();
        this.watcher.dispose();
        this.onDidStartEmitter.dispose();
        this.onDidStopEmitter.dispose();
    }
}
