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
    memoryBuffer: 'myAgent/memory/buffer',
    memoryChanged: 'myAgent/memory/changed',
    chatStart: 'myAgent/chat/start',
    chatSend: 'myAgent/chat/send',
    chatEvent: 'myAgent/chat/event',
    chatSystemPrompt: 'myAgent/chat/systemPrompt',
    chatSnapshot: 'myAgent/chat/snapshot',
    chatEnd: 'myAgent/chat/end',
    chatSessions: 'myAgent/chat/sessions',
    chatApprove: 'myAgent/chat/approve',
    chatResume: 'myAgent/chat/resume',
    chatCompact: 'myAgent/chat/compact',
    chatDelete: 'myAgent/chat/delete',
    memoryImport: 'myAgent/memory/import',
    memoryTool: 'myAgent/memory/tool',
    recallSearch: 'myAgent/recall/search',
    recallGet: 'myAgent/recall/get',
    recallDelete: 'myAgent/recall/delete',
} as const;

// ---- settings --------------------------------------------------------------------------------------------

export interface MemorySettings {
    memoryCharLimit: number;
    userCharLimit: number;
    nearBudgetShare: number;
}

/** Which agent memory writes ask first: `untrusted` (default) a write that may carry untrusted text, `ask` every write, `auto` none. */
export type MemoryApproval = 'untrusted' | 'ask' | 'auto';
export type UserProfileScope = 'workspace' | 'global';

/** `memory` as the server reads it: the budgets, plus review mode and the memory provider. */
export interface ServerMemorySettings extends MemorySettings {
    approval: MemoryApproval;
    /** "archive" | "postgres" | "none" | an entry-point name. */
    provider: string;
    postgresDsn?: string;
    postgresProject?: string;
    semantic: boolean;
    userProfile: UserProfileScope;
}

export interface ChatSettings {
    /** Tokens; 0 = from the model table (else 128000). */
    contextWindow: number;
    /** Share of the context window at which a session compacts. */
    compactAt: number;
    sessions: { maxCount: number; maxAgeDays: number };
}

export interface ToolSettings {
    approveEdits: boolean;
    /** Command patterns that run without asking. */
    allowedCommands: string[];
    ripgrepPath?: string;
    /** Seconds. */
    commandTimeout: number;
}

export interface ContextSettings {
    /** Characters per context file frozen into the system prompt. */
    maxChars: number;
}

/** The `myAgent` section as the server reads it (initializationOptions.myAgent and workspace/configuration). */
export interface ServerSettings {
    model?: string;
    baseUrl?: string;
    memory: ServerMemorySettings;
    chat: ChatSettings;
    tools: ToolSettings;
    context: ContextSettings;
}

export interface InitializationOptions {
    myAgent: ServerSettings & { untrustedFolders?: string[] };
}

// ---- memory ----------------------------------------------------------------------------------------------

/** A source an agent memory write may derive from (its journal provenance). */
export interface SourceRef {
    /** file | search | listing | command | edit | archive | tool | context_file | attachment | recall | summary | unindexed */
    kind: string;
    /** `README.md:5`, a command line, a query: one clean line. */
    where: string;
    /** `copied`: shares a run of words with it; `read`: received in the same turn. */
    how: string;
}

/** Where an agent write in a chat came from; no sources: the user's own words. */
export interface Provenance {
    mode?: MemoryApproval;
    /** `user`: no untrusted source (the user's own words); `untrusted`: see `sources`. */
    origin?: 'user' | 'untrusted';
    session?: string;
    title?: string;
    sources?: SourceRef[];
    more?: number;
    /** The user approved it (absent: nobody was asked). */
    approved?: boolean;
}

/** Who made one entry and from what, derived from the journal; one per entry, in order. */
export interface EntryOrigin {
    /** In words: "added 7 Dec by the chat 'Fix the tests' · text from README.md:5 · approved by you". */
    summary: string;
    /** recorded | hand | older | unknown */
    known: string;
    journalId?: string;
    author?: string;
    time?: number;
    provenance?: Provenance;
}

