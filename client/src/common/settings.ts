import * as vscode from 'vscode';
import { InitializationOptions, MemorySettings, ServerSettings } from '../protocol';

/** Reads the `myAgent.*` settings and shapes them for the server; pure helpers are exported for the unit tests. */

export const SECTION = 'myAgent';

export const DEFAULT_MEMORY: MemorySettings = {
    memoryCharLimit: 2200,
    userCharLimit: 1375,
    nearBudgetShare: 0.9,
};

/** Settings that a workspace cannot set in Restricted Mode (package.json restrictedConfigurations). */
export const RESTRICTED_KEYS = ['python.interpreter', 'baseUrl'] as const;

export interface ClientSettings {
    model: string;
    baseUrl: string;
    interpreter: string;
    memory: MemorySettings;
}

/** The part of vscode.WorkspaceConfiguration these helpers need (the tests pass a plain object). */
export interface ConfigLike {
    get<T>(key: string): T | undefined;
    inspect?<T>(key: string): { defaultValue?: T; globalValue?: T } | undefined;
}

function num(value: unknown, fallback: number, min: number, max = Number.POSITIVE_INFINITY): number {
    return typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max ? value : fallback;
}

function str(value: unknown): string {
    return typeof value === 'string' ? value.trim() : '';
}

/**
 * Reads the settings. In an untrusted workspace a restricted key takes only the user (global) value, so a
 * cloned repository cannot pick the interpreter we spawn or send the API key to its own endpoint.
 */
export function readSettings(config: ConfigLike, trusted: boolean): ClientSettings {
    const get = <T>(key: string): T | undefined => {
        if (!trusted && (RESTRICTED_KEYS as readonly string[]).includes(key) && config.inspect) {
            const info = config.inspect<T>(key);
            return info?.globalValue ?? info?.defaultValue;
        }
        return config.get<T>(key);
    };
    return {
        model: str(get<string>('model')),
        baseUrl: str(get<string>('baseUrl')),
        interpreter: str(get<string>('python.interpreter')),
        memory: {
            memoryCharLimit: Math.floor(num(get('memory.memoryCharLimit'), DEFAULT_MEMORY.memoryCharLimit, 1)),
            userCharLimit: Math.floor(num(get('memory.userCharLimit'), DEFAULT_MEMORY.userCharLimit, 1)),
            nearBudgetShare: num(get('memory.nearBudgetShare'), DEFAULT_MEMORY.nearBudgetShare, 0, 1),
        },
    };
}

/** The `myAgent` section the server sees: empty strings are left out so the server falls back to its env. */
export function toServerSettings(s: ClientSettings): ServerSettings {
    const out: ServerSettings = { memory: { ...s.memory } };
    if (s.model) {
        out.model = s.model;
    }
    if (s.baseUrl) {
        out.baseUrl = s.baseUrl;
    }
    return out;
}

/** initializationOptions = {myAgent: {...}}; untrusted workspaces list every folder in untrustedFolders. */
export function buildInitializationOptions(
    s: ClientSettings,
    trusted: boolean,
    folderUris: readonly string[],
): InitializationOptions {
    const myAgent: InitializationOptions['myAgent'] = toServerSettings(s);
    if (!trusted) {
        myAgent.untrustedFolders = [...folderUris];
    }
    return { myAgent };
}

export function currentSettings(): ClientSettings {
    return readSettings(vscode.workspace.getConfiguration(SECTION), vscode.workspace.isTrusted);
}

export function currentInitializationOptions(): InitializationOptions {
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString());
    return buildInitializationOptions(currentSettings(), vscode.workspace.isTrusted, folders);
}

/** Changes that need a new server process (the rest travel live through workspace/didChangeConfiguration). */
export function needsRestart(e: vscode.ConfigurationChangeEvent): boolean {
    return e.affectsConfiguration(`${SECTION}.python.interpreter`);
}
