/**
 * The chat's chrome as HTML strings: the session line with the cache meter, the editor-context chips
 * waiting for the next message, the past-sessions panel, and the "approvals waiting" bar. Pure, escaped.
 */
import {
    cacheHitText,
    ChatState,
    ContextChip,
    HistoryPanel,
    meterFigures,
    pendingApprovals,
    SetupInfo,
    tokenCount,
} from '../chatModel';
import type { CacheDrop } from '../protocol';
import { escapeHtml, fmt, inlineCode, UiStrings } from './strings';

export function dropReasonText(drop: CacheDrop, s: UiStrings): string {
    switch (drop.reason) {
        case 'compaction':
            return s.dropCompaction;
        case 'resume':
            return s.dropResume;
        case 'model_change':
            return s.dropModelChange;
        case 'expired':
            return s.dropExpired;
    }
    return s.dropUnknown;
}

export function cacheDropText(drop: CacheDrop, s: UiStrings): string {
    return fmt(s.cacheDrop, tokenCount(drop.expected), tokenCount(drop.got), dropReasonText(drop, s));
}

/** The cache meter: hit rate and tokens read from cache, "n/a" when the provider reports nothing. */
export function renderMeter(state: ChatState, s: UiStrings): string {
    const figures = meterFigures(state.meter);
    const rate = cacheHitText(figures);
    if (!rate) {
        return '';
    }
    const tip: string[] = [];
    if (figures.cachedTokens === null) {
        tip.push(s.cacheNotReported);
    } else {
        tip.push(`${figures.cachedTokens}/${figures.promptTokens}`);
    }
    if (state.meter.lastDrop) {
        tip.push(cacheDropText(state.meter.lastDrop, s));
    }
    const tokens =
        figures.cachedTokens === null
            ? ''
            : ` <span class="cache-tokens">${escapeHtml(fmt(s.cacheTokens, tokenCount(figures.cachedTokens)))}</span>`;
    const cls = figures.cachedTokens === null ? 'cache na' : state.meter.lastDrop ? 'cache dropped' : 'cache';
    return (
        `<span class="${cls}" title="${escapeHtml(tip.join(' · '))}">${escapeHtml(fmt(s.cacheHitRate, rate))}${tokens}</span>`
    );
}

/** The session line (one line; it is cut, never wrapped): folder, whether memory is in the prompt (a
 * tooltip says what that means), and the session's cache meter. */
export function renderHeader(state: ChatState, s: UiStrings): string {
    const bits: string[] = [];
    if (state.sessionId) {
        bits.push(`<span class="folder">${escapeHtml(state.folderName ?? '')}</span>`);
        const tip = state.memory ? s.memoryOnTip : s.memoryOffTip;
        bits.push(
            `<span class="badge${state.memory ? '' : ' off'}" title="${escapeHtml(tip)}" tabindex="0" aria-label="${escapeHtml(
                `${state.memory ? s.memoryOn : s.memoryOff}: ${tip}`,
            )}">${escapeHtml(state.memory ? s.memoryOn : s.memoryOff)}</span>`,
        );
        const meter = renderMeter(state, s);
        if (meter) {
            bits.push(meter);
        }
    } else {
        bits.push(`<span class="folder none">${escapeHtml(s.noSession)}</span>`);
    }
    return bits.join(' ');
}

/** The line under the header ("the server restarted", "Reopened your last chat"), or ''. */
export function renderNotice(state: ChatState): string {
    return state.notice ? `<div class="session-notice" role="status">${inlineCode(state.notice)}</div>` : '';
}

/** Restricted Mode: what is off and why, with the way to change it; '' in a trusted workspace. */
export function renderBanner(state: ChatState, s: UiStrings): string {
    if (!state.setup || state.setup.trusted) {
        return '';
    }
    return (
        `<div class="banner restricted" role="note"><span>${escapeHtml(s.restrictedBanner)}</span> ` +
        `<button type="button" class="secondary" data-action="manageTrust" data-key="manageTrust">${escapeHtml(
            s.manageTrust,
        )}</button></div>`
    );
}

