/**
 * The messages between the chat webview and the extension host. The webview renders untrusted text, so the
 * host trusts nothing it sends: every message is validated here (pure; shared with the webview bundle).
 */
import type { ChatState } from '../chatModel';
import type { UiStrings } from './strings';

/** What the webview may ask of the host. */
export type WebviewMessage =
    | { type: 'ready' }
    | { type: 'send'; text: string }
    | { type: 'stop' }
    | { type: 'newChat' }
    | { type: 'showSnapshot' }
    | { type: 'undo'; journalId?: string }
    | { type: 'approve'; callId: string; approved: boolean }
    | { type: 'openDiff'; callId: string }
    | { type: 'attach' }
    | { type: 'detach'; id: string }
    | { type: 'compact' }
    | { type: 'showHistory' }
    | { type: 'closeHistory' }
    | { type: 'resume'; sessionId: string }
    | { type: 'deleteSession'; sessionId: string }
    | { type: 'draft'; text: string }
    | { type: 'retry'; turnId: number }
    | { type: 'action'; action: HostAction }
    | { type: 'openChange'; callId: string }
    | { type: 'openPath'; path: string; line?: number; endLine?: number }
    | { type: 'focus'; focused: boolean };

/** Buttons that run a host command (an error's way out, the setup state, the Restricted Mode banner). */
export type HostAction = 'setApiKey' | 'openSettings' | 'showOutput' | 'manageTrust';
export const HOST_ACTIONS: readonly HostAction[] = ['setApiKey', 'openSettings', 'showOutput', 'manageTrust'];

/** What the host posts to the webview. */
export type HostMessage =
    | { type: 'init'; strings: UiStrings; draft: string }
    | { type: 'state'; state: ChatState; busy: boolean }
    | { type: 'focusInput' }
    | { type: 'restoreDraft'; text: string };

/** Ids from the webview (call, session, chip) are echoed from state the host posted: short, plain strings. */
const MAX_ID = 2000;
/** A path from a link in the agent's text (the host resolves it inside a workspace folder). */
const MAX_PATH = 1000;

function line(v: unknown): number | undefined {
    return typeof v === 'number' && Number.isInteger(v) && v > 0 && v < 10_000_000 ? v : undefined;
}
/** A draft larger than this is not persisted (the textarea keeps it; nothing is thrown away). */
export const MAX_DRAFT = 1_000_000;

function id(v: unknown): string | undefined {
    return typeof v === 'string' && v !== '' && v.length <= MAX_ID ? v : undefined;
}

export function parseWebviewMessage(raw: unknown): WebviewMessage | undefined {
    if (!raw || typeof raw !== 'object') {
        return undefined;
    }
    const m = raw as Record<string, unknown>;
    switch (m.type) {
        case 'ready':
        case 'stop':
        case 'newChat':
        case 'showSnapshot':
        case 'attach':
        case 'compact':
        case 'showHistory':
        case 'closeHistory':
            return { type: m.type };
        case 'send':
            return typeof m.text === 'string' && m.text.trim() !== '' ? { type: 'send', text: m.text } : undefined;
        case 'undo':
            return { type: 'undo', journalId: typeof m.journalId === 'string' ? m.journalId : undefined };
        case 'approve': {
            const callId = id(m.callId);
            return callId && typeof m.approved === 'boolean' ? { type: 'approve', callId, approved: m.approved } : undefined;
        }
        case 'openDiff': {
            const callId = id(m.callId);
            return callId ? { type: 'openDiff', callId } : undefined;
        }
        case 'detach': {
            const chip = id(m.id);
            return chip ? { type: 'detach', id: chip } : undefined;
        }
        case 'resume':
        case 'deleteSession': {
            const sessionId = id(m.sessionId);
            return sessionId ? { type: m.type, sessionId } : undefined;
        }
        case 'draft':
            return typeof m.text === 'string' && m.text.length <= MAX_DRAFT ? { type: 'draft', text: m.text } : undefined;
        case 'retry': {
            const turnId = line(m.turnId);
            return turnId ? { type: 'retry', turnId } : undefined;
        }
        case 'action':
            return typeof m.action === 'string' && (HOST_ACTIONS as readonly string[]).includes(m.action)
                ? { type: 'action', action: m.action as HostAction }
                : undefined;
        case 'focus':
            return typeof m.focused === 'boolean' ? { type: 'focus', focused: m.focused } : undefined;
        case 'openChange': {
            const callId = id(m.callId);
            return callId ? { type: 'openChange', callId } : undefined;
        }
        case 'openPath': {
            if (typeof m.path !== 'string' || m.path === '' || m.path.length > MAX_PATH || /[\0\n\r]/.test(m.path)) {
                return undefined;
            }
            const at = line(m.line);
            const end = at ? line(m.endLine) : undefined;
            return { type: 'openPath', path: m.path, ...(at ? { line: at } : {}), ...(end ? { endLine: end } : {}) };
        }
    }
    return undefined;
}
