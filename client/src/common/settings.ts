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

/**
 * Review mode: "ask" when ANY settings level asks. A workspace may make memory writes stricter, never
 * looser, so a cloned repository's `.vscode/settings.json` cannot switch off a user's review.
 */
function approvalOf(config: ConfigLike): MemoryApproval {
    const levels = config.inspect?.<unknown>('memory.approval');
    const values = levels
        ? [levels.globalValue, levels.workspaceValue, levels.workspaceFolderValue]
        : [config.get<unknown>('memory.approval')];
    return values.includes('ask') ? 'ask' : 'auto';
}

/**
 * Reads the settings. In an untrusted workspace a restricted key takes only the user (global) value, so a
 * cloned repository cannot pick the interpreter we spawn or send the API key to its own endpoint. The keys
 * that pre-approve edits and commands, retention, the archive's database and the global profile are
 * `machine`-scoped in package.json, so VS Code itself ignores a workspace's values for them.
 */
export function readSettings(config: ConfigLike, trusted: boolean): ClientSettings {
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
        baseUrl: str(get<string>('baseUrl')),
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

export function currentSettings(): ClientSettings {
    return readSettings(vscode.workspace.getConfiguration(SECTION), vscode.workspace.isTrusted);
}

export function currentInitializationOptions(): ServerInitializationOptions {
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString());
    return buildInitializationOptions(currentSettings(), vscode.workspace.isTrusted, folders, vscode.env.appRoot);
}

/** Changes that need a new server process (the rest travel live through workspace/didChangeConfiguration). */
export function needsRestart(e: vscode.ConfigurationChangeEvent): boolean {
    return e.affectsConfiguration(`${SECTION}.python.interpreter`);
}
