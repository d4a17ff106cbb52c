/**
 * Our entry in a workspace's `.vscode/mcp.json`: planned as an edit of the file's own text with jsonc-parser,
 * so comments, formatting and every other server's entry survive. Pure (no VS Code, no file system).
 */
import { applyEdits, FormattingOptions, modify, parse, ParseError, printParseErrorCode } from 'jsonc-parser';

/** The name our server gets under `servers` (the one docs/mcp.md uses). */
export const MCP_SERVER_NAME = 'my-agent-memory';

export interface McpServerEntry {
    type: 'stdio';
    command: string;
    args: string[];
}

export type McpPlan =
    /** Our entry is there with the same command and arguments: nothing to write. */
    | { kind: 'unchanged' }
    /** `text` is the new file: our entry added (the file or `servers` may have been created). */
    | { kind: 'add'; text: string }
    /** Our entry is there with another command: `text` replaces it, if the user agrees. */
    | { kind: 'conflict'; text: string; existing: unknown }
    /** The file cannot be edited safely (not JSON with comments, or not the shape VS Code reads). */
    | { kind: 'invalid'; reason: string };

export interface Budgets {
    memory: number;
    user: number;
}

/** The memory folder of whatever folder VS Code starts the server for: no machine's path in it. */
export const WORKSPACE_MEMORY_DIR = '${workspaceFolder}/.my_agent_core/memory';

/** The command a teammate can have too: the `my-agent` console script of an installed my-agent-core, on PATH. */
export const PORTABLE_COMMAND = 'my-agent';

function budgetArgs(limits?: Budgets): string[] {
    return limits && (limits.memory !== 2200 || limits.user !== 1375)
        ? ['--memory-limit', String(limits.memory), '--user-limit', String(limits.user)]
        : [];
}

/** `["-m", "my_agent_core", "mcp", "--dir", <memory folder>]`, plus the budgets when they are not the defaults. */
export function mcpEntry(python: string, memoryDir: string, limits?: Budgets): McpServerEntry {
    return { type: 'stdio', command: python, args: ['-m', 'my_agent_core', 'mcp', '--dir', memoryDir, ...budgetArgs(limits)] };
}

/**
 * The entry a shared `.vscode/mcp.json` gets: `my-agent mcp --dir ${workspaceFolder}/.my_agent_core/memory`. No
 * path of this machine: a teammate with my-agent-core installed (the `my-agent` command on PATH) runs it as is.
 */
export function portableEntry(limits?: Budgets): McpServerEntry {
    return { type: 'stdio', command: PORTABLE_COMMAND, args: ['mcp', '--dir', WORKSPACE_MEMORY_DIR, ...budgetArgs(limits)] };
}

/**
 * The entry the user's own MCP configuration gets: this machine's interpreter (the one the extension runs its
 * server with) and the memory of whichever folder is open (`${workspaceFolder}`).
 */
export function userEntry(python: string, limits?: Budgets): McpServerEntry {
    return mcpEntry(python, WORKSPACE_MEMORY_DIR, limits);
}

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Indentation and line ends as the file already uses them (two spaces and \n for a new file). */
export function detectFormatting(text: string): FormattingOptions {
    const eol = text.includes('\r\n') ? '\r\n' : '\n';
    const indent = /^([ \t]+)\S/m.exec(text)?.[1];
    if (indent?.startsWith('\t')) {
        return { insertSpaces: false, tabSize: 4, eol };
    }
    return { insertSpaces: true, tabSize: indent ? Math.min(indent.length, 8) : 2, eol };
}

function sameEntry(existing: unknown, entry: McpServerEntry): boolean {
    if (!isObj(existing)) {
        return false;
    }
    const type = existing.type ?? 'stdio';
    return (
        type === entry.type &&
        existing.command === entry.command &&
        Array.isArray(existing.args) &&
        existing.args.length === entry.args.length &&
        existing.args.every((a, i) => a === entry.args[i])
    );
}

/** What adding `entry` to the file `text` (undefined: no file yet) takes. */
export function planMcpConfig(text: string | undefined, entry: McpServerEntry, name = MCP_SERVER_NAME): McpPlan {
    const source = text ?? '';
    const formatting = detectFormatting(source);
    if (source.trim() === '') {
        const fresh = JSON.stringify({ servers: { [name]: entry } }, null, formatting.insertSpaces ? formatting.tabSize : '\t');
        return { kind: 'add', text: fresh.replace(/\n/g, formatting.eol ?? '\n') + (formatting.eol ?? '\n') };
    }
    const errors: ParseError[] = [];
    const root: unknown = parse(source, errors, { allowTrailingComma: true, disallowComments: false });
    if (errors.length) {
        const first = errors[0];
        return { kind: 'invalid', reason: `${printParseErrorCode(first.error)} at offset ${first.offset}` };
    }
    if (!isObj(root)) {
        return { kind: 'invalid', reason: 'the file is not a JSON object' };
    }
    const servers = root.servers;
    if (servers !== undefined && !isObj(servers)) {
        return { kind: 'invalid', reason: '"servers" is not an object' };
    }
    const existing = servers?.[name];
    if (existing !== undefined && sameEntry(existing, entry)) {
        return { kind: 'unchanged' };
    }
    // A new entry goes first in `servers`: jsonc-parser then formats only the inserted text, so every other
    // entry keeps its exact bytes (inserted last, the formatter also re-lays out the previous entry).
    const edits = modify(source, ['servers', name], entry, { formattingOptions: formatting, getInsertionIndex: () => 0 });
    const next = applyEdits(source, edits);
    return existing === undefined ? { kind: 'add', text: next } : { kind: 'conflict', text: next, existing };
}

/** What adding `entry` to the `mcp` setting (VS Code 1.100-1.101 kept user MCP servers in settings.json) takes. */
export type McpSettingPlan =
    | { kind: 'unchanged' }
    | { kind: 'add' | 'conflict'; value: Record<string, unknown>; existing?: unknown }
    | { kind: 'invalid'; reason: string };

export function planMcpSetting(current: unknown, entry: McpServerEntry, name = MCP_SERVER_NAME): McpSettingPlan {
    if (current !== undefined && current !== null && !isObj(current)) {
        return { kind: 'invalid', reason: 'the "mcp" setting is not an object' };
    }
    const mcp = isObj(current) ? current : {};
    const servers = mcp.servers;
    if (servers !== undefined && !isObj(servers)) {
        return { kind: 'invalid', reason: '"mcp.servers" is not an object' };
    }
    const existing = servers?.[name];
    if (existing !== undefined && sameEntry(existing, entry)) {
        return { kind: 'unchanged' };
    }
    const value = { ...mcp, servers: { ...(servers ?? {}), [name]: entry } };
    return existing === undefined ? { kind: 'add', value } : { kind: 'conflict', value, existing };
}
