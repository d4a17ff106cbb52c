/**
 * Why a turn failed, in the user's terms, and what they can do about it (Retry, Set API Key, Open Settings,
 * Show Output). Pure: the reducer and the webview share it, and the unit tests drive it directly.
 */

export type FailureKind = 'noModel' | 'noKey' | 'auth' | 'unreachable' | 'badModel' | 'server' | 'other';

/** The actions an error offers; each is a button in the turn. */
export type FailureAction = 'retry' | 'setApiKey' | 'openSettings' | 'showOutput';

/** JSON-RPC codes of docs/protocol.md that say what failed. */
const NO_MODEL = -32001;

/**
 * Classifies a failure from the JSON-RPC code (when the request failed), the agent's `errorKind` (from the
 * `error` event) and the message, which names the cause ("HTTP 401", "Cannot reach the model endpoint").
 */
export function classifyFailure(message: string, code?: number, errorKind?: string): FailureKind {
    const text = message.toLowerCase();
    if (/no model configured/.test(text)) {
        return 'noModel';
    }
    if (/no model endpoint configured|set openai_api_key/.test(text)) {
        return 'noKey';
    }
    if (code === NO_MODEL || errorKind === 'config') {
        return 'noModel';
    }
    if (/\bhttp (401|403)\b|invalid[ _-]?api[ _-]?key|incorrect api key|unauthori[sz]ed|authentication/.test(text)) {
        return 'auth';
    }
    if (errorKind === 'connection' || errorKind === 'timeout' || /cannot reach the model endpoint|model endpoint timed out|econnrefused|connection refused/.test(text)) {
        return 'unreachable';
    }
    if (/\bhttp 404\b/.test(text) && /model/.test(text)) {
        return 'badModel';
    }
    if (/server is not running/.test(text)) {
        return 'server';
    }
    return 'other';
}

/** What each kind of failure offers, most useful first. */
export function failureActions(kind: FailureKind): FailureAction[] {
    switch (kind) {
        case 'noModel':
        case 'badModel':
            return ['openSettings', 'retry', 'showOutput'];
        case 'noKey':
            return ['setApiKey', 'openSettings', 'retry'];
        case 'auth':
            return ['setApiKey', 'retry', 'showOutput'];
        case 'unreachable':
            return ['retry', 'openSettings', 'showOutput'];
        case 'server':
            return ['showOutput', 'retry'];
        case 'other':
            return ['retry', 'showOutput'];
    }
}