function setupRow(label: string, value: string, missing: boolean, button = ''): string {
    return (
        `<div class="setup-row${missing ? ' missing' : ''}"><span class="setup-label">${escapeHtml(label)}</span>` +
        `<span class="setup-value">${value}</span>${button}</div>`
    );
}

function from(source: 'setting' | 'env' | '', variable: string, s: UiStrings): string {
    if (source === 'env') {
        return ` <span class="from">(${escapeHtml(fmt(s.setupFromEnv, variable))})</span>`;
    }
    return source === 'setting' ? ` <span class="from">(${escapeHtml(s.setupFromSetting)})</span>` : '';
}

/** Local OpenAI-compatible servers: name, how to start one, its base URL and a model name. */
const LOCAL_SERVERS: readonly [string, string, string, string | undefined][] = [
    ['Ollama', 'ollama pull llama3.2 && ollama serve', 'http://localhost:11434/v1', 'llama3.2'],
    ['llama.cpp', 'llama-server -m model.gguf --port 8080', 'http://localhost:8080/v1', undefined],
    ['vLLM', 'vllm serve Qwen/Qwen2.5-Coder-7B-Instruct', 'http://localhost:8000/v1', 'Qwen/Qwen2.5-Coder-7B-Instruct'],
];

/** Before the first message with no model: what is set and what is missing, with buttons, and a local option. */
export function renderSetup(setup: SetupInfo, s: UiStrings): string {
    const button = (action: string, label: string): string =>
        ` <button type="button" class="secondary" data-action="${action}" data-key="setup:${action}">${escapeHtml(label)}</button>`;
    const notSet = `<em>${escapeHtml(s.setupNotSet)}</em>`;
    const model = setup.model ? `<code>${escapeHtml(setup.model)}</code>${from(setup.modelFrom, 'MY_AGENT_MODEL', s)}` : notSet;
    const url = setup.baseUrl
        ? `<code>${escapeHtml(setup.baseUrl)}</code>${from(setup.baseUrlFrom, 'OPENAI_BASE_URL', s)}`
        : escapeHtml(s.setupDefaultUrl);
    const key = setup.key === 'secret' ? s.setupKeySecret : setup.key === 'env' ? s.setupKeyEnv : s.setupKeyNone;
    const keyMissing = setup.key === 'none' && !setup.baseUrl; // OpenAI itself needs a key
    const local = LOCAL_SERVERS.map(
        ([name, command, base, modelName]) =>
            `<li>${fmt(
                escapeHtml(s.setupLocalRow),
                escapeHtml(name),
                `<code>${escapeHtml(command)}</code>`,
                `<code>${escapeHtml(base)}</code>`,
                modelName ? `<code>${escapeHtml(modelName)}</code>` : escapeHtml(s.setupLocalModelAny),
            )}</li>`,
    ).join('');
    return (
        `<section class="setup" aria-labelledby="setup-title"><h2 id="setup-title">${escapeHtml(s.setupTitle)}</h2>` +
        `<p>${escapeHtml(s.setupIntro)}</p>` +
        setupRow(s.setupModel, model, !setup.model, button('openSettings', s.actionOpenSettings)) +
        setupRow(s.setupBaseUrl, url, false) +
        setupRow(s.setupKey, escapeHtml(key), keyMissing, button('setApiKey', s.actionSetApiKey)) +
        `<h3>${escapeHtml(s.setupLocalTitle)}</h3><p>${escapeHtml(s.setupLocalIntro)}</p><ul class="local">${local}</ul>` +
        `</section>`
    );
}

/** What an empty transcript shows: the setup state while no model is configured, else the welcome. */
export function renderWelcome(state: ChatState, s: UiStrings): string {
    if (state.setup && !state.setup.model) {
        return renderSetup(state.setup, s);
    }
    const text = state.setup && !state.setup.trusted ? s.emptyRestricted : s.emptyTranscript;
    const ready = state.setup?.model
        ? `<p class="ready">${fmt(
              escapeHtml(s.setupReady),
              `<code>${escapeHtml(state.setup.model)}</code>` + (state.setup.baseUrl ? ` · <code>${escapeHtml(state.setup.baseUrl)}</code>` : ''),
          )}</p>`
        : '';
    return `<p class="empty">${escapeHtml(text)}</p>${ready}`;
}

