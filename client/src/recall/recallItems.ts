/**
 * Recall results as the view shows them: validated (the archive holds past turns and removed
 * entries, i.e. text anyone may have written) and turned into labels and a document. Pure: no VS Code.
 */
import type { RecallItem, RecallKind, RecallSearchResult } from '../protocol';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** Longest id we keep (ids go back to the server in get/delete). */
export const MAX_RECALL_ID = 200;

/** How many results a search asks for. */
export const RECALL_LIMIT = 25;

const KINDS: readonly RecallKind[] = ['turn', 'removed', 'replaced'];

/** One item, or undefined when it is not one we can show and address. */
export function parseRecallItem(raw: unknown): RecallItem | undefined {
    if (!isObj(raw)) {
        return undefined;
    }
    const id = typeof raw.id === 'number' && Number.isFinite(raw.id) ? String(raw.id) : raw.id;
    if (typeof id !== 'string' || id === '' || id.length > MAX_RECALL_ID || typeof raw.text !== 'string') {
        return undefined;
    }
    const kind = KINDS.includes(raw.kind as RecallKind) ? (raw.kind as RecallKind) : 'turn';
    const time = typeof raw.time === 'number' || typeof raw.time === 'string' ? raw.time : 0;
    const item: RecallItem = {
        id,
        kind,
        text: raw.text,
        time,
        score: typeof raw.score === 'number' && Number.isFinite(raw.score) ? raw.score : 0,
    };
    if (typeof raw.source === 'string' && raw.source !== '') {
        item.source = raw.source;
    }
    return item;
}

/** A search result; `provider: null` when the memory provider is off. Malformed items are dropped. */
export function parseRecallSearch(raw: unknown): RecallSearchResult | undefined {
    if (!isObj(raw) || !('provider' in raw)) {
        return undefined;
    }
    const provider = typeof raw.provider === 'string' && raw.provider !== '' ? raw.provider : null;
    const items = Array.isArray(raw.items) ? raw.items.map(parseRecallItem).filter((i): i is RecallItem => !!i) : [];
    return { provider, items: provider ? items : [] };
}

/** The item's time as a Date (epoch seconds, epoch milliseconds or an ISO string), or undefined. */
export function recallDate(time: number | string): Date | undefined {
    if (typeof time === 'number') {
        if (!Number.isFinite(time) || time <= 0) {
            return undefined;
        }
        return new Date(time < 1e11 ? time * 1000 : time);
    }
    const d = new Date(time);
    return Number.isNaN(d.getTime()) ? undefined : d;
}

/** The first non-empty line, cut to `max` characters: what a tree row shows. */
export function firstLine(text: string, max = 80): string {
    const line = text.split(/\r?\n/).find((l) => l.trim() !== '')?.trim() ?? '';
    return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export interface RecallLabels {
    kind: string;
    heading: string;
}

/** The read-only document of an item: a header naming what it is, then its text exactly as archived. */
export function recallDocument(item: RecallItem, labels: RecallLabels, when: string): string {
    const meta = [when, item.source].filter((x) => !!x).join(' · ');
    return `# ${labels.heading}\n\n${labels.kind}${meta ? ` · ${meta}` : ''}\n\n${item.text}\n`;
}

/** Longest tab title of an opened item (code points). */
export const TITLE_MAX = 48;

/**
 * The tab title of an opened item: its first line, bounded, with no path separators or control characters (it
 * is the document's file name), else `fallback` (e.g. "Recall: 2026-12-01 past chat turn").
 */
export function recallTitle(item: RecallItem, fallback: string): string {
    // eslint-disable-next-line no-control-regex
    const clean = (s: string): string => s.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069/\\]/g, ' ').replace(/\s+/g, ' ').trim();
    const line = clean(item.text.split(/\r?\n/).find((l) => clean(l) !== '') ?? '');
    const points = Array.from(line);
    const title = points.length > TITLE_MAX ? `${points.slice(0, TITLE_MAX - 1).join('').trimEnd()}…` : line;
    // A title of dots only would be read as a path step.
    return /^[.\s]*$/.test(title) ? clean(fallback) : title;
}

/** The item's date as YYYY-MM-DD (for a title), or ''. */
export function isoDay(time: number | string): string {
    const d = recallDate(time);
    return d ? d.toISOString().slice(0, 10) : '';
}
