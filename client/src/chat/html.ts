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
    <button id="history" type="button" class="secondary" aria-label="${esc(s.historyAria)}" title="${esc(s.historyAria)}" aria-expanded="false" aria-controls="history-panel">${esc(s.history)}</button>
    <button id="compact" type="button" class="secondary" aria-label="${esc(s.compactAria)}" title="${esc(s.compactAria)}" disabled>${esc(s.compact)}</button>
    <button id="snapshot" type="button" class="secondary" aria-label="${esc(s.showSnapshotAria)}" title="${esc(s.showSnapshotAria)}">${esc(s.showSnapshot)}</button>
    <button id="new-chat" type="button" class="secondary" aria-label="${esc(s.newChatAria)}" title="${esc(s.newChatAria)}">${esc(s.newChat)}</button>
  </div>
</header>
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