function chip(c: ContextChip, s: UiStrings, removable: boolean): string {
    const label = escapeHtml(c.label);
    const remove = removable
        ? ` <button type="button" class="chip-remove" data-action="detach" data-chip-id="${escapeHtml(c.id)}" ` +
          `data-key="detach:${escapeHtml(c.id)}" aria-label="${escapeHtml(fmt(s.removeChip, c.label))}">×</button>`
        : '';
    return `<li class="chip" title="${escapeHtml(c.uri)}"><span class="chip-label">${label}</span>${remove}</li>`;
}

/** The chips waiting for the next message (each removable), or '' when there are none. */
export function renderAttachments(chips: readonly ContextChip[], s: UiStrings): string {
    if (!chips.length) {
        return '';
    }
    return `<ul class="chips" aria-label="${escapeHtml(s.attachments)}">${chips.map((c) => chip(c, s, true)).join('')}</ul>`;
}

/** What a sent message carried, under it in the transcript. */
export function renderSentContext(chips: readonly ContextChip[] | undefined, s: UiStrings): string {
    if (!chips?.length) {
        return '';
    }
    return (
        `<div class="sent-context"><span class="label">${escapeHtml(s.attached)}</span> ` +
        `<ul class="chips">${chips.map((c) => chip(c, s, false)).join('')}</ul></div>`
    );
}

/** The past-sessions panel: one row per session with Reopen (the title) and Delete. */
export function renderHistory(history: HistoryPanel, s: UiStrings): string {
    if (!history.open) {
        return '';
    }
    const head =
        `<div class="history-head"><h2 id="history-title">${escapeHtml(s.historyTitle)}</h2>` +
        `<button type="button" class="secondary" data-action="closeHistory" data-key="closeHistory">${escapeHtml(
            s.historyClose,
        )}</button></div>`;
    let body: string;
    if (history.error) {
        body = `<div class="error" role="alert">${escapeHtml(fmt(s.historyError, history.error))}</div>`;
    } else if (history.loading && !history.rows.length) {
        body = `<p class="empty">${escapeHtml(s.historyLoading)}</p>`;
    } else if (!history.rows.length) {
        body = `<p class="empty">${escapeHtml(s.historyEmpty)}</p>`;
    } else {
        body =
            '<ul class="history-list">' +
            history.rows
                .map((r) => {
                    const id = escapeHtml(r.sessionId);
                    const meta = [r.when, r.folderName, fmt(s.historyMessages, String(r.messages))]
                        .filter((x) => x)
                        .map((x) => escapeHtml(x))
                        .join(' · ');
                    const current = r.current ? ` <span class="badge">${escapeHtml(s.historyCurrent)}</span>` : '';
                    return (
                        `<li class="history-row${r.current ? ' current' : ''}">` +
                        `<button type="button" class="link" data-action="resume" data-session-id="${id}" data-key="resume:${id}" ` +
                        `aria-label="${escapeHtml(fmt(s.historyOpenAria, r.title))}"${r.current ? ' aria-current="true"' : ''}>` +
                        `<span class="history-title">${escapeHtml(r.title)}</span>${current}` +
                        `<span class="history-meta">${meta}</span></button>` +
                        `<button type="button" class="secondary" data-action="deleteSession" data-session-id="${id}" ` +
                        `data-key="deleteSession:${id}" aria-label="${escapeHtml(fmt(s.historyDeleteAria, r.title))}">${escapeHtml(
                            s.historyDelete,
                        )}</button></li>`
                    );
                })
                .join('') +
            '</ul>';
    }
    return head + body;
}

/** "2 approvals are waiting for you [Show]" above the composer, so a card scrolled away is not missed. */
export function renderPendingBar(state: ChatState, s: UiStrings): string {
    const waiting = pendingApprovals(state);
    if (!waiting.length) {
        return '';
    }
    const text = waiting.length === 1 ? s.pendingOne : fmt(s.pendingMany, String(waiting.length));
    return (
        `<span>${escapeHtml(text)}</span> <button type="button" class="secondary" data-action="showPending" ` +
        `data-call-id="${escapeHtml(waiting[0].callId)}" data-key="showPending">${escapeHtml(s.showPending)}</button>`
    );
}
