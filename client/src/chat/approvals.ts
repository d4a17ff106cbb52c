import { parseApproveParams } from '../chatEvents';
import type { ApprovalStatus } from '../chatModel';
import type { ApproveParams, ApproveResult } from '../protocol';
import { parseApproveSources } from '../webview/memorySources';

/**
 * Answers the server's `myAgent/chat/approve` requests: each one becomes a card in the chat and waits for
 * the user's Approve / Deny. A cancelled request (the turn was stopped), a request for a session the chat
 * is not showing, a malformed or duplicate one, and a server that went away all answer "not approved":
 * nothing changes without the user. A memory write's `sources` are kept only when every one is well formed
 * (else the card names them with the words of its `detail`, as for a server that sends no list).
 */

/** The part of a CancellationToken the broker needs (vscode-jsonrpc passes one per incoming request). */
export interface CancelToken {
    readonly isCancellationRequested: boolean;
    onCancellationRequested(listener: () => void): { dispose(): void };
}

export interface ApprovalUi {
    /** The session the chat shows: only its requests can be answered by the user. */
    currentSession(): string | undefined;
    /** Put the card in the transcript and make sure the user can see it. */
    show(request: ApproveParams): void;
    /** The card's outcome. */
    settle(callId: string, status: Exclude<ApprovalStatus, 'pending'>): void;
}

export interface WarnLog {
    warn(message: string): void;
}

interface Waiter {
    resolve: (result: ApproveResult) => void;
    subscription?: { dispose(): void };
}

export class ApprovalBroker {
    private readonly waiting = new Map<string, Waiter>();

    constructor(
        private readonly ui: ApprovalUi,
        private readonly log: WarnLog,
    ) {}

    /** Call ids still waiting for the user. */
    get pending(): string[] {
        return [...this.waiting.keys()];
    }

    /** The handler of `myAgent/chat/approve`: resolves when the user decides or the request is cancelled. */
    handle(raw: unknown, token?: CancelToken): Promise<ApproveResult> {
        const request = parseApproveParams(raw);
        if (!request) {
            this.log.warn('chat/approve: malformed request refused');
            return Promise.resolve({ approved: false });
        }
        if (request.sessionId !== this.ui.currentSession()) {
            this.log.warn(`chat/approve: session ${request.sessionId} is not the one the chat shows; refused`);
            return Promise.resolve({ approved: false });
        }
        if (this.waiting.has(request.callId)) {
            this.log.warn(`chat/approve: a second request for call ${request.callId} refused`);
            return Promise.resolve({ approved: false });
        }
        if (token?.isCancellationRequested) {
            return Promise.resolve({ approved: false });
        }
        const listed = request.kind === 'memory' ? (raw as { sources?: unknown }).sources : undefined;
        if (listed !== undefined) {
            const sources = parseApproveSources(listed);
            if (sources) {
                request.sources = sources;
            } else {
                this.log.warn('chat/approve: malformed sources ignored (the card shows the words of the detail)');
            }
        }
        return new Promise<ApproveResult>((resolve) => {
            const waiter: Waiter = { resolve };
            this.waiting.set(request.callId, waiter);
            waiter.subscription = token?.onCancellationRequested(() => this.finish(request.callId, 'cancelled'));
            this.ui.show(request);
        });
    }

    /** The user's answer from a card; false when that card no longer waits (answered, cancelled). */
    decide(callId: string, approved: boolean): boolean {
        return this.finish(callId, approved ? 'approved' : 'denied');
    }

    /** Every waiting card is cancelled (the turn stopped, the session changed, the server went away). */
    cancelAll(): void {
        for (const callId of [...this.waiting.keys()]) {
            this.finish(callId, 'cancelled');
        }
    }

    private finish(callId: string, status: Exclude<ApprovalStatus, 'pending'>): boolean {
        const waiter = this.waiting.get(callId);
        if (!waiter) {
            return false;
        }
        this.waiting.delete(callId);
        waiter.subscription?.dispose();
        this.ui.settle(callId, status);
        waiter.resolve({ approved: status === 'approved' });
        return true;
    }
}
