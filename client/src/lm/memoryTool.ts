import * as vscode from 'vscode';
import { plural } from '../common/plural';
import type { RequestClient } from '../chat/seams';
import { errorMessage, isCancelled, isInvalidParams, isMethodNotFound } from '../common/errors';
import { activeFolder, folderForUri } from '../common/folders';
import { getLog } from '../common/log';
import { MemoryStateResult, MemoryToolParams, Methods } from '../protocol';
import { cutText, fenceFor, MAX_LISTED, MEMORY_TOOL_ID, PlannedCall, PlannedEdit, planCall } from './toolCall';

/**
 * The memory tool as a VS Code language-model tool, so every agent in the editor (Copilot agent mode, other
 * extensions) curates the same MEMORY.md / USER.md as the built-in one. Every call writes, so each one is
 * confirmed with a description of the write; `invoke` forwards to the language server
 * (`myAgent/memory/tool`), which runs the very same tool object and journals the write. The extension never
 * touches the files itself, and every failure becomes a tool result the calling model can read.
 */

export { MEMORY_TOOL_ID } from './toolCall';

export interface ToolServer {
    ready(): Promise<RequestClient | undefined>;
}

export interface StateSink {
    setState(state: MemoryStateResult): void;
}

/** How many confirmed-but-not-yet-run calls remember the folder the user confirmed them for. */
const MAX_PREPARED = 32;

