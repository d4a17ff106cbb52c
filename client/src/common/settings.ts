import * as vscode from 'vscode';
import {
    ChatSettings,
    ContextSettings,
    InitializationOptions,
    MemoryApproval,
    MemorySettings,
    ServerMemorySettings,
    ServerSettings,
    ToolSettings,
    UserProfileScope,
} from '../protocol';

/** Reads the `myAgent.*` settings and shapes them for the server; pure helpers are exported for the unit tests. */

export const SECTION = 'myAgent';

export const DEFAULT_MEMORY: MemorySettings = {
    memoryCharLimit: 2200,
    userCharLimit: 1375,
    nearBudgetShare: 0.9,
};

export const DEFAULT_CHAT: ChatSettings = {
    contextWindow: 0,
    compactAt: 0.8,
    sessions: { maxCount: 50, maxAgeDays: 30 },
};

export const DEFAULT_TOOLS: ToolSettings = {
    approveEdits: false,
    allowedCommands: [],
    commandTimeout: 120,
};

export const DEFAULT_CONTEXT: ContextSettings = { maxChars: 8000 };

export const DEFAULT_PROVIDER = 'archive';

/** Settings that a workspace cannot set in Restricted Mode (package.json restrictedConfigurations). */
export const RESTRICTED_KEYS = ['python.interpreter', 'baseUrl'] as const;

/** Bounds that keep a hand-typed value from doing harm (a 10 GB context file cap, a day-long timeout). */
const MAX_CONTEXT_CHARS = 200_000;
const MAX_COMMAND_TIMEOUT = 24 * 3600;
const MAX_ALLOWED_COMMANDS = 200;
const MAX_PATTERN = 500;

export interface ClientSettings {
    model: string;
    baseUrl: string;
    interpreter: string;
    memory: ServerMemorySettings;
    chat: ChatSettings;
    tools: ToolSettings;
    context: ContextSettings;
}

/** The part of vscode.WorkspaceConfiguration these helpers need (the tests pass a plain object). */
export interface ConfigLike {
    get<T>(key: string): T | undefined;
    inspect?<T>(key: string): ValueLevels<T> | undefined;
}

export interface ValueLevels<T> {
    defaultValue?: T;
    globalValue?: T;
    workspaceValue?: T;
    workspaceFolderValue?: T;
}

function num(value: unknown, fallback: number, min: number, max = Number.POSITIVE_INFINITY): number {
    return typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max ? value : fallback;
}

function int(value: unknown, fallback: number, min: number, max = Number.POSITIVE_INFINITY): number {
    return Number.isInteger(value) ? num(value, fallback, min, max) : fallback;
}

function str(value: unknown): string {
    return typeof value === 'string' ? value.trim() : '';
}

function bool(value: unknown, fallback: boolean): boolean {
    return typeof value === 'boolean' ? value : fallback;
}

function patterns(value: unknown): string[] {
    if (!Array.isArray(value)) {
        return [];
    }
    const out: string[] = [];
    for (const v of value) {
        const p = str(v);
        if (p && p.length <= MAX_PATTERN && !out.includes(p)) {
            out.push(p);
        }
    }
    return out.slice(0, MAX_ALLOWED_COMMANDS);
}

const APPROVAL_STRICTNESS: readonly MemoryApproval[] = ['auto', 'untrusted', 'ask'];
export const DEFAULT_APPROVAL: MemoryApproval = 'untrusted';

function approvalValue(value: unknown): MemoryApproval | undefined {
    return APPROVAL_STRICTNESS.find((mode) => mode === value);
}

/**
 * Which memory writes ask first: the STRICTEST of the user's own value (else the default, "untrusted") and the
 * workspace's ones (ask > untrusted > auto). A workspace may make memory writes stricter, never looser, so a cloned
 * repository's `.vscode/settings.json` cannot switch off a user's review nor the default policy.
 */
