/**
 * The server <-> client protocol of docs/protocol.md, typed. Names are the wire names; nothing here talks to
 * VS Code so the shapes can be shared by the host, the webview and the unit tests.
 */

export type Target = 'memory' | 'user';
export type EditAction = 'add' | 'replace' | 'remove';

/** JSON-RPC error codes the server uses (docs/protocol.md). */
export const ErrorCodes = {
    methodNotFound: -32601,
    invalidParams: -32602,
    noModel: -32001,
    endpointFailed: -32002,
    editRefused: -32003,
    requestCancelled: -32800,
} as const;

export const Methods = {
    memoryState: 'myAgent/memory/state',
    memoryEdit: 'myAgent/memory/edit',
    memoryUndo: 'myAgent/memory/undo',
    memoryLog: 'myAgent/memory/log',
    memoryChanged: 'myAgent/memory/changed',
    chatStart: 'myAgent/chat/start',
    chatSend: 'myAgent/chat/send',
    chatEvent: 'myAgent/chat/event',
    chatSystemPrompt: 'myAgent/chat/systemPrompt',
    chatSnapshot: 'myAgent/chat/snapshot',
    chatEnd: 'myAgent/chat/end',
    chatSessions: 'myAgent/chat/sessions',
} as const;

// ---- settings --------------------------------------------------------------------------------------------

export interface MemorySettings {
    memoryCharLimit: number;
    userCharLimit: number;
    nearBudgetShare: number;
}

/** The `myAgent` section as the server reads it (initializationOptions.myAgent and workspace/configuration). */
export interface ServerSettings {
    model?: string;
    baseUrl?: string;
    memory: MemorySettings;
}

export interface InitializationOptions {
    myAgent: ServerSettings & { untrustedFolders?: string[] };
}

// ---- memory ----------------------------------------------------------------------------------------------

export interface StoreState {
    target: Target;
    path: string;
    used: number;
    limit: number;
    entries: string[];
    available?: boolean;
    error?: string;
}

export interface FolderParams {
    folder?: string;
}

export interface MemoryStateResult {
    folder: string;
    stores: StoreState[];
}

export interface MemoryEditParams extends FolderParams {
    target: Target;
    action: EditAction;
    content?: string;
    oldText?: string;
    newContent?: string;
}

export interface MemoryEditResult {
    message: string;
    state: MemoryStateResult;
}

export interface MemoryLogParams extends FolderParams {
    limit?: number;
}

export interface JournalEntry {
    id: string;
    time: string;
    action: string;
    target: Target;
    author: string;
    before?: string | null;
    after?: string | null;
}

export interface MemoryLogResult {
    entries: JournalEntry[];
}

export interface MemoryChangedParams {
    folder: string;
    target: Target;
    path: string;
    used: number;
    limit: number;
    entries: string[];
    source: 'agent' | 'user' | 'cli' | 'disk';
    sessionId?: string;
    journalId?: string;
}

// ---- chat ------------------------------------------------------------------------------------------------

export interface ChatStartResult {
    sessionId: string;
    folder: string;
    memory: boolean;
}

export interface ChatSendParams {
    sessionId: string;
    message: string;
}

export interface RequestUsage {
    promptTokens: number;
    completionTokens: number;
    cachedTokens: number;
}

export interface SessionUsage extends RequestUsage {
    requests: number;
    cacheHitRate: number;
}

export interface ChatSendResult {
    reply: string;
    usage?: SessionUsage;
}

interface EventBase {
    sessionId: string;
}

export type ChatEvent =
    | (EventBase & { kind: 'delta'; text: string })
    | (EventBase & { kind: 'tool_call'; callId: string; name: string; arguments: string })
    | (EventBase & { kind: 'tool_result'; callId: string; name: string; ok: boolean; content: string })
    | (EventBase & { kind: 'memory_changed'; target: Target; action: string; journalId?: string })
    | (EventBase & { kind: 'usage' } & RequestUsage)
    | (EventBase & { kind: 'done'; reply: string; usage?: SessionUsage })
    | (EventBase & { kind: 'error'; message: string });

export interface SessionParams {
    sessionId: string;
}

export interface SystemPromptResult {
    text: string;
}

/** `myAgent/chat/snapshot`: the entries frozen into a session's system prompt (none when memory is off). */
export interface ChatSnapshotResult {
    sessionId: string;
    folder: string;
    memory: boolean;
    stores: { target: Target; entries: string[] }[];
}
