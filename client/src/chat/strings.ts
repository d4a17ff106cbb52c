import * as vscode from 'vscode';
import type { UiStrings } from '../webview/render';

/** Every string the chat webview shows, localized here in the extension host and posted to the webview once. */

export function uiStrings(): UiStrings {
    const t = vscode.l10n.t;
    return {
        newChat: t('New chat'),
        newChatAria: t('Start a new chat with a fresh memory snapshot'),
        send: t('Send'),
        sendAria: t('Send message (Enter)'),
        stop: t('Stop'),
        stopAria: t('Stop the running reply'),
        inputPlaceholder: t('Ask the agent… (Enter to send, Shift+Enter for a new line)'),
        inputAria: t('Message to the agent'),
        transcriptAria: t('Chat transcript'),
        you: t('You'),
        assistant: t('Agent'),
        toolCall: t('Tool: {0}', '{0}'),
        toolArguments: t('Arguments'),
        toolResult: t('Result'),
        toolOk: t('done'),
        toolFailed: t('failed'),
        toolRunning: t('running…'),
        memoryChanged: t('The agent changed memory: {0} in {1}.', '{0}', '{1}'),
        undo: t('Undo'),
        undoAria: t('Undo this memory change'),
        undone: t('Undone: {0}', '{0}'),
        stopped: t('Stopped.'),
        thinking: t('Thinking…'),
        errorPrefix: t('Error: {0}', '{0}'),
        cacheHitRate: t('Prompt cache hits: {0}', '{0}'),
        memoryOn: t('memory on'),
        memoryOff: t('memory off'),
        noSession: t('No chat session yet: send a message or press New chat.'),
        emptyTranscript: t('Ask the agent anything about this workspace. It remembers what matters in MEMORY.md and USER.md.'),
        showSnapshot: t('Snapshot'),
        showSnapshotAria: t('Show the frozen memory snapshot of this session'),
    };
}
