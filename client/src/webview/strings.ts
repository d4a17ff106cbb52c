/** The strings the webview shows, localized by the extension host (vscode.l10n) and posted once. */
export interface UiStrings {
    newChat: string;
    newChatAria: string;
    send: string;
    sendAria: string;
    stop: string;
    stopAria: string;
    inputPlaceholder: string;
    inputAria: string;
    transcriptAria: string;
    you: string;
    assistant: string;
    toolCall: string;
    toolArguments: string;
    toolResult: string;
    toolOk: string;
    toolFailed: string;
    toolRunning: string;
    memoryChanged: string;
    undo: string;
    undoAria: string;
    undone: string;
    stopped: string;
    thinking: string;
    errorPrefix: string;
    cacheHitRate: string;
    cacheTokens: string;
    cacheNotReported: string;
    cacheDrop: string;
    dropCompaction: string;
    dropResume: string;
    dropModelChange: string;
    dropExpired: string;
    dropUnknown: string;
    memoryOn: string;
    memoryOff: string;
    noSession: string;
    emptyTranscript: string;
    showSnapshot: string;
    showSnapshotAria: string;
    // approvals
    approve: string;
    approveAria: string;
    deny: string;
    denyAria: string;
    openDiff: string;
    openDiffAria: string;
    diffInline: string;
    approvalEdit: string;
    approvalCommand: string;
    approvalMemory: string;
    approvalIn: string;
    diffSummary: string;
    diffMore: string;
    statusPending: string;
    statusApproved: string;
    statusDenied: string;
    statusCancelled: string;
    statusBySetting: string;
    statusError: string;
    kindEdit: string;
    kindCommand: string;
    kindMemory: string;
    kindAction: string;
    pendingOne: string;
    pendingMany: string;
    showPending: string;
    // editor context
    attach: string;
    attachAria: string;
    attachments: string;
    removeChip: string;
    attached: string;
    // compaction and sessions
    compact: string;
    compactAria: string;
    compacted: string;
    compactThreshold: string;
    compactManual: string;
    compactContextError: string;
    history: string;
    historyAria: string;
    historyTitle: string;
    historyClose: string;
    historyEmpty: string;
    historyLoading: string;
    historyOpenAria: string;
    historyDelete: string;
    historyDeleteAria: string;
    historyMessages: string;
    historyCurrent: string;
    historyError: string;
    noteRecalled: string;
    noteOther: string;
    // recall
    recallOne: string;
    recallMany: string;
    providerError: string;
}

/** "{0} in {1}"-style templates, filled with already-escaped values. */
export function fmt(template: string, ...args: string[]): string {
    return template.replace(/\{(\d+)\}/g, (m, i: string) => args[Number(i)] ?? m);
}

export function escapeHtml(text: string): string {
    return text
        .replace(/&/g, '&amp;')
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .replace(/"/g, '&quot;')
        .replace(/'/g, '&#39;');
}