/** Markdown-escapes text that must show as typed (a folder name, a reason). */
export function escapeMarkdown(s: string): string {
    return s.replace(/[\\`*_{}[\]()#+\-.!|<>~]/g, (c) => `\\${c}`).replace(/\r?\n/g, ' ');
}

/** A quoted text as a fenced block that its content cannot close, cut to a bounded length. */
export function quoteBlock(s: string): string {
    const { shown, omitted } = cutText(s);
    const fence = fenceFor(shown);
    const more = omitted
        ? `\n\n${escapeMarkdown(
              plural(omitted, {
                  one: vscode.l10n.t('… and {0} more character.', omitted),
                  other: vscode.l10n.t('… and {0} more characters.', omitted),
              }),
          )}`
        : '';
    return `${fence}text\n${shown}\n${fence}${more}`;
}

function describeEdit(e: PlannedEdit): string {
    const missing = vscode.l10n.t('(missing)');
    switch (e.action) {
        case 'add':
            return `${escapeMarkdown(vscode.l10n.t('Add this entry:'))}\n\n${quoteBlock(e.content ?? missing)}`;
        case 'replace':
            return (
                `${escapeMarkdown(vscode.l10n.t('Replace the whole entry that contains:'))}\n\n${quoteBlock(e.oldText ?? missing)}\n\n` +
                `${escapeMarkdown(vscode.l10n.t('with:'))}\n\n${quoteBlock(e.newContent ?? missing)}`
            );
        case 'remove':
            return `${escapeMarkdown(vscode.l10n.t('Remove the entry that contains:'))}\n\n${quoteBlock(e.oldText ?? missing)}`;
    }
    return escapeMarkdown(vscode.l10n.t('An edit without a valid action (the tool refuses it).'));
}

/** The confirmation's title and Markdown body for a call on `folder` (pure apart from l10n; unit-tested). */
export function confirmation(plan: PlannedCall, folder: vscode.WorkspaceFolder | undefined): { title: string; message: string } {
    const file = plan.file ?? vscode.l10n.t('memory');
    const title =
        plan.edits.length > 1
            ? vscode.l10n.t('Make {0} changes to {1}?', plan.edits.length, file)
            : plan.edits[0]?.action === 'remove'
              ? vscode.l10n.t('Remove an entry from {0}?', file)
              : plan.edits[0]?.action === 'replace'
                ? vscode.l10n.t('Replace an entry of {0}?', file)
                : vscode.l10n.t('Add to {0}?', file);
    const where = folder
        ? vscode.l10n.t('In {0} of the folder {1}:', `.my_agent_core/memory/${file}`, folder.name)
        : vscode.l10n.t('No workspace folder is open: nothing can be written.');
    const parts = [escapeMarkdown(where)];
    if (plan.malformed) {
        parts.push(escapeMarkdown(vscode.l10n.t('The tool will refuse this call: {0}.', plan.malformed)));
    }
    const listed = plan.edits.slice(0, MAX_LISTED);
    listed.forEach((e, i) => parts.push(plan.edits.length > 1 ? `**${i + 1}.** ${describeEdit(e)}` : describeEdit(e)));
    if (plan.edits.length > listed.length) {
        const rest = plan.edits.length - listed.length;
        parts.push(
            escapeMarkdown(
                plural(rest, {
                    one: vscode.l10n.t('… and {0} more edit.', rest),
                    other: vscode.l10n.t('… and {0} more edits.', rest),
                }),
            ),
        );
    }
    if (plan.edits.length > 1) {
        parts.push(escapeMarkdown(vscode.l10n.t('All of them are applied, or none.')));
    }
    parts.push(escapeMarkdown(vscode.l10n.t('The write is journaled: "My Agent: Undo Last Memory Change" reverts it.')));
    return { title, message: parts.join('\n\n') };
}

/** A tool result the calling model reads: the tool's own text, or `Error: ...` as the built-in agent sees it. */
export function toolResult(textValue: string): vscode.LanguageModelToolResult {
    return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(textValue)]);
}

/** The text of a tool result (for logs and tests). */
export function resultText(result: vscode.LanguageModelToolResult): string {
    return result.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : '')).join('');
}

function parseToolResult(raw: unknown): { ok: boolean; text: string; state?: MemoryStateResult } | undefined {
    if (!raw || typeof raw !== 'object') {
        return undefined;
    }
    const r = raw as Record<string, unknown>;
    if (typeof r.ok !== 'boolean' || typeof r.content !== 'string') {
        return undefined;
    }
    const state = r.state && typeof r.state === 'object' && Array.isArray((r.state as MemoryStateResult).stores)
        ? (r.state as MemoryStateResult)
        : undefined;
    const error = typeof r.error === 'string' && r.error ? r.error : r.content;
    return { ok: r.ok, text: r.ok ? r.content : `Error: ${error}`, state };
}

export class MemoryLanguageModelTool implements vscode.LanguageModelTool<unknown> {
    /** The folder each confirmed call was confirmed for (the active editor may change before it runs). */
    private readonly prepared = new Map<string, string>();

    constructor(
        private readonly server: ToolServer,
        private readonly memory: StateSink,
    ) {}

    private key(input: unknown): string {
        try {
            return JSON.stringify(input) ?? '';
        } catch {
            return '';
        }
    }

    prepareInvocation(options: vscode.LanguageModelToolInvocationPrepareOptions<unknown>): vscode.PreparedToolInvocation {
        const folder = activeFolder();
        const plan = planCall(options.input);
        if (folder) {
            const key = this.key(options.input);
            this.prepared.delete(key);
            this.prepared.set(key, folder.uri.toString());
            while (this.prepared.size > MAX_PREPARED) {
                this.prepared.delete(this.prepared.keys().next().value as string);
            }
        }
        const { title, message } = confirmation(plan, folder);
        return {
            invocationMessage: vscode.l10n.t('Writing {0}…', plan.file ?? vscode.l10n.t('memory')),
            confirmationMessages: { title, message: new vscode.MarkdownString(message) },
        };
    }

    async invoke(
        options: vscode.LanguageModelToolInvocationOptions<unknown>,
        token: vscode.CancellationToken,
    ): Promise<vscode.LanguageModelToolResult> {
        const input = options.input;
        const key = this.key(input);
        const confirmedFor = this.prepared.get(key);
        this.prepared.delete(key);
        const folder = confirmedFor ? folderForUri(confirmedFor) : activeFolder();
        if (!vscode.workspace.isTrusted) {
            return toolResult(
                `Error: ${vscode.l10n.t('Memory is off in Restricted Mode: this workspace is not trusted, so nothing was written.')}`,
            );
        }
        if (!folder) {
            return toolResult(
                `Error: ${confirmedFor
                    ? vscode.l10n.t('The folder this write was confirmed for is no longer open, so nothing was written.')
                    : vscode.l10n.t('No workspace folder is open, so there is no memory to write.')}`,
            );
        }
        if (!input || typeof input !== 'object' || Array.isArray(input)) {
            return toolResult(
                'Error: the input must be a JSON object like {"target": "memory", "action": "add", "content": "..."}.',
            );
        }
        const client = await this.server.ready();
        if (!client) {
            return toolResult(`Error: ${vscode.l10n.t('The My Agent language server is not running, so nothing was written.')}`);
        }
        if (token.isCancellationRequested) {
            throw new vscode.CancellationError();
        }
        const params: MemoryToolParams = { folder: folder.uri.toString(), arguments: input };
        try {
            const raw = await client.sendRequest<unknown>(Methods.memoryTool, params, token);
            const r = parseToolResult(raw);
            if (!r) {
                getLog().warn(`memory/tool: a malformed answer ${JSON.stringify(raw)?.slice(0, 200)}`);
                return toolResult(`Error: ${vscode.l10n.t('The server gave no usable answer; memory may be unchanged. Check the Memory view.')}`);
            }
            if (r.state) {
                this.memory.setState(r.state);
            }
            return toolResult(r.text);
        } catch (e) {
            if (token.isCancellationRequested || isCancelled(e)) {
                throw new vscode.CancellationError();
            }
            getLog().warn(`memory/tool: ${errorMessage(e)}`);
            if (isMethodNotFound(e)) {
                return toolResult(`Error: ${vscode.l10n.t('This version of the My Agent server cannot run the memory tool for other agents.')}`);
            }
            if (isInvalidParams(e)) {
                return toolResult(`Error: ${vscode.l10n.t('Memory is not available for this folder: {0}', errorMessage(e))}`);
            }
            return toolResult(`Error: ${errorMessage(e)}`);
        }
    }
}

/** Registers the tool (package.json `languageModelTools` declares it). */
export function registerMemoryTool(server: ToolServer, memory: StateSink): vscode.Disposable {
    return vscode.lm.registerTool(MEMORY_TOOL_ID, new MemoryLanguageModelTool(server, memory));
}
