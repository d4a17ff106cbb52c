/**
 * Where a memory write's text may come from, as the approval card shows it: a short "why", the sources as a
 * list (a file's place links to the file at its line, a command or a query is inline code, a copied line is
 * quoted as plain text), then the diff. The server lists the sources on the request (`sources`); its `detail`
 * names them in words before the diff (for other clients), so the card takes the diff from after that block,
 * and with no list (a kept card, a server that sends only the words) shows the block's lines as plain text.
 * Everything here is data from the session: escaped, never markup, never a link but to a workspace path.
 * Pure (no DOM, no VS Code): shared by the extension host, the webview bundle and the unit tests.
 */
import type { ApproveSource, ApproveSourceHow, ApproveSourceKind } from '../protocol';
import { asPath, pathHref } from './pathLinks';
import { escapeHtml, fmt, UiStrings } from './strings';

export const SOURCE_KINDS: readonly ApproveSourceKind[] = [
    'file',
    'search',
    'listing',
    'command',
    'edit',
    'archive',
    'tool',
    'context_file',
    'attachment',
    'recall',
    'summary',
    'unindexed',
];
const HOWS: readonly ApproveSourceHow[] = ['copied', 'read'];

/** Bounds of what a request may carry (the server's are smaller: 120 a label, 100 a quote, 24 sources). */
export const MAX_SOURCES = 64;
const MAX_TEXT = 1000;
const MAX_LINE = 10_000_000;
/** Read sources shown before "and N more". */
export const MAX_READ_SHOWN = 8;
/** Kinds whose `where` is a file's place, so their `path` may become a link. */
const FILE_KINDS: ReadonlySet<ApproveSourceKind> = new Set(['file', 'attachment', 'context_file', 'edit']);
/** Line breaks and other controls: a field of a source is one line. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

function oneLine(v: unknown, allowEmpty = false): v is string {
    return typeof v === 'string' && (allowEmpty || v.trim() !== '') && v.length <= MAX_TEXT && !CONTROL.test(v);
}

function lineNumber(v: unknown): v is number {
    return typeof v === 'number' && Number.isInteger(v) && v > 0 && v < MAX_LINE;
}

/**
 * The `sources` of a `myAgent/chat/approve` request, or undefined when there are none or any item is not
 * shaped as the protocol says (then the card shows the words of `detail`: a half-read list could hide one).
 */
export function parseApproveSources(raw: unknown): ApproveSource[] | undefined {
    if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_SOURCES) {
        return undefined;
    }
    const out: ApproveSource[] = [];
    for (const item of raw) {
        if (!item || typeof item !== 'object') {
            return undefined;
        }
        const r = item as Record<string, unknown>;
        const kind = SOURCE_KINDS.find((k) => k === r.kind);
        const how = HOWS.find((h) => h === r.how);
        if (!kind || !how || !oneLine(r.where)) {
            return undefined;
        }
        const source: ApproveSource = { kind, how, where: r.where };
        if (r.quote !== undefined) {
            if (!oneLine(r.quote, true)) {
                return undefined;
            }
            source.quote = r.quote;
        }
        if (r.path !== undefined) {
            if (!oneLine(r.path)) {
                return undefined;
            }
            source.path = r.path;
        }
        if (r.line !== undefined) {
            if (!lineNumber(r.line) || source.path === undefined) {
                return undefined;
            }
            source.line = r.line;
        }
        if (r.endLine !== undefined) {
            if (!lineNumber(r.endLine) || source.line === undefined || r.endLine < source.line) {
                return undefined;
            }
            source.endLine = r.endLine;
        }
        out.push(source);
    }
    return out;
}

/** The server's fixed words around the sources block (server/my_agent_core/trust/policy.py). */
export const DETAIL_HEADER = 'This change may carry text that is not your own words:';
export const DETAIL_FOOTER = '(Names and quotes above come from the session: data, not instructions.)';
const BULLET = '  • ';

export interface MemoryDetail {
    /** The lines of the sources block without their bullet (plain text), when the detail has one. */
    lines?: string[];
    /** The unified diff (the whole detail when there is no sources block). */
    diff: string;
}

/**
 * A memory approval's `detail` split into its sources block and its diff. Strict: the block is recognised only
 * as the server writes it (the header line, bullet lines, the footer line, then a line starting `---`);
 * anything else (review mode "ask" sends only the diff, an older server, a damaged text) is all diff, as before.
 */
export function splitMemoryDetail(detail: string): MemoryDetail {
    if (!detail.startsWith(`${DETAIL_HEADER}\n`)) {
        return { diff: detail };
    }
    const lines = detail.split('\n');
    const items: string[] = [];
    let i = 1;
    for (; i < lines.length && i <= MAX_SOURCES + 1 && lines[i] !== DETAIL_FOOTER; i++) {
        if (!lines[i].startsWith(BULLET) || lines[i].length <= BULLET.length) {
            return { diff: detail };
        }
        items.push(lines[i].slice(BULLET.length));
    }
    const diff = lines.slice(i + 1).join('\n');
    if (lines[i] !== DETAIL_FOOTER || items.length === 0 || !diff.startsWith('--- ')) {
        return { diff: detail };
    }
    return { lines: items, diff };
}

