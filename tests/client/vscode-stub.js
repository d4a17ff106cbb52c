'use strict';
// A small stand-in for the `vscode` module, enough for the client's pure logic to run under node:test.
// Tests drive it through the `__test` helpers (settings, folders, trust, recorded messages).
const path = require('path');

class EventEmitter {
    constructor() {
        this.listeners = new Set();
        this.event = (listener) => {
            this.listeners.add(listener);
            return { dispose: () => this.listeners.delete(listener) };
        };
    }
    fire(value) {
        for (const l of [...this.listeners]) {
            l(value);
        }
    }
    dispose() {
        this.listeners.clear();
    }
}

class Uri {
    constructor(scheme, p, query = '') {
        this.scheme = scheme;
        this.path = p;
        this.query = query;
        this.fsPath = scheme === 'file' ? decodeURIComponent(p) : p;
    }
    static file(p) {
        return new Uri('file', path.resolve(p));
    }
    static parse(s) {
        const m = /^([a-z][a-z0-9+.-]*):(?:\/\/[^/]*)?([^?#]*)/i.exec(s);
        if (!m) {
            throw new Error(`bad uri ${s}`);
        }
        return new Uri(m[1], decodeURIComponent(m[2]));
    }
    static from(c) {
        return new Uri(c.scheme, c.path ?? '', c.query ?? '');
    }
    static joinPath(base, ...parts) {
        return new Uri(base.scheme, path.posix.join(base.path, ...parts));
    }
    with(c) {
        return new Uri(c.scheme ?? this.scheme, c.path ?? this.path, c.query ?? this.query);
    }
    toString() {
        const p = this.path.split('/').map(encodeURIComponent).join('/');
        return this.scheme === 'file' ? `file://${p}` : `${this.scheme}:${p}`;
    }
}

class Position {
    constructor(line, character) {
        this.line = line;
        this.character = character;
    }
}

/** Both of VS Code's forms: `new Range(start, end)` and `new Range(startLine, startChar, endLine, endChar)`. */
class Range {
    constructor(a, b, c, d) {
        if (a instanceof Position || (a && typeof a === 'object')) {
            this.start = a;
            this.end = b;
        } else {
            this.start = new Position(a, b);
            this.end = new Position(c, d);
        }
    }
}

/** A diff editor's tab input (window.tabGroups). */
class TabInputTextDiff {
    constructor(original, modified) {
        this.original = original;
        this.modified = modified;
    }
}

class ThemeIcon {
    constructor(id, color) {
        this.id = id;
        this.color = color;
    }
}
ThemeIcon.Folder = new ThemeIcon('folder');
ThemeIcon.File = new ThemeIcon('file');

class ThemeColor {
    constructor(id) {
        this.id = id;
    }
}

const TreeItemCollapsibleState = { None: 0, Collapsed: 1, Expanded: 2 };

class TreeItem {
    constructor(label, collapsibleState = TreeItemCollapsibleState.None) {
        this.label = label;
        this.collapsibleState = collapsibleState;
    }
}

class MarkdownString {
    constructor(value = '') {
        this.value = value;
    }
}

class LanguageModelTextPart {
    constructor(value) {
        this.value = value;
    }
}

class LanguageModelToolResult {
    constructor(content) {
        this.content = content;
    }
}

class CancellationError extends Error {
    constructor() {
        super('Canceled');
        this.name = 'Canceled';
    }
}

class CancellationTokenSource {
    constructor() {
        const emitter = new EventEmitter();
        this._emitter = emitter;
        this.token = { isCancellationRequested: false, onCancellationRequested: emitter.event };
    }
    cancel() {
        if (!this.token.isCancellationRequested) {
            this.token.isCancellationRequested = true;
            this._emitter.fire();
        }
    }
    dispose() {
        this._emitter.dispose();
    }
}

class Disposable {
    constructor(fn) {
        this.fn = fn;
    }
    dispose() {
        this.fn?.();
    }
}

function format(message, args) {
    return message.replace(/\{(\d+)\}/g, (m, i) => (args[Number(i)] === undefined ? m : String(args[Number(i)])));
}

// ---- test-controlled state ----------------------------------------------------------------------------------
const state = {
    config: {},
    globalConfig: {},
    folders: undefined,
    trusted: true,
    messages: [],
    activeUri: undefined,
    /** {uri, selections?} or undefined: the active text editor. */
    activeEditor: undefined,
    /** Answers the next showWarningMessage / showInformationMessage / showErrorMessage calls return, in order. */
    answers: [],
    commands: [],
    /** fsPaths that workspace.fs.stat finds. */
    existing: new Set(),
    textDocuments: [],
    /** Answers of showQuickPick: each a function (items) => the picked item (or undefined). */
    picks: [],
    /** Answers of showInputBox, in order. */
    inputs: [],
    /** What showOpenDialog returns. */
    openDialog: undefined,
    /** What workspace.findFiles returns. */
    found: [],
    /** Documents opened (workspace.openTextDocument) and shown (window.showTextDocument). */
    opened: [],
    shownDocs: [],
    /** Tools registered with vscode.lm.registerTool, by name. */
    tools: new Map(),
    /** Settings written with WorkspaceConfiguration.update: {key, value, target}. */
    updates: [],
    /** Extra command ids commands.getCommands lists (e.g. ones a newer VS Code has). */
    knownCommands: [],
    /** What executeCommand(id) does for a command id (a function of its arguments). */
    commandHandlers: {},
    /** Workspace edits applied with workspace.applyEdit. */
    appliedEdits: [],
    /** Context keys set with executeCommand('setContext', key, value). */
    context: {},
    /** Lines of the documents openTextDocument returns, by fsPath (default: one empty line). */
    docLines: {},
    /** Editor tabs of window.tabGroups (one group): each `{input: {uri} | {original, modified}}` or a
     * TabInputTextDiff; undefined: an editor without tabGroups. And the tabs closed through it. */
    tabs: [],
    closedTabs: [],
};

const docEvents = { open: new EventEmitter(), change: new EventEmitter(), close: new EventEmitter(), save: new EventEmitter() };

const log = {
    lines: [],
    info: (m) => log.lines.push(['info', m]),
    warn: (m) => log.lines.push(['warn', m]),
    error: (m) => log.lines.push(['error', m]),
    debug: () => undefined,
    trace: () => undefined,
    appendLine: (m) => log.lines.push(['line', m]),
    show: () => undefined,
    dispose: () => undefined,
};

function configuration(section) {
    const full = (key) => (section ? `${section}.${key}` : key);
    return {
        get: (key, dflt) => (full(key) in state.config ? state.config[full(key)] : dflt),
        has: (key) => full(key) in state.config,
        inspect: (key) => ({
            key: full(key),
            globalValue: state.globalConfig[full(key)],
            workspaceValue: state.config[full(key)],
            defaultValue: undefined,
        }),
        update: async (key, value, target) => {
            state.updates.push({ key: full(key), value, target });
            if (target === 1) {
                state.globalConfig[full(key)] = value;
            }
        },
    };
}

class WorkspaceEdit {
    constructor() {
        this.edits = [];
    }
    replace(uri, range, newText) {
        this.edits.push({ uri, range, newText });
    }
}

/** A text document held in memory: offsets as positions (line 0), edits applied by workspace.applyEdit. */
function memoryDocument(uri, text, over = {}) {
    const doc = {
        uri,
        text,
        isDirty: false,
        isClosed: false,
        version: 1,
        languageId: 'json',
        saved: 0,
        getText: () => doc.text,
        positionAt: (offset) => new Position(0, offset),
        save: async () => {
            doc.saved++;
            doc.isDirty = false;
            return true;
        },
        ...over,
    };
    return doc;
}

const message = (kind) => async (text, ...rest) => {
    state.messages.push({ kind, text, rest });
    return state.answers.length ? state.answers.shift() : undefined;
};

function relative(uri) {
    const folder = (state.folders ?? []).find((f) => uri.fsPath.startsWith(f.uri.fsPath + path.sep));
    return folder ? path.relative(folder.uri.fsPath, uri.fsPath).split(path.sep).join('/') : uri.fsPath;
}

const stub = {
    EventEmitter,
    Uri,
    ThemeIcon,
    ThemeColor,
    TreeItem,
    TreeItemCollapsibleState,
    MarkdownString,
    CancellationError,
    Disposable,
    CancellationTokenSource,
    Position,
    Range,
    WorkspaceEdit,
    ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
    TabInputTextDiff,
    FileType: { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    ViewColumn: { Active: -1, Beside: -2, One: 1 },
    l10n: {
        t: (msg, ...args) => {
            if (typeof msg === 'object') {
                return format(msg.message, msg.args ?? []);
            }
            if (args.length === 1 && args[0] && typeof args[0] === 'object' && !Array.isArray(args[0])) {
                return msg.replace(/\{(\w+)\}/g, (m, k) => (k in args[0] ? String(args[0][k]) : m));
            }
            return format(msg, args);
        },
        bundle: undefined,
        uri: undefined,
    },
    env: { language: 'en', clipboard: { writeText: async () => undefined } },
    workspace: {
        getConfiguration: (section) => configuration(section),
        get workspaceFolders() {
            return state.folders;
        },
        get isTrusted() {
            return state.trusted;
        },
        getWorkspaceFolder: (uri) => (state.folders ?? []).find((f) => uri.fsPath.startsWith(f.uri.fsPath)),
        asRelativePath: (uriOrPath) => relative(typeof uriOrPath === 'string' ? Uri.file(uriOrPath) : uriOrPath),
        get textDocuments() {
            return state.textDocuments;
        },
        onDidOpenTextDocument: docEvents.open.event,
        onDidChangeTextDocument: docEvents.change.event,
        onDidCloseTextDocument: docEvents.close.event,
        onDidSaveTextDocument: docEvents.save.event,
        fs: {
            stat: async (uri) => {
                if (!state.existing.has(uri.fsPath)) {
                    throw new Error(`ENOENT ${uri.fsPath}`);
                }
                return { type: 1, size: 0 };
            },
        },
        onDidChangeConfiguration: () => new Disposable(),
        onDidChangeWorkspaceFolders: () => new Disposable(),
        onDidGrantWorkspaceTrust: () => new Disposable(),
        createFileSystemWatcher: () => ({ dispose: () => undefined }),
        findFiles: async () => state.found,
        applyEdit: async (edit) => {
            for (const e of edit.edits) {
                const doc = state.textDocuments.find((d) => d.uri.toString() === e.uri.toString());
                if (!doc || e.range.start.line !== 0 || e.range.end.line !== 0) {
                    return false;
                }
                doc.text = doc.text.slice(0, e.range.start.character) + e.newText + doc.text.slice(e.range.end.character);
                doc.isDirty = true;
                state.appliedEdits.push(e);
            }
            return true;
        },
        openTextDocument: async (uri) => {
            state.opened.push(uri);
            const lines = state.docLines[uri.fsPath] ?? [''];
            return {
                uri,
                isDirty: false,
                getText: () => lines.join('\n'),
                lineCount: lines.length,
                lineAt: (n) => ({ text: lines[n] ?? '' }),
            };
        },
    },
    window: {
        createOutputChannel: () => log,
        showErrorMessage: message('error'),
        showWarningMessage: message('warning'),
        showInformationMessage: message('info'),
        setStatusBarMessage: (text) => {
            state.messages.push({ kind: 'status', text });
            return new Disposable();
        },
        withProgress: async (_opts, task) => task({ report: () => undefined }, { isCancellationRequested: false }),
        get activeTextEditor() {
            if (state.activeEditor?.document) {
                return { document: state.activeEditor.document, selections: [] };
            }
            if (state.activeEditor) {
                return { document: { uri: state.activeEditor.uri }, selections: state.activeEditor.selections ?? [] };
            }
            return state.activeUri ? { document: { uri: state.activeUri }, selections: [] } : undefined;
        },
        visibleTextEditors: [],
        get tabGroups() {
            if (!state.tabs) {
                return undefined;
            }
            return {
                all: [{ tabs: state.tabs }],
                close: async (tabs) => {
                    const list = Array.isArray(tabs) ? tabs : [tabs];
                    state.closedTabs.push(...list);
                    state.tabs = state.tabs.filter((t) => !list.includes(t));
                    return true;
                },
            };
        },
        onDidChangeActiveTextEditor: () => new Disposable(),
        createStatusBarItem: () => ({ show() {}, hide() {}, dispose() {} }),
        showQuickPick: async (items, options) => {
            const list = await items;
            state.messages.push({ kind: 'quickPick', items: list, options });
            const answer = state.picks.shift();
            return typeof answer === 'function' ? answer(list) : answer;
        },
        showInputBox: async (options) => {
            state.messages.push({ kind: 'inputBox', options });
            return state.inputs.shift();
        },
        showOpenDialog: async () => state.openDialog,
        showTextDocument: async (docOrUri, options) => {
            state.shownDocs.push({ doc: docOrUri, options });
            return { document: docOrUri };
        },
    },
    lm: {
        registerTool: (name, tool) => {
            state.tools.set(name, tool);
            return new Disposable(() => state.tools.delete(name));
        },
    },
    languages: {
        setTextDocumentLanguage: async (doc) => doc,
    },
    LanguageModelTextPart,
    LanguageModelToolResult,
    commands: {
        registerCommand: () => new Disposable(),
        executeCommand: async (id, ...args) => {
            if (id === 'setContext') {
                state.context[args[0]] = args[1];
                return undefined;
            }
            state.commands.push({ id, args });
            return state.commandHandlers[id]?.(...args);
        },
        getCommands: async () => [...state.knownCommands],
    },
    __test: {
        state,
        log,
        reset() {
            state.config = {};
            state.globalConfig = {};
            state.folders = undefined;
            state.trusted = true;
            state.messages = [];
            state.activeUri = undefined;
            state.activeEditor = undefined;
            state.answers = [];
            state.commands = [];
            state.existing = new Set();
            state.textDocuments = [];
            state.picks = [];
            state.inputs = [];
            state.openDialog = undefined;
            state.found = [];
            state.opened = [];
            state.shownDocs = [];
            state.tools = new Map();
            state.updates = [];
            state.knownCommands = [];
            state.commandHandlers = {};
            state.appliedEdits = [];
            state.context = {};
            state.docLines = {};
            state.tabs = [];
            state.closedTabs = [];
            log.lines = [];
        },
        docEvents,
        /** A Memento backed by a Map (context.workspaceState). */
        memento(initial = {}) {
            const values = new Map(Object.entries(initial));
            return {
                values,
                get: (key, dflt) => (values.has(key) ? values.get(key) : dflt),
                update: async (key, value) => {
                    if (value === undefined) {
                        values.delete(key);
                    } else {
                        values.set(key, value);
                    }
                },
                keys: () => [...values.keys()],
            };
        },
        memoryDocument,
        folder(fsPath, name, index = 0) {
            return { uri: Uri.file(fsPath), name: name ?? path.basename(fsPath), index };
        },
    },
};

// Anything the client (or vscode-languageclient at load time) touches that is not modelled above is a plain
// class, so `class X extends vscode.Y {}` and enum lookups do not crash a test.
module.exports = new Proxy(stub, {
    get(target, prop) {
        if (prop in target) {
            return target[prop];
        }
        if (typeof prop === 'symbol' || prop === 'then' || prop === '__esModule') {
            return undefined;
        }
        const Placeholder = class {};
        target[prop] = Placeholder;
        return Placeholder;
    },
});
