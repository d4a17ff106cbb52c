import * as crypto from 'crypto';
import * as vscode from 'vscode';
import type { UiStrings } from '../webview/render';

/**
 * The chat webview's HTML shell: a strict CSP (a fresh nonce per render for the one bundled script, styles
 * only from the extension, nothing remote), escaped localized labels, and the static controls the script fills.
 */

export function nonce(): string {
    return crypto.randomBytes(16).toString('base64');
}

function esc(t: string): string {
    return t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
}

/** 16 px icons for the one-line header (drawn here: the webview loads nothing remote, no icon font). */
const svg = (d: string): string =>
    `<svg class="glyph" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true" focusable="false"><path fill="currentColor" d="${d}"/></svg>`;
const ICONS = {
    history: svg('M8 1.5a6.5 6.5 0 1 0 0 13 6.5 6.5 0 0 0 0-13Zm0 1a5.5 5.5 0 1 1 0 11 5.5 5.5 0 0 1 0-11ZM7.5 4h1v4.2l2.6 1.5-.5.9-3.1-1.8Z'),
    compact: svg('M8 7.3 4.6 3.9l.7-.7L8 5.9l2.7-2.7.7.7Zm0 1.4 3.4 3.4-.7.7L8 10.1l-2.7 2.7-.7-.7ZM2 7.5h12v1H2Z'),
    snapshot: svg(
        'M5.5 3 4.6 4.5H2.5A1.5 1.5 0 0 0 1 6v6a1.5 1.5 0 0 0 1.5 1.5h11A1.5 1.5 0 0 0 15 12V6a1.5 1.5 0 0 0-1.5-1.5h-2.1L10.5 3Zm.6 1h3.8l.9 1.5h2.7a.5.5 0 0 1 .5.5v6a.5.5 0 0 1-.5.5h-11a.5.5 0 0 1-.5-.5V6a.5.5 0 0 1 .5-.5h2.7ZM8 6.5a2.5 2.5 0 1 0 0 5 2.5 2.5 0 0 0 0-5Zm0 1a1.5 1.5 0 1 1 0 3 1.5 1.5 0 0 1 0-3Z',
    ),
    newChat: svg('M7.5 2h1v5.5H14v1H8.5V14h-1V8.5H2v-1h5.5Z'),
};

export function chatHtml(webview: vscode.Webview, extensionUri: vscode.Uri, s: UiStrings, n: string = nonce()): string {
    const script = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'client', 'dist', 'chat.js'));
    const css = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'client', 'media', 'chat.css'));
    const csp = `default-src 'none'; script-src 'nonce-${n}'; style-src ${webview.cspSource};`;
    return `<!DOCTYPE html>
<html lang="${esc(vscode.env.language)}">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${css.toString()}">
<title>${esc(vscode.l10n.t('My Agent Chat'))}</title>
</head>
<body>
<header class="header">
  <div id="session" class="session" aria-live="polite"></div>
  <div class="actions">
    <button id="history" type="button" class="icon" aria-label="${esc(s.historyAria)}" title="${esc(s.historyAria)}" aria-expanded="false" aria-controls="history-panel">${ICONS.history}<span class="label">${esc(s.history)}</span></button>
    <button id="compact" type="button" class="icon" aria-label="${esc(s.compactAria)}" title="${esc(s.compactAria)}" disabled>${ICONS.compact}<span class="label">${esc(s.compact)}</span></button>
    <button id="snapshot" type="button" class="icon" aria-label="${esc(s.showSnapshotAria)}" title="${esc(s.showSnapshotAria)}">${ICONS.snapshot}<span class="label">${esc(s.showSnapshot)}</span></button>
    <button id="new-chat" type="button" class="icon" aria-label="${esc(s.newChatAria)}" title="${esc(s.newChatAria)}">${ICONS.newChat}<span class="label">${esc(s.newChat)}</span></button>
  </div>
</header>
<div id="notice" class="notice-line"></div>
<div id="banner"></div>
<section id="history-panel" class="history" aria-labelledby="history-title" hidden></section>
<main id="transcript" class="transcript" role="log" aria-live="polite" aria-label="${esc(s.transcriptAria)}" tabindex="0">
  <p class="empty">${esc(s.emptyTranscript)}</p>
</main>
<div id="pending" class="pending-bar" role="status" aria-live="assertive" hidden></div>
<form id="composer" class="composer">
  <div id="chips" class="chips-row"></div>
  <textarea id="input" rows="3" aria-label="${esc(s.inputAria)}" placeholder="${esc(s.inputPlaceholder)}"></textarea>
  <div class="buttons">
    <button id="attach" type="button" class="secondary" aria-label="${esc(s.attachAria)}" title="${esc(s.attachAria)}">${esc(s.attach)}</button>
    <span class="spacer"></span>
    <button id="stop" type="button" class="secondary" aria-label="${esc(s.stopAria)}" title="${esc(s.stopAria)}" disabled>${esc(s.stop)}</button>
    <button id="send" type="submit" aria-label="${esc(s.sendAria)}" title="${esc(s.sendAria)}">${esc(s.send)}</button>
  </div>
</form>
<script nonce="${n}" src="${script.toString()}"></script>
</body>
</html>`;
}

