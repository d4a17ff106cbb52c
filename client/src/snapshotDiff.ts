import { sameFolder } from './common/folders';
import { ChatSnapshotResult, StoreState, Target } from './protocol';

/**
 * Live memory versus the frozen snapshot of the current chat session (pure; unit-tested). A session sees the
 * entries frozen at its start: live entries added since are invisible to it until New Chat, and entries removed
 * since are still in its system prompt.
 */

export interface StoreMarks {
    /** Per live entry (same order as `StoreState.entries`): true when the session's snapshot lacks it. */
    fresh: boolean[];
    /** Snapshot entries that are no longer live, in snapshot order. */
    removed: string[];
}

/** Marks for one store; undefined without a snapshot of that store (nothing to compare with). */
export function storeMarks(live: readonly string[], frozen: readonly string[] | undefined): StoreMarks | undefined {
    if (!frozen) {
        return undefined;
    }
    const seen = new Set(frozen);
    const now = new Set(live);
    return {
        fresh: live.map((e) => !seen.has(e)),
        removed: [...new Set(frozen)].filter((e) => !now.has(e)),
    };
}

/** True when the marks would change nothing in the view. */
export function isUnmarked(marks: StoreMarks | undefined): boolean {
    return !marks || (marks.removed.length === 0 && !marks.fresh.some(Boolean));
}

/**
 * The marks of every store of a folder against the current chat session's snapshot. Empty when there is no
 * session, when the session belongs to another folder or runs without memory, or for a store that is unavailable.
 */
export function folderMarks(
    folderUri: string,
    stores: readonly StoreState[],
    snapshot: ChatSnapshotResult | undefined,
): Map<Target, StoreMarks> {
    const out = new Map<Target, StoreMarks>();
    if (!snapshot || !snapshot.memory || !sameFolder(snapshot.folder, folderUri)) {
        return out;
    }
    for (const store of stores) {
        if (store.available === false) {
            continue;
        }
        const frozen = (snapshot.stores ?? []).find((s) => s.target === store.target)?.entries;
        const marks = storeMarks(store.entries, frozen);
        if (marks && !isUnmarked(marks)) {
            out.set(store.target, marks);
        }
    }
    return out;
}
