import type { ChatTurn } from '../chatModel';

/**
 * Renders each turn once per distinct content. The host posts the whole state on every streamed delta; with
 * a long (resumed) transcript, re-rendering every turn's Markdown and sanitizing it each time would cost
 * O(transcript) of the expensive work per delta. A turn's JSON is its key: unchanged turns are skipped.
 */
export class TurnRenderCache {
    private readonly entries = new Map<number, { key: string; html: string }>();

    constructor(private readonly renderTurn: (turn: ChatTurn) => string) {}

    /** The turn's HTML, and whether it differs from what was returned for this turn id last time. */
    render(turn: ChatTurn): { html: string; changed: boolean } {
        const key = JSON.stringify(turn);
        const hit = this.entries.get(turn.id);
        if (hit && hit.key === key) {
            return { html: hit.html, changed: false };
        }
        const html = this.renderTurn(turn);
        this.entries.set(turn.id, { key, html });
        return { html, changed: !hit || hit.html !== html };
    }

    /** Forgets turns that are no longer in the transcript. */
    retain(ids: ReadonlySet<number>): void {
        for (const id of [...this.entries.keys()]) {
            if (!ids.has(id)) {
                this.entries.delete(id);
            }
        }
    }

    get size(): number {
        return this.entries.size;
    }
}
