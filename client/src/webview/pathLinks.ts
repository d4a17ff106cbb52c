/**
 * Workspace paths in the agent's Markdown become links that open the file in the editor: `src/app.py`,
 * `MEMORY.md`, `src/app.py:12` in inline code, and src/app.py (with a folder) in plain text. A bare name in
 * plain text ("Node.js", "MEMORY.md") is left as text, and nothing without a scheme becomes a web link
 * (markdown-it's fuzzy links made http://MEMORY.md). The link is a relative href (`src/app.py#L12`) that the
 * webview hands to the extension host, which opens it only inside a workspace folder. Pure.
 */
import type MarkdownIt from 'markdown-it';

type CoreRule = Parameters<MarkdownIt['core']['ruler']['push']>[1];
type StateCore = Parameters<CoreRule>[0];
type Token = ReturnType<MarkdownIt['parse']>[number];

export interface PathRef {
    path: string;
    line?: number;
    endLine?: number;
}

const MAX_PATH = 400;

/** File types worth a link; a name with a folder may have any short extension. */
const KNOWN_EXT =
    /\.(md|markdown|py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonc|toml|ya?ml|txt|rs|go|java|kts?|c|h|cc|cpp|hpp|cs|rb|php|sh|bash|zsh|css|scss|less|html?|vue|svelte|sql|lock|cfg|ini|xml|gradle|swift|ipynb|rst|csv|env|mk|cmake)$/i;
const KNOWN_NAMES = new Set(['Makefile', 'Dockerfile', 'Justfile', 'Procfile', 'LICENSE', 'Gemfile', 'Rakefile']);
const SEGMENTS = /^(?:\.\/)?(?:[\w.@+-]+\/)*[\w.@+-]+$/;
const WITH_LINE = /^(.+?)(?::(\d+)(?:[-:](\d+))?)?$/;
const SCHEME = /^[a-z][\w+.-]*:\/\//i;

/** A path-like text (`src/app.py`, `app.py:12`, `src/app.py:3-9`), or undefined. */
export function asPath(text: string, bareNames = true): PathRef | undefined {
    const trimmed = text.trim();
    if (trimmed === '' || trimmed.length > MAX_PATH || SCHEME.test(trimmed) || /\s/.test(trimmed)) {
        return undefined;
    }
    const m = WITH_LINE.exec(trimmed);
    if (!m) {
        return undefined;
    }
    const path = m[1];
    // Nothing that climbs out of the folder (the host refuses it anyway): no `..` segment at all.
    if (!SEGMENTS.test(path) || path.includes('//') || path.split('/').includes('..')) {
        return undefined;
    }
    const base = path.split('/').pop() ?? '';
    const folder = path.includes('/');
    const fileLike = KNOWN_EXT.test(base) || KNOWN_NAMES.has(base) || (folder && /[^./]\.[A-Za-z][\w]{0,9}$/.test(base));
    if (!fileLike || (!folder && !bareNames) || /^\d/.test(base) && !folder) {
        return undefined;
    }
    const ref: PathRef = { path };
    if (m[2]) {
        ref.line = Number(m[2]);
        if (m[3]) {
            ref.endLine = Number(m[3]);
        }
    }
    return ref;
}

/** The href of a path link: relative, with the line as a fragment (`src/app.py#L12`). */
export function pathHref(ref: PathRef): string {
    const encoded = ref.path.split('/').map(encodeURIComponent).join('/');
    if (ref.line === undefined) {
        return encoded;
    }
    return `${encoded}#L${ref.line}${ref.endLine !== undefined ? `-L${ref.endLine}` : ''}`;
}

/** A clicked link's href back to a path, or undefined for web links, mail, fragments and the like. */
export function pathFromHref(href: string): PathRef | undefined {
    if (href === '' || href.startsWith('#') || /^[a-z][\w+.-]*:/i.test(href) || href.startsWith('//')) {
        return undefined;
    }
    const [rawPath, fragment = ''] = href.split('#', 2);
    let path: string;
    try {
        path = decodeURIComponent(rawPath);
    } catch {
        return undefined;
    }
    const byColon = asPath(path);
    if (!byColon && !path) {
        return undefined;
    }
    const ref: PathRef = byColon ?? { path };
    const lines = /^L(\d+)(?:-L?(\d+))?$/.exec(fragment);
    if (lines) {
        ref.line = Number(lines[1]);
        if (lines[2]) {
            ref.endLine = Number(lines[2]);
        }
    }
    return ref.path && !/[\0\n]/.test(ref.path) && ref.path.length <= MAX_PATH ? ref : undefined;
}

// Plain-text candidates: a folder, then a name with an extension, optionally :line or :line-line.
const IN_TEXT = /(?<![\w/.@+-])((?:\.\/)?(?:[\w.@+-]+\/)+[\w@+-][\w.@+-]*\.[A-Za-z]\w{0,9}(?::\d+(?:-\d+)?)?)(?![\w/@+-])/g;

function linkTokens(state: StateCore, ref: PathRef, inner: Token[], title: string): Token[] {
    const open = new state.Token('link_open', 'a', 1);
    open.attrs = [
        ['href', pathHref(ref)],
        ['class', 'path-link'],
        ['title', title],
    ];
    const close = new state.Token('link_close', 'a', -1);
    return [open, ...inner, close];
}

function textToken(state: StateCore, content: string): Token {
    const t = new state.Token('text', '', 0);
    t.content = content;
    return t;
}

/** The markdown-it plugin: links workspace paths in inline code (bare names too) and in text (with a folder). */
export function workspacePaths(md: MarkdownIt, title: (path: string) => string = (p) => p): void {
    md.core.ruler.push('workspace_paths', (state) => {
        for (const block of state.tokens) {
            if (block.type !== 'inline' || !block.children) {
                continue;
            }
            const out: Token[] = [];
            let inLink = 0;
            for (const token of block.children) {
                if (token.type === 'link_open') {
                    inLink += 1;
                } else if (token.type === 'link_close') {
                    inLink = Math.max(0, inLink - 1);
                }
                if (inLink === 0 && token.type === 'code_inline') {
                    const ref = asPath(token.content);
                    if (ref) {
                        out.push(...linkTokens(state, ref, [token], title(ref.path)));
                        continue;
                    }
                }
                if (inLink === 0 && token.type === 'text' && token.content.includes('/')) {
                    let last = 0;
                    for (const m of token.content.matchAll(IN_TEXT)) {
                        const ref = asPath(m[1], false);
                        if (!ref || m.index === undefined) {
                            continue;
                        }
                        if (m.index > last) {
                            out.push(textToken(state, token.content.slice(last, m.index)));
                        }
                        out.push(...linkTokens(state, ref, [textToken(state, m[1])], title(ref.path)));
                        last = m.index + m[1].length;
                    }
                    if (last > 0) {
                        if (last < token.content.length) {
                            out.push(textToken(state, token.content.slice(last)));
                        }
                        continue;
                    }
                }
                out.push(token);
            }
            block.children = out;
        }
    });
}