function approvalOf(config: ConfigLike): MemoryApproval {
    const levels = config.inspect?.<unknown>('memory.approval');
    const values = levels
        ? [approvalValue(levels.globalValue) ?? DEFAULT_APPROVAL, levels.workspaceValue, levels.workspaceFolderValue]
        : [approvalValue(config.get<unknown>('memory.approval')) ?? DEFAULT_APPROVAL];
    let strictest: MemoryApproval = 'auto';
    for (const value of values) {
        const mode = approvalValue(value);
        if (mode && APPROVAL_STRICTNESS.indexOf(mode) > APPROVAL_STRICTNESS.indexOf(strictest)) {
            strictest = mode;
        }
    }
    return strictest;
}

/** Whether the user confirmed an endpoint a workspace sets (`EndpointConsent.allows`); none by default. */
export type EndpointAllowed = (url: string) => boolean;

const NO_ENDPOINT_ALLOWED: EndpointAllowed = () => false;

/** One spelling per endpoint (`HTTP://Host:80/v1/` and `http://host/v1` are the same), for the consent list. */
export function endpointKey(url: string): string {
    const text = url.trim();
    try {
        return new URL(text).href.replace(/\/+$/, '');
    } catch {
        return text;
    }
}

/** The user's own endpoint (their settings.json, else the default) and the one the workspace sets, if any. */
export function endpointLevels(config: ConfigLike): { own: string; workspace?: string } {
    const levels = config.inspect?.<unknown>('baseUrl');
    if (!levels) {
        return { own: str(config.get('baseUrl')) }; // no levels to tell apart: the value as given
    }
    const own = str(levels.globalValue ?? levels.defaultValue);
    const wanted = str(levels.workspaceFolderValue ?? levels.workspaceValue);
    return wanted && endpointKey(wanted) !== endpointKey(own) ? { own, workspace: wanted } : { own };
}

/**
 * `myAgent.baseUrl` as the server may see it. The setting is window-scoped, so a cloned repository's
 * `.vscode/settings.json` can set it, and the chat's requests carry the API key from SecretStorage: trusting a
 * folder's code is not consent to send the key elsewhere. A workspace's endpoint is used only once the user
 * confirmed it (`allowed`, remembered per endpoint outside the repository) in a trusted workspace; until then the
 * server gets the user's own value (or none, for the server's default).
 */
export function endpointOf(config: ConfigLike, trusted: boolean, allowed: EndpointAllowed = NO_ENDPOINT_ALLOWED): string {
    const { own, workspace } = endpointLevels(config);
    return workspace !== undefined && trusted && allowed(workspace) ? workspace : own;
}

/**
 * Reads the settings. In an untrusted workspace a restricted key takes only the user (global) value, so a
 * cloned repository cannot pick the interpreter we spawn; the endpoint a workspace sets needs the user's
 * confirmation even when trusted (`endpointOf`). The keys that pre-approve edits and commands, retention, the
 * archive's database and the global profile are `machine`-scoped in package.json, so VS Code itself ignores a
 * workspace's values for them.
 */