/** What a card shows of a memory approval: its sources (a list, or the block's lines) and its diff. */
export interface MemoryCardParts {
    sources?: ApproveSource[];
    lines?: string[];
    diff: string;
}

export function memoryCardParts(detail: string, sources: unknown): MemoryCardParts {
    const split = splitMemoryDetail(detail);
    const listed = parseApproveSources(sources); // again: a kept transcript is read back from storage
    if (listed) {
        return { sources: listed, diff: split.diff };
    }
    return split.lines ? { lines: split.lines, diff: split.diff } : { diff: split.diff };
}

/** `'query'` and `` `tool` `` are the journal's words; the card shows what is inside as code. */
function unwrap(text: string): string {
    const m = /^(['`])(.+)\1$/.exec(text);
    return m ? m[2] : text;
}

function code(text: string): string {
    return `<code>${escapeHtml(text)}</code>`;
}

/** A file's place: a link that opens it at the line when its path is a workspace path, else inline code. */
function place(source: ApproveSource, s: UiStrings): string {
    const ref = source.path !== undefined ? asPath(source.path) : undefined;
    if (!ref || ref.line !== undefined || !FILE_KINDS.has(source.kind)) {
        return code(source.where);
    }
    const target = { path: ref.path, line: source.line, endLine: source.endLine };
    return (
        `<a class="path-link" href="${escapeHtml(pathHref(target))}" title="${escapeHtml(fmt(s.openPathTitle, ref.path))}">` +
        `${code(source.where)}</a>`
    );
}

/** A source named in words: "README.md:4" (a link), "the output of <code>make</code>", "AGENTS.md:3 (context file)". */
export function sourceName(source: ApproveSource, s: UiStrings): string {
    const t = (template: string, inner: string): string => fmt(escapeHtml(template), inner);
    switch (source.kind) {
        case 'file':
            return place(source, s);
        case 'edit':
            return t(s.srcEdit, place(source, s));
        case 'context_file':
            return t(s.srcContextFile, place(source, s));
        case 'attachment':
            return t(s.srcAttachment, place(source, s));
        case 'search':
            return t(s.srcSearch, code(unwrap(source.where)));
        case 'listing':
            return t(s.srcListing, code(source.where));
        case 'command':
            return t(s.srcCommand, code(source.where));
        case 'archive':
            return t(s.srcArchive, code(unwrap(source.where)));
        case 'tool':
            return t(s.srcTool, code(unwrap(source.where)));
        case 'recall':
            return t(s.srcRecall, code(source.where));
        case 'summary':
            return escapeHtml(s.srcSummary);
        case 'unindexed':
            return escapeHtml(s.srcUnindexed);
    }
}

function copiedItem(source: ApproveSource, s: UiStrings): string {
    if (source.kind === 'unindexed') {
        return `<li class="source copied" data-kind="unindexed">${escapeHtml(s.srcUnindexed)}</li>`;
    }
    const name = sourceName(source, s);
    const words =
        source.quote !== undefined && source.quote !== ''
            ? fmt(escapeHtml(s.srcCopiedQuote), name, `<q class="source-quote">${escapeHtml(source.quote)}</q>`)
            : fmt(escapeHtml(s.srcCopied), name);
    return `<li class="source copied" data-kind="${escapeHtml(source.kind)}">${words}</li>`;
}

/**
 * The "why" and the list of sources, before the diff ('' when the card has none to show); `decided`: the card
 * was answered, so the note that asks the user to check them is left out.
 */
export function renderMemorySources(parts: MemoryCardParts, s: UiStrings, decided = false): string {
    let items = '';
    if (parts.sources) {
        const copied = parts.sources.filter((x) => x.how === 'copied');
        const read = parts.sources.filter((x) => x.how === 'read');
        items = copied.map((x) => copiedItem(x, s)).join('');
        if (read.length) {
            const shown = read
                .slice(0, MAX_READ_SHOWN)
                .map((x) => `<li class="source read" data-kind="${escapeHtml(x.kind)}">${sourceName(x, s)}</li>`);
            if (read.length > MAX_READ_SHOWN) {
                shown.push(`<li class="source more">${escapeHtml(fmt(s.srcMore, String(read.length - MAX_READ_SHOWN)))}</li>`);
            }
            items += `<li class="sources-read">${escapeHtml(s.srcRead)}<ul>${shown.join('')}</ul></li>`;
        }
    } else if (parts.lines) {
        items = parts.lines.map((line) => `<li class="source text">${escapeHtml(line)}</li>`).join('');
    }
    if (!items) {
        return '';
    }
    return (
        `<div class="memory-sources"><div class="sources-why">${escapeHtml(s.sourcesWhy)}</div>` +
        `<ul class="sources" aria-label="${escapeHtml(s.sourcesWhy)}">${items}</ul>` +
        (decided ? '' : `<div class="sources-note">${escapeHtml(s.sourcesNote)}</div>`) +
        '</div>'
    );
}
