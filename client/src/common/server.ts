import * as path from 'path';
import * as vscode from 'vscode';
import {
    ApplyWorkspaceEditParams,
    ApplyWorkspaceEditRequest,
    ApplyWorkspaceEditResult,
    CancellationToken,
    ConfigurationParams,
    DidChangeConfigurationNotification,
    DidChangeConfigurationParams,
    LanguageClient,
    LanguageClientOptions,
    RequestHandler,
    ServerOptions,
    State,
    TextDocumentEdit,
} from 'vscode-languageclient/node';
import {
    askAboutEndpoint,
    currentInitializationOptions,
    currentSettings,
    EndpointConsent,
    SECTION,
    toServerSettings,
} from './settings';
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

/** The `workspace/didChangeConfiguration` the server gets: our `myAgent` shape, never the raw section. */
export function pushedSettings(settings: () => unknown): DidChangeConfigurationParams {
    return { settings: { [SECTION]: settings() } };
}

type ConfigurationHandler = RequestHandler<ConfigurationParams, unknown[], void>;

/**
 * The language client's workspace middleware: both ways the server learns the settings (its pull, and the push
 * on a change) carry `settings()`, so what the server sees is filtered here (e.g. a workspace's endpoint the
 * user has not confirmed is not in it), not the raw configuration the language client would send.
 */
export function settingsMiddleware(settings: () => unknown, push: (params: DidChangeConfigurationParams) => Promise<void>) {
    return {
        configuration: async (params: ConfigurationParams, token: CancellationToken, next: ConfigurationHandler) => {
            const results = await next(params, token);
            if (!Array.isArray(results)) {
                return results;
            }
            return shapeConfiguration(params, results, settings);
        },
        didChangeConfiguration: async (_sections: string[] | undefined, _next: unknown) => push(pushedSettings(settings)),
    };
}

/**
 * The `workspace/applyEdit` label of an edit the user approved in the chat (server/my_agent_core/lsp/edits.py
 * AGENT_EDIT_LABEL). Such an edit is saved afterwards in every document that had no unsaved changes before,
 * so the next command the agent runs (the tests) sees it on disk; a document with the user's own unsaved
 * changes gets the edit in its buffer and stays unsaved.
 */
export const AGENT_EDIT_LABEL = 'my-agent: approved edit of';

let editQueue: Promise<unknown> = Promise.resolve();

/**
 * Our `workspace/applyEdit` handler: the language client's own behaviour (one edit at a time; a versioned
 * edit of an open document whose version moved on is refused), then the save of clean documents above.
 */
export function applyWorkspaceEdit(client: LanguageClient, params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> {
    const run = editQueue.then(() => applyNow(client, params));
    editQueue = run.catch(() => undefined);
    return run;
}

async function applyNow(client: LanguageClient, params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> {
    const open = new Map(vscode.workspace.textDocuments.map((doc) => [doc.uri.toString(), doc]));
    const clean: vscode.TextDocument[] = [];
    for (const change of params.edit.documentChanges ?? []) {
        if (!TextDocumentEdit.is(change)) {
            continue;
        }
        const doc = open.get(client.protocol2CodeConverter.asUri(change.textDocument.uri).toString());
        const version = change.textDocument.version;
        if (doc && typeof version === 'number' && version >= 0 && doc.version !== version) {
            return { applied: false, failureReason: 'the document changed in the editor meanwhile' };
        }
        if (doc && !doc.isDirty) {
            clean.push(doc);
        }
    }
    const edit = await client.protocol2CodeConverter.asWorkspaceEdit(params.edit);
    const applied = await vscode.workspace.applyEdit(edit);
    if (applied && params.label?.startsWith(AGENT_EDIT_LABEL)) {
        for (const doc of clean) {
            try {
                if (!(await doc.save())) {
                    getLog().warn(`the approved edit of ${doc.uri.fsPath} was applied but not saved`);
                }
            } catch (e) {
                getLog().warn(`saving ${doc.uri.fsPath} after an approved edit failed: ${String(e)}`);
            }
        }
    }
    return { applied };
}

export class ServerManager implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private resolvedPython: string | undefined;
    private starting: Promise<LanguageClient | undefined> | undefined;
    private readonly watcher: vscode.FileSystemWatcher;
    private readonly consent: EndpointConsent;
    private readonly listeners: vscode.Disposable[] = [];
    private readonly onDidStartEmitter = new vscode.EventEmitter<LanguageClient>();
    private readonly onDidStopEmitter = new vscode.EventEmitter<void>();
    /** Fired with the running client after every (re)start: register notification handlers here. */
    readonly onDidStart = this.onDidStartEmitter.event;
    /** Fired when the client is stopped (sessions are gone with the process). */
    readonly onDidStop = this.onDidStopEmitter.event;

    constructor(private readonly context: vscode.ExtensionContext) {
        this.watcher = vscode.workspace.createFileSystemWatcher(MEMORY_GLOB);
        this.consent = new EndpointConsent(context.globalState, context.workspaceState, askAboutEndpoint);
        this.listeners.push(
            vscode.workspace.onDidChangeConfiguration((e) => {
                if (e.affectsConfiguration(`${SECTION}.baseUrl`)) {
                    void this.reviewEndpoint();
                }
            }),
            vscode.workspace.onDidGrantWorkspaceTrust(() => void this.reviewEndpoint()),
        );
    }

    /** The settings as the server may see them (a workspace's endpoint only once the user confirmed it). */
    private serverSettings(): unknown {
        return toServerSettings(currentSettings(this.consent.allows));
    }

    /** Asks about an endpoint the workspace sets (once per endpoint); once confirmed, the server is told. */
    async reviewEndpoint(): Promise<void> {
        const confirmed = await this.consent.review(vscode.workspace.getConfiguration(SECTION), vscode.workspace.isTrusted);
        if (!confirmed) {
            return;
        }
        getLog().info('the endpoint this workspace sets was confirmed; the server uses it from now on');
        await this.starting?.catch(() => undefined);
        await this.running?.sendNotification(DidChangeConfigurationNotification.type, pushedSettings(() => this.serverSettings()));
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
        void this.reviewEndpoint(); // not awaited: the server starts with the user's own endpoint meanwhile
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
            initializationOptions: currentInitializationOptions(this.consent.allows),
            synchronize: {
                configurationSection: SECTION,
                fileEvents: this.watcher,
            },
            middleware: {
                workspace: settingsMiddleware(
                    () => this.serverSettings(),
                    (params) => client.sendNotification(DidChangeConfigurationNotification.type, params),
                ),
            },
        };
        const client: LanguageClient = new LanguageClient('myAgent', 'My Agent', serverOptions, clientOptions);
        // Replaces the language client's own handler (registered before start, it wins at initialize).
        client.onRequest(ApplyWorkspaceEditRequest.type, (params) => applyWorkspaceEdit(client, params));
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
        this.listeners.forEach((l) => l.dispose());
        this.onDidStartEmitter.dispose();
        this.onDidStopEmitter.dispose();
    }
}