export function readSettings(config: ConfigLike, trusted: boolean, allowed: EndpointAllowed = NO_ENDPOINT_ALLOWED): ClientSettings {
    const get = <T>(key: string): T | undefined => {
        if (!trusted && (RESTRICTED_KEYS as readonly string[]).includes(key) && config.inspect) {
            const info = config.inspect<T>(key);
            return info?.globalValue ?? info?.defaultValue;
        }
        return config.get<T>(key);
    };
    const profile = get<unknown>('memory.userProfile');
    const ripgrep = str(get('tools.ripgrepPath'));
    const dsn = str(get('memory.postgresDsn'));
    const project = str(get('memory.postgresProject'));
    const memory: ServerMemorySettings = {
        memoryCharLimit: Math.floor(num(get('memory.memoryCharLimit'), DEFAULT_MEMORY.memoryCharLimit, 1)),
        userCharLimit: Math.floor(num(get('memory.userCharLimit'), DEFAULT_MEMORY.userCharLimit, 1)),
        nearBudgetShare: num(get('memory.nearBudgetShare'), DEFAULT_MEMORY.nearBudgetShare, 0, 1),
        approval: approvalOf(config),
        provider: str(get('memory.provider')) || DEFAULT_PROVIDER,
        semantic: bool(get('memory.semantic'), false),
        userProfile: (profile === 'global' ? 'global' : 'workspace') satisfies UserProfileScope,
        ...(dsn ? { postgresDsn: dsn } : {}),
        ...(project ? { postgresProject: project } : {}),
    };
    return {
        model: str(get<string>('model')),
        baseUrl: endpointOf(config, trusted, allowed),
        interpreter: str(get<string>('python.interpreter')),
        memory,
        chat: {
            contextWindow: int(get('chat.contextWindow'), DEFAULT_CHAT.contextWindow, 0),
            compactAt: num(get('chat.compactAt'), DEFAULT_CHAT.compactAt, 0.05, 0.99),
            sessions: {
                maxCount: int(get('chat.sessions.maxCount'), DEFAULT_CHAT.sessions.maxCount, 1),
                maxAgeDays: int(get('chat.sessions.maxAgeDays'), DEFAULT_CHAT.sessions.maxAgeDays, 1),
            },
        },
        tools: {
            approveEdits: bool(get('tools.approveEdits'), DEFAULT_TOOLS.approveEdits),
            allowedCommands: patterns(get('tools.allowedCommands')),
            commandTimeout: int(get('tools.commandTimeout'), DEFAULT_TOOLS.commandTimeout, 1, MAX_COMMAND_TIMEOUT),
            ...(ripgrep ? { ripgrepPath: ripgrep } : {}),
        },
        context: { maxChars: int(get('context.maxChars'), DEFAULT_CONTEXT.maxChars, 1, MAX_CONTEXT_CHARS) },
    };
}

/** The `myAgent` section the server sees: empty strings are left out so the server falls back to its env. */
export function toServerSettings(s: ClientSettings): ServerSettings {
    const out: ServerSettings = {
        memory: { ...s.memory },
        chat: { ...s.chat, sessions: { ...s.chat.sessions } },
        tools: { ...s.tools, allowedCommands: [...s.tools.allowedCommands] },
        context: { ...s.context },
    };
    if (s.model) {
        out.model = s.model;
    }
    if (s.baseUrl) {
        out.baseUrl = s.baseUrl;
    }
    return out;
}

/** initializationOptions as sent: also the editor's install folder, whose bundled ripgrep the server may use. */
export type ServerInitializationOptions = { myAgent: InitializationOptions['myAgent'] & { appRoot?: string } };

/** initializationOptions = {myAgent: {...}}; untrusted workspaces list every folder in untrustedFolders. */
export function buildInitializationOptions(
    s: ClientSettings,
    trusted: boolean,
    folderUris: readonly string[],
    appRoot?: string,
): ServerInitializationOptions {
    const myAgent: ServerInitializationOptions['myAgent'] = toServerSettings(s);
    if (!trusted) {
        myAgent.untrustedFolders = [...folderUris];
    }
    if (appRoot) {
        myAgent.appRoot = appRoot;
    }
    return { myAgent };
}

/** The settings now; `allowed`: the endpoints the user confirmed (the server's view needs it, see `endpointOf`). */
export function currentSettings(allowed: EndpointAllowed = NO_ENDPOINT_ALLOWED): ClientSettings {
    return readSettings(vscode.workspace.getConfiguration(SECTION), vscode.workspace.isTrusted, allowed);
}

export function currentInitializationOptions(allowed: EndpointAllowed = NO_ENDPOINT_ALLOWED): ServerInitializationOptions {
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString());
    return buildInitializationOptions(currentSettings(allowed), vscode.workspace.isTrusted, folders, vscode.env.appRoot);
}