export interface StoreState {
    target: Target;
    path: string;
    used: number;
    limit: number;
    entries: string[];
    available?: boolean;
    error?: string;
    /** Parallel to `entries` (absent from an older server). */
    origins?: EntryOrigin[];
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

/** One entry-level change of a journal record; `*Blocked`: the safety scanner blocks that side (never quoted). */
export interface JournalChange {
    before: string | null;
    after: string | null;
    beforeBlocked: boolean;
    afterBlocked: boolean;
}

export interface JournalEntry {
    id: string;
    time: string;
    action: string;
    target: Target;
    author: string;
    before?: string | null;
    after?: string | null;
    /** Absent from an older server: the editor then names the change without quoting it. */
    changes?: JournalChange[];
    /** The record in words (who, when, from what); absent from an older server. */
    summary?: string;
    provenance?: Provenance;
}

export interface MemoryLogResult {
    entries: JournalEntry[];
}

export interface MemoryBufferParams {
    uri: string;
}

/** `myAgent/memory/buffer`: an open memory file's figure as the editor holds it (null when it is not open). */
export interface MemoryBufferResult {
    uri: string;
    version: number | null;
    target: Target;
    used: number;
    limit: number;
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
    /** Parallel to `entries`. */
    origins?: EntryOrigin[];
}

// ---- chat ------------------------------------------------------------------------------------------------

export interface ChatStartResult {
    sessionId: string;
    folder: string;
    memory: boolean;
}

/** An LSP position (0-based line, UTF-16 character). */
export interface Position {
    line: number;
    character: number;
}

export interface Range {
    start: Position;
    end: Position;
}

/** Editor context for one turn: a file, or a selection of it (read by the server, unsaved buffer first). */
export interface ContextRef {
    uri: string;
    range?: Range;
}

export interface ChatSendParams {
    sessionId: string;
    message: string;
    context?: ContextRef[];
}

/** One request's usage; `cachedTokens: null` = the provider reports nothing (n/a, never 0). */
export interface RequestUsage {
    promptTokens: number;
    completionTokens: number;
    cachedTokens: number | null;
}

export type CacheDropReason = 'compaction' | 'resume' | 'model_change' | 'expired' | 'unknown';

/** Why a request read fewer tokens from the prompt cache than the one before it promised. */
export interface CacheDrop {
    reason: CacheDropReason;
    expected: number;
    got: number;
}

/** Session totals (`done.usage`, `chat/send` result); `cacheHitRate: null` when nothing was reported. */
export interface SessionUsage extends RequestUsage {
    requests: number;
    cacheHitRate: number | null;
}

export interface ChatSendResult {
    reply: string;
    usage?: SessionUsage;
}

export type ApprovalKind = 'edit' | 'command' | 'memory';
export type ApprovalReason = 'user' | 'setting' | 'cancelled' | 'error';
export type CompactReason = 'threshold' | 'manual' | 'context_error';
/** Why a turn failed (server/my_agent_core/agent/errors.py `ErrorKind`). */
export const ERROR_KINDS: readonly ErrorKind[] = ['agent', 'config', 'cancelled', 'invalid', 'busy', 'closed', 'timeout', 'connection', 'http', 'stream', 'protocol', 'context_length', 'empty_reply', 'step_limit'];
export type ErrorKind =
    | 'agent'
    | 'config'
    | 'cancelled'
    | 'invalid'
    | 'busy'
    | 'closed'
    | 'timeout'
    | 'connection'
    | 'http'
    | 'stream'
    | 'protocol'
    | 'context_length'
    | 'empty_reply'
    | 'step_limit';

interface EventBase {
    sessionId: string;
}

export type ChatEvent =
    | (EventBase & { kind: 'delta'; text: string })
    | (EventBase & { kind: 'tool_call'; callId: string; name: string; arguments: string })
    | (EventBase & { kind: 'tool_result'; callId: string; name: string; ok: boolean; content: string })
    | (EventBase & { kind: 'memory_changed'; target: Target; action: string; journalId?: string })
    | (EventBase & { kind: 'usage'; cacheDrop?: CacheDrop } & RequestUsage)
    | (EventBase & { kind: 'done'; reply: string; usage?: SessionUsage })
    | (EventBase & { kind: 'error'; message: string; errorKind?: ErrorKind })
    | (EventBase & { kind: 'approval'; callId: string; approvalKind?: ApprovalKind; approved: boolean; reason: ApprovalReason })
    | (EventBase & { kind: 'compacted'; reason: CompactReason; before: number; after: number })
    | (EventBase & { kind: 'recall'; chars: number; items: number })
    | (EventBase & { kind: 'provider_error'; provider: string; message: string })
    | (EventBase & { kind: 'session_error'; message: string })
    | (EventBase & { kind: 'command_output'; callId: string; stream: 'stdout' | 'stderr'; text: string });

/** What a memory write's text may come from (the server's `SourceKind`, docs/trust.md). */
export type ApproveSourceKind =
    | 'file'
    | 'search'
    | 'listing'
    | 'command'
    | 'edit'
    | 'archive'
    | 'tool'
    | 'context_file'
    | 'attachment'
    | 'recall'
    | 'summary'
    | 'unindexed';

/** `copied`: the write shares a run of words with it; `read`: received in the same turn, before the write. */
export type ApproveSourceHow = 'copied' | 'read';

/**
 * One place a memory write's text may come from. Every string is data from the session (a file name, a command
 * line, a query, a quoted line): one bounded line, shown as text, never as markup.
 */
export interface ApproveSource {
    kind: ApproveSourceKind;
    how: ApproveSourceHow;
    /** `README.md:4`, a command line, `'a query'`: the journal's words for it. */
    where: string;
    /** The line a copy shares. */
    quote?: string;
    /** When `where` is a file's place: the file as the session named it, and its line (or span). */
    path?: string;
    line?: number;
    endLine?: number;
}

/**
 * Server -> client request `myAgent/chat/approve`, sent before an edit, a command or a memory write that
 * `myAgent.memory.approval` asks about ("untrusted": one that may carry untrusted text; "ask": every one).
 * `detail`: a unified diff (edit, memory; a memory write's sources come in plain lines before its `---`) or
 * the command line; `uri` + `newText`: the file and its whole proposed text; `cwd`: a command's working folder;
 * `sources`: a memory write's sources as a list (the lines before its diff name the same ones in words).
 */
export interface ApproveParams {
    sessionId: string;
    callId: string;
    kind: ApprovalKind;
    title: string;
    detail: string;
    uri?: string;
    newText?: string;
    cwd?: string;
    sources?: ApproveSource[];
}

/** Anything but `{approved: true}` (false, an error, a cancelled request) is a refusal. */
export interface ApproveResult {
    approved: boolean;
}

export interface SessionParams {
    sessionId: string;
}

export interface SystemPromptResult {
    text: string;
}

/** A context file (AGENTS.md, CLAUDE.md, ...) frozen into a session's system prompt. */
export interface ContextFileInfo {
    name: string;
    path: string;
    chars: number;
    /** Longer than `myAgent.context.maxChars`: the prompt holds its beginning and a note. */
    cut: boolean;
    /** The scanner refused it: the prompt holds a [BLOCKED] line instead of its text. */
    blocked: boolean;
}

/** `myAgent/chat/snapshot`: the entries frozen into a session's system prompt (none when memory is off). */
export interface ChatSnapshotResult {
    sessionId: string;
    folder: string;
    memory: boolean;
    stores: { target: Target; entries: string[] }[];
    /** `[]` when none or memory is off (an older server sends nothing). */
    contextFiles?: ContextFileInfo[];
}

// ---- sessions that last --------------------------------------------------------------------------------------

export interface SessionsParams {
    folder?: string;
}

/** A persisted session (`myAgent/chat/sessions`, newest first); `created`/`updated` in epoch seconds. */
export interface SessionInfo {
    sessionId: string;
    title: string;
    created: number;
    updated: number;
    folder: string;
    messages: number;
    memory: boolean;
    /** Open in this server. */
    active: boolean;
}

export interface SessionsResult {
    sessions: SessionInfo[];
}

export interface ToolCallRecord {
    id: string;
    name: string;
    arguments: string;
}

/** One message of a resumed session's history (the system message is never in it). */
export interface HistoryMessage {
    role: 'user' | 'assistant' | 'tool' | 'system';
    content: string;
    name?: string;
    toolCalls?: ToolCallRecord[];
    toolCallId?: string;
}

export interface ResumeResult {
    sessionId: string;
    folder: string;
    memory: boolean;
    messages: HistoryMessage[];
}

export interface CompactResult {
    compacted: boolean;
    before: number;
    after: number;
}

// ---- context files and import -------------------------------------------------------------------

export interface MemoryImportParams extends FolderParams {
    /** The file to import, relative to the folder. */
    path: string;
    target?: Target;
}

export interface ImportRefusal {
    text: string;
    reason: string;
}

export interface MemoryImportResult {
    message: string;
    added: number;
    duplicates: number;
    /** Items that did not fit the budget: reported, never dropped silently. */
    notFitted: string[];
    refused: ImportRefusal[];
    /** Items skipped because a context file every session reads (`file`, line `fileLine`) already gives them. */
    inContext?: { text: string; line: number; file: string; fileLine: number }[];
    state?: MemoryStateResult;
}

// ---- memory providers: recall -------------------------------------------------------------------------------

export type RecallKind = 'turn' | 'removed' | 'replaced';

export interface RecallItem {
    id: string;
    kind: RecallKind;
    text: string;
    /** As the server sends it (epoch seconds or an ISO date). */
    time: number | string;
    source?: string;
    score: number;
}

export interface RecallSearchParams extends FolderParams {
    query: string;
    limit?: number;
}

/** `provider: null`: the memory provider is off. */
export interface RecallSearchResult {
    provider: string | null;
    items: RecallItem[];
}

export interface RecallItemParams extends FolderParams {
    id: string;
}

export interface RecallGetResult {
    item: RecallItem;
}

// ---- memory for every agent ------------------------------------------------------------------------

/** The built-in `memory` tool's parameters (server/my_agent_core/memory/memory_tool.py), as another agent sends them. */
export interface MemoryToolOperation {
    action: EditAction;
    content?: string;
    old_text?: string;
    new_content?: string;
}

export interface MemoryToolInput extends Partial<MemoryToolOperation> {
    target?: Target;
    operations?: MemoryToolOperation[];
}

export interface MemoryToolParams extends FolderParams {
    arguments: object;
}

export interface MemoryToolResult {
    ok: boolean;
    content: string;
    error?: string;
    state?: MemoryStateResult;
}
