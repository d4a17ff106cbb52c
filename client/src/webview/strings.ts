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
    // a memory approval's sources
    sourcesWhy: string;
    sourcesNote: string;
    srcCopied: string;
    srcCopiedQuote: string;
    srcRead: string;
    srcMore: string;
    srcSearch: string;
    srcListing: string;
    srcCommand: string;
    srcEdit: string;
    srcArchive: string;
    srcTool: string;
    srcContextFile: string;
    srcAttachment: string;
    srcRecall: string;
    srcSummary: string;
    srcUnindexed: string;
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
    // tool rows: one-line summaries and what happened
    toolWaiting: string;
    toolDenied: string;
    toolStopped: string;
    toolTimedOut: string;
    sumRead: string;
    sumReadLines: string;
    sumList: string;
    sumListCount: string;
    sumSearch: string;
    sumSearchCount: string;
    filesOne: string;
    filesMany: string;
    matchesNone: string;
    matchesOne: string;
    matchesMany: string;
    sumEdited: string;
    sumEdit: string;
    sumWrote: string;
    sumWrite: string;
    sumRan: string;
    sumRanExit: string;
    sumRanSignal: string;
    sumRunning: string;
    sumRun: string;
    sumMemoryAdd: string;
    sumMemoryReplace: string;
    sumMemoryRemove: string;
    sumMemoryBatch: string;
    sumMemory: string;
    sumMemorySearch: string;
    sumTool: string;
    workspaceRoot: string;
    seconds: string;
    outputAria: string;
    noOutput: string;
    changedLine: string;
    changedLines: string;
    openChange: string;
    openChangeAria: string;
    openPathTitle: string;
    // errors with a way out
    actionRetry: string;
    actionSetApiKey: string;
    actionOpenSettings: string;
    actionShowOutput: string;
    // before the first message
    setupTitle: string;
    setupIntro: string;
    setupModel: string;
    setupBaseUrl: string;
    setupKey: string;
    setupNotSet: string;
    setupDefaultUrl: string;
    setupFromSetting: string;
    setupFromEnv: string;
    setupKeySecret: string;
    setupKeyEnv: string;
    setupKeyNone: string;
    setupLocalTitle: string;
    setupLocalIntro: string;
    setupLocalRow: string;
    setupLocalModelAny: string;
    setupReady: string;
    // Restricted Mode
    restrictedBanner: string;
    manageTrust: string;
    memoryOnTip: string;
    memoryOffTip: string;
    emptyRestricted: string;
}

/** "{0} in {1}"-style templates, filled with already-escaped values. */
export function fmt(template: string, ...args: string[]): string {
    return template.replace(/\{(\d+)\}/g, (m, i: string) => args[Number(i)] ?? m);
}

/** Plain text with `inline code` shown as code (titles, errors, notices): everything else escaped. */
export function inlineCode(text: string): string {
    return text
        .split(/(`[^`\n]+`)/g)
        .map((piece, i) => (i % 2 === 1 ? `<code>${escapeHtml(piece.slice(1, -1))}</code>` : escapeHtml(piece)))
        .join('');
}

export function escapeHtml(text: string): string {
    return text
        .replace(/&/g, '&amp;')
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .replace(/"/g, '&quot;')
        .replace(/'/g, '&#39;');
}
