/**
 * The messages between the chat webview and the extension host. The webview renders untrusted text, so the
 * host trusts nothing it sends: every message is validated here (pure; shared with the webview bundle).
 */

/** What the webview may ask of the host. */
export type WebviewMessage =
    | { type: 'ready' }
    | { type: 'send'; text: string }
    | { type: 'stop' }
    | { type: 'newChat' }
    | { type: 'showSnapshot' }
    | { type: 'undo'; journalId?: string };

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
            return { type: m.type };
        case 'send':
            return typeof m.text === 'string' && m.text.trim() !== '' ? { type: 'send', text: m.text } : undefined;
        case 'undo':
            return { type: 'undo', journalId: typeof m.journalId === 'string' ? m.journalId : undefined };
    }
    return undefined;
}