/** The part of vscode.Memento the consent needs (the tests pass the stub's). */
export interface MementoLike {
    get<T>(key: string): T | undefined;
    update(key: string, value: unknown): Thenable<void>;
}

/** globalState: endpoints the user confirmed for any workspace that sets them. */
export const CONFIRMED_ENDPOINTS_KEY = 'myAgent.confirmedEndpoints';
/** workspaceState: endpoints this workspace sets that the user declined ("Keep my own"). */
export const DECLINED_ENDPOINTS_KEY = 'myAgent.declinedEndpoints';

export type EndpointAnswer = 'use' | 'keep' | undefined;
/** Asks the user about `endpoint` (set by the workspace) instead of `own` ('' for the default endpoint). */
export type EndpointQuestion = (endpoint: string, own: string) => Thenable<EndpointAnswer>;

/**
 * The user's consent to the endpoint a workspace sets: asked once per endpoint, remembered outside the repository
 * (extension globalState; a refusal in this workspace's own state). A dismissed question is not asked again in
 * this window, and counts as "Keep my own".
 */
export class EndpointConsent {
    private readonly asked = new Set<string>();

    constructor(
        private readonly global: MementoLike,
        private readonly workspace: MementoLike,
        private readonly ask: EndpointQuestion,
    ) {}

    /** For `readSettings`: whether the user confirmed this endpoint. */
    readonly allows: EndpointAllowed = (url) => this.list(this.global, CONFIRMED_ENDPOINTS_KEY).includes(endpointKey(url));

    /** Asks about the workspace's endpoint when there is one the user has not answered yet; true when the user
     * confirmed it now (the server's settings must then be pushed again). */
    async review(config: ConfigLike, trusted: boolean): Promise<boolean> {
        const { own, workspace } = endpointLevels(config);
        if (workspace === undefined || !trusted || this.allows(workspace)) {
            return false;
        }
        const key = endpointKey(workspace);
        if (this.asked.has(key) || this.list(this.workspace, DECLINED_ENDPOINTS_KEY).includes(key)) {
            return false;
        }
        this.asked.add(key);
        const answer = await this.ask(workspace, own);
        if (answer === 'use') {
            await this.global.update(CONFIRMED_ENDPOINTS_KEY, [...this.list(this.global, CONFIRMED_ENDPOINTS_KEY), key]);
            return true;
        }
        if (answer === 'keep') {
            await this.workspace.update(DECLINED_ENDPOINTS_KEY, [...this.list(this.workspace, DECLINED_ENDPOINTS_KEY), key]);
        }
        return false;
    }

    private list(memento: MementoLike, key: string): string[] {
        const value = memento.get<unknown>(key);
        return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
    }
}

/** The modal question: where the chat's requests, and the API key with them, would go. */
export const askAboutEndpoint: EndpointQuestion = async (endpoint, own) => {
    const use = vscode.l10n.t('Use this endpoint');
    const keep = vscode.l10n.t('Keep my own');
    const instead = own
        ? vscode.l10n.t('your own endpoint, {0}', own)
        : vscode.l10n.t('the default endpoint (OPENAI_BASE_URL, else api.openai.com)');
    const picked = await vscode.window.showWarningMessage(
        vscode.l10n.t('This workspace sets the chat endpoint (myAgent.baseUrl) to {0}.', endpoint),
        {
            modal: true,
            detail: vscode.l10n.t(
                'Chat requests, with your API key, would go to {0} instead of {1}. A repository can set this in its .vscode/settings.json: use it only if you know that server. Your answer is remembered for this endpoint.',
                endpoint,
                instead,
            ),
        },
        use,
        keep,
    );
    return picked === use ? 'use' : picked === keep ? 'keep' : undefined;
};

/** Changes that need a new server process (the rest travel live through workspace/didChangeConfiguration). */
export function needsRestart(e: vscode.ConfigurationChangeEvent): boolean {
    return e.affectsConfiguration(`${SECTION}.python.interpreter`);
}
